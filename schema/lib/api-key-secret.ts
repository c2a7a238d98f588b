import { createHash, randomBytes } from "node:crypto";

export const KEY_PREFIX = "ktr_live_";
/** Keys a workspace may have live at once (revoked keys do not count; a rotated key counts until its grace ends). */
export const MAX_LIVE_API_KEYS = 100;
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** 43 base62 characters carry 256 bits: as much as 32 random bytes. */
const SECRET_LENGTH = 43;
const DISPLAY_LENGTH = KEY_PREFIX.length + 4;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${SECRET_LENGTH}}$`);

/** Uniform base62 by rejection sampling (248 = 4 × 62, so no character is favoured). */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

export const generateApiKey = () => `${KEY_PREFIX}${randomBase62(SECRET_LENGTH)}`;
export const isApiKeyFormat = (token: string) => KEY_PATTERN.test(token);
export const hashApiKey = (key: string) => createHash("sha256").update(key).digest("hex");
export const displayPrefix = (key: string) => key.slice(0, DISPLAY_LENGTH);
