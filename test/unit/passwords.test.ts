import { hash, parseOptions } from "@node-rs/argon2";
import { describe, expect, it } from "vitest";
import { hashPassword, needsRehash, PASSWORD_HASHING, verifyPassword } from "../../server/auth/passwords.ts";

describe("password hashing", () => {
  it("is argon2id with the pinned parameters, at least OWASP's m = 19456 KiB, t = 2, p = 1", async () => {
    const stored = await hashPassword("correct horse battery staple");
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const options = parseOptions(stored);
    expect(options.memoryCost).toBeGreaterThanOrEqual(19_456);
    expect(options.timeCost).toBeGreaterThanOrEqual(2);
    expect(options).toMatchObject({
      memoryCost: PASSWORD_HASHING.memoryCost,
      timeCost: PASSWORD_HASHING.timeCost,
      parallelism: 1,
    });
    expect(await verifyPassword(stored, "correct horse battery staple")).toBe(true);
    expect(await verifyPassword(stored, "wrong")).toBe(false);
    expect(needsRehash(stored)).toBe(false);
  });

  it("asks for a new hash when a stored one was made otherwise, or cannot be read", async () => {
    expect(needsRehash(await hash("pw", { memoryCost: 4096, timeCost: 3, parallelism: 1 }))).toBe(true);
    expect(needsRehash(await hash("pw", { ...PASSWORD_HASHING, algorithm: 1 as never }))).toBe(true);
    expect(needsRehash("not a hash")).toBe(true);
    expect(await verifyPassword("not a hash", "pw")).toBe(false);
  });
});
