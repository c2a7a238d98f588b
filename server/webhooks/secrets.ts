import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Config, ConfigError } from "../runtime/config.ts";

const VERSION = "v1";
const KEY_FILE = "server-secret.key";

/**
 * Encrypts secrets at rest (AES-256-GCM): webhook signing secrets, agent signing keys. The key is derived from the server
 * secret, so a copy of the database alone reveals no signing secret.
 */
export class SecretBox {
  private readonly key: Buffer;

  /** `purpose` separates the keys of unrelated secrets (webhook signing secrets, agent signing keys). */
  constructor(serverSecret: string, purpose = "kontor/webhook-signing-secrets") {
    this.key = Buffer.from(hkdfSync("sha256", serverSecret, "", purpose, 32));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === "string" ? part : part.toString("base64url")))
      .join(".");
  }

  open(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split(".");
    if (version !== VERSION || !iv || !tag || ciphertext === undefined)
      throw new Error("Unreadable sealed secret.");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  }
}

/**
 * The server secret: KONTOR_SECRET_KEY, or in development a key generated once into DATA_DIR
 * (every process sharing that directory shares it). Production must configure it, since every
 * process of a deployment needs the same one.
 */
export function serverSecret(config: Pick<Config, "secretKey" | "env" | "dataDir">): string {
  if (config.secretKey) return config.secretKey;
  if (config.env === "production") {
    throw new ConfigError(
      "KONTOR_SECRET_KEY must be set in production (at least 32 characters; every server process needs the same value).",
    );
  }
  const file = join(config.dataDir, KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(config.dataDir, { recursive: true });
    // Written whole under a name of its own, then linked into place: of two processes starting at
    // once (a cluster's workers) one links and the other reads its key, never a half-written file.
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, `${randomBytes(32).toString("base64url")}\n`, { mode: 0o600 });
    try {
      linkSync(temporary, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    } finally {
      rmSync(temporary, { force: true });
    }
  }
  chmodSync(file, 0o600);
  const secret = readFileSync(file, "utf8").trim();
  if (secret.length < 32)
    throw new ConfigError(`${file} holds no usable key; delete it to generate a new one.`);
  return secret;
}
