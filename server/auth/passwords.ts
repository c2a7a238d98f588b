import { hash, type Options, parseOptions, verify } from "@node-rs/argon2";

/**
 * How passwords are hashed: argon2id with 19 MiB of memory, 2 passes and one lane, OWASP's minimum.
 * Pinned here, not left to the library's defaults, so that an upgrade never weakens them silently;
 * a stored hash made with other parameters is replaced at its owner's next sign-in.
 */
export const PASSWORD_HASHING = {
  // Algorithm.Argon2id: the package declares its enum `const`, which isolated modules cannot read.
  algorithm: 2 as NonNullable<Options["algorithm"]>,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const satisfies Options;

/**
 * A password's argon2id hash in PHC form, with the pinned parameters.
 *
 * @example
 * const stored = await hashPassword("correct horse battery staple"); // "$argon2id$v=19$m=19456,t=2,p=1$…"
 */
export const hashPassword = (password: string) => hash(password, PASSWORD_HASHING);

/** Whether `password` is the one `stored` was made from; false for a malformed hash. */
export const verifyPassword = (stored: string, password: string) =>
  verify(stored, password).catch(() => false);

/** Whether `stored` was made with other parameters than the pinned ones (then hash the password again). */
export function needsRehash(stored: string): boolean {
  try {
    const options = parseOptions(stored);
    return (
      options.algorithm !== PASSWORD_HASHING.algorithm ||
      options.memoryCost !== PASSWORD_HASHING.memoryCost ||
      options.timeCost !== PASSWORD_HASHING.timeCost ||
      options.parallelism !== PASSWORD_HASHING.parallelism
    );
  } catch {
    return true;
  }
}
