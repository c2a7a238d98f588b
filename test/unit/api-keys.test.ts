import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
  KEY_PREFIX,
  randomBase62,
} from "../../server/auth/api-keys.ts";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

describe("generateApiKey", () => {
  it("is ktr_live_ followed by 43 base62 characters", () => {
    expect(KEY_PREFIX).toBe("ktr_live_");
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey();
      expect(key).toMatch(/^ktr_live_[0-9A-Za-z]{43}$/);
      expect(key).toHaveLength(9 + 43);
      expect(isApiKeyFormat(key)).toBe(true);
    }
  });

  it("never repeats over many keys", () => {
    const keys = new Set(Array.from({ length: 10_000 }, generateApiKey));
    expect(keys.size).toBe(10_000);
    const secrets = new Set([...keys].map((k) => k.slice(KEY_PREFIX.length, KEY_PREFIX.length + 8)));
    expect(secrets.size).toBeGreaterThan(9_990);
  });
});

describe("hashApiKey", () => {
  it("is the sha256 hex digest of the whole key", () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toBe(createHash("sha256").update(key, "utf8").digest("hex"));
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  it("is deterministic and differs between keys", () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(hashApiKey(a)).toBe(hashApiKey(a));
    expect(hashApiKey(a)).not.toBe(hashApiKey(b));
    expect(hashApiKey(a)).not.toContain(a.slice(KEY_PREFIX.length));
  });
});

describe("displayPrefix", () => {
  it("is the key prefix plus a few characters, never the secret", () => {
    const key = generateApiKey();
    const shown = displayPrefix(key);
    expect(shown.startsWith(KEY_PREFIX)).toBe(true);
    expect(key.startsWith(shown)).toBe(true);
    const revealed = shown.length - KEY_PREFIX.length;
    expect(revealed).toBeGreaterThan(0);
    expect(revealed).toBeLessThanOrEqual(8);
    expect(shown.length).toBeLessThan(key.length);
    expect(isApiKeyFormat(shown)).toBe(false);
  });
});

describe("isApiKeyFormat", () => {
  const good = generateApiKey();
  const secret = good.slice(KEY_PREFIX.length);

  it("accepts a generated key", () => {
    expect(isApiKeyFormat(good)).toBe(true);
    expect(isApiKeyFormat(`ktr_live_${"a".repeat(43)}`)).toBe(true);
  });

  it.each([
    ["empty", ""],
    ["prefix only", "ktr_live_"],
    ["one character short", good.slice(0, -1)],
    ["one character long", `${good}a`],
    ["test-mode prefix", `ktr_test_${secret}`],
    ["agent token prefix", `ktr_agt_${secret}`],
    ["upper-case prefix", `KTR_LIVE_${secret}`],
    ["no prefix", secret],
    ["hyphen in secret", `ktr_live_${secret.slice(0, -1)}-`],
    ["underscore in secret", `ktr_live_${secret.slice(0, -1)}_`],
    ["space in secret", `ktr_live_${secret.slice(0, 20)} ${secret.slice(21)}`],
    ["trailing newline", `${good}\n`],
    ["leading space", ` ${good}`],
    ["trailing space", `${good} `],
    ["non-ASCII letter", `ktr_live_${secret.slice(0, -1)}é`],
    ["bearer-prefixed", `Bearer ${good}`],
  ])("rejects %s", (_label, token) => {
    expect(isApiKeyFormat(token)).toBe(false);
  });
});

describe("randomBase62", () => {
  it("returns exactly the requested length from the base62 alphabet", () => {
    for (const length of [0, 1, 2, 43, 100, 1000]) {
      const value = randomBase62(length);
      expect(value).toHaveLength(length);
      for (const ch of value) expect(ALPHABET).toContain(ch);
    }
  });

  it("is roughly uniform over the 62 characters", () => {
    const perChar = 2_000;
    const sample = randomBase62(62 * perChar);
    const counts = new Map<string, number>();
    for (const ch of sample) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect([...counts.keys()].sort().join("")).toBe([...ALPHABET].sort().join(""));
    let chiSquare = 0;
    for (const ch of ALPHABET) {
      const n = counts.get(ch) ?? 0;
      expect(n, `count of ${ch}`).toBeGreaterThan(perChar * 0.8);
      expect(n, `count of ${ch}`).toBeLessThan(perChar * 1.2);
      chiSquare += (n - perChar) ** 2 / perChar;
    }
    // 61 degrees of freedom: 130 is far beyond p = 1e-8 for a uniform source, while the
    // modulo bias of `byte % 62` without rejection sampling gives a statistic near 800.
    expect(chiSquare).toBeLessThan(130);
  });
});
