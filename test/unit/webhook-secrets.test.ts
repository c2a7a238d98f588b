import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { newSigningSecret } from "../../schema/lib/webhook-secret.ts";
import { ConfigError } from "../../server/runtime/config.ts";
import { SecretBox, serverSecret } from "../../server/webhooks/secrets.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const dirs: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(join(tmpdir(), "kontor-secret-"));
  dirs.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("signing secrets", () => {
  it("are whsec_ + base64 of 32 random bytes, never twice the same", () => {
    const a = newSigningSecret();
    const b = newSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), "base64")).toHaveLength(32);
    expect(a).not.toBe(b);
  });
});

describe("SecretBox", () => {
  const secret = newSigningSecret();

  it("opens what it sealed; the sealed form reveals nothing of the secret and differs every time", () => {
    const box = new SecretBox("server-key-0123456789abcdef0123456789");
    const sealed = box.seal(secret);
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.seal(secret)).not.toBe(sealed);
    expect(box.open(sealed)).toBe(secret);
  });

  it("refuses another server key and any tampering", () => {
    const box = new SecretBox("server-key-0123456789abcdef0123456789");
    const sealed = box.seal(secret);
    expect(() => new SecretBox("another-key-0123456789abcdef012345678").open(sealed)).toThrow();
    const [version, iv, tag, body] = sealed.split(".");
    const flipped = Buffer.from(body!, "base64url");
    flipped[0] = flipped[0]! ^ 1;
    expect(() => box.open([version, iv, tag, flipped.toString("base64url")].join("."))).toThrow();
    expect(() => box.open(`v2.${iv}.${tag}.${body}`)).toThrow(/Unreadable/);
    expect(() => box.open("garbage")).toThrow(/Unreadable/);
  });
});

describe("the server secret", () => {
  it("is KONTOR_SECRET_KEY when set, in any environment", () => {
    const key = "configured-key-0123456789abcdef0123456";
    expect(serverSecret({ secretKey: key, env: "production", dataDir: scratch() })).toBe(key);
    expect(serverSecret({ secretKey: key, env: "development", dataDir: scratch() })).toBe(key);
  });

  it("is required in production", () => {
    expect(() => serverSecret({ secretKey: undefined, env: "production", dataDir: scratch() })).toThrow(
      ConfigError,
    );
    expect(() => serverSecret({ secretKey: undefined, env: "production", dataDir: scratch() })).toThrow(
      /KONTOR_SECRET_KEY must be set in production/,
    );
  });

  it("is generated once into DATA_DIR in development (mode 0600) and read back on every start", () => {
    const dataDir = scratch();
    const first = serverSecret({ secretKey: undefined, env: "development", dataDir });
    const file = join(dataDir, "server-secret.key");
    expect(first.length).toBeGreaterThanOrEqual(32);
    expect(readFileSync(file, "utf8").trim()).toBe(first);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(serverSecret({ secretKey: undefined, env: "development", dataDir })).toBe(first);
    // A secret sealed before a restart opens after it.
    const sealed = new SecretBox(first).seal("whsec_x");
    expect(
      new SecretBox(serverSecret({ secretKey: undefined, env: "development", dataDir })).open(sealed),
    ).toBe("whsec_x");
  });

  it("is the same key for processes generating it at once (a cluster's workers), none reading a half-written file", async () => {
    const dataDir = scratch();
    const script = `import { serverSecret } from "./server/webhooks/secrets.ts";
process.stdout.write(serverSecret({ secretKey: undefined, env: "development", dataDir: ${JSON.stringify(dataDir)} }));`;
    const run = () =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
          cwd: ROOT,
        });
        let out = "";
        let err = "";
        child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
        child.once("close", (code) => resolve({ code, out, err }));
      });
    const results = await Promise.all(Array.from({ length: 6 }, run));
    for (const r of results) expect(r.code, r.err).toBe(0);
    expect(new Set(results.map((r) => r.out)).size).toBe(1);
    expect(results[0]!.out).toBe(readFileSync(join(dataDir, "server-secret.key"), "utf8").trim());
    expect(readdirSync(dataDir)).toEqual(["server-secret.key"]);
  }, 60_000);

  it("refuses a key file that holds no usable key", () => {
    const dataDir = scratch();
    writeFileSync(join(dataDir, "server-secret.key"), "short\n");
    expect(() => serverSecret({ secretKey: undefined, env: "development", dataDir })).toThrow(
      /holds no usable key/,
    );
  });
});
