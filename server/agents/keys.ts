import { randomUUID } from "node:crypto";
import {
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
  type JWTPayload,
  type JWTVerifyResult,
  jwtVerify,
  SignJWT,
} from "jose";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { log } from "../observability/log.ts";
import type { Config } from "../runtime/config.ts";
import { SecretBox, serverSecret } from "../webhooks/secrets.ts";

export const ALGORITHM = "ES256";

/** What seals the private keys: a key derived from the server secret for this purpose alone. */
export const agentKeyBox = (config: Pick<Config, "secretKey" | "env" | "dataDir">) =>
  new SecretBox(serverSecret(config), "kontor/agent-signing-keys");
/** Kontor's identity assertions live 30 days; a retired key verifies for as long. */
export const ASSERTION_LIFETIME_SECONDS = 30 * 24 * 3600;
/** How long a process trusts its copy of the key set before reading it again. */
const CACHE_MS = 60_000;
/**
 * A new key is published this long before it signs, and the key it replaces signs until then:
 * longer than any process keeps its copy of the key set and than the JWKS may be cached
 * (max-age 300 s), so every verifier holds a key before an assertion uses it.
 */
export const KEY_PUBLISH_LEAD_MS = 10 * 60_000;
/** How stale the published key set may be on any process. */
const JWKS_CACHE_MS = 5_000;

interface LoadedKey {
  kid: string;
  publicJwk: JWK;
  privateJwk: JWK | null;
  createdAt: Date;
  retiredAt: Date | null;
}

/**
 * The ES256 keys that sign Kontor's identity assertions. They live in the database, the private
 * half sealed with the server secret, so every process signs and verifies with the same keys; the
 * first process to need one makes it. The newest unretired key signs; every key not retired for
 * longer than an assertion lives is published and verifies.
 */
export class SigningKeys {
  private loaded: { keys: LoadedKey[]; at: number } | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly box: SecretBox,
  ) {}

  private async load(force = false, maxAgeMs = CACHE_MS): Promise<LoadedKey[]> {
    if (!force && this.loaded && Date.now() - this.loaded.at < maxAgeMs) return this.loaded.keys;
    const since = new Date(Date.now() - ASSERTION_LIFETIME_SECONDS * 1000);
    const rows = await this.prisma.signingKey.findMany({
      where: { OR: [{ retiredAt: null }, { retiredAt: { gt: since } }] },
      orderBy: { createdAt: "desc" },
    });
    const keys = rows.map((row) => ({
      kid: row.id,
      publicJwk: row.publicJwk as JWK,
      privateJwk: this.unseal(row.id, row.privateSealed),
      createdAt: row.createdAt,
      retiredAt: row.retiredAt,
    }));
    this.loaded = { keys, at: Date.now() };
    return keys;
  }

  /**
   * The private half, or null when it was sealed under another server secret (KONTOR_SECRET_KEY
   * changed): such a key still verifies what it signed (its public half is plain), it just never
   * signs again, and a key sealed under the current secret is made to sign instead.
   */
  private unseal(kid: string, sealed: string): JWK | null {
    try {
      return JSON.parse(this.box.open(sealed)) as JWK;
    } catch {
      if (!this.unreadable.has(kid)) {
        this.unreadable.add(kid);
        log("warn", "a signing key was sealed under another server secret: it verifies but no longer signs", {
          kid,
        });
      }
      return null;
    }
  }

  private readonly unreadable = new Set<string>();

  /**
   * Makes a new signing key. It is published at once and signs from KEY_PUBLISH_LEAD_MS on; the
   * keys signing until then retire at that moment and keep verifying as long as an assertion lives.
   */
  async rotate(): Promise<string> {
    const { publicKey, privateKey } = await generateKeyPair(ALGORITHM, { extractable: true });
    const kid = newId("signingKey");
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALGORITHM, use: "sig" };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: ALGORITHM };
    await this.prisma.$transaction([
      this.prisma.signingKey.updateMany({
        where: { retiredAt: null },
        data: { retiredAt: new Date(Date.now() + KEY_PUBLISH_LEAD_MS) },
      }),
      this.prisma.signingKey.create({
        data: { id: kid, publicJwk, privateSealed: this.box.seal(JSON.stringify(privateJwk)) },
      }),
    ]);
    await this.load(true);
    return kid;
  }

  /** The key that signs now (see pick); made on first use. */
  private async signer(): Promise<LoadedKey> {
    const pick = (keys: LoadedKey[]) => {
      const now = Date.now();
      const usable = keys.filter(
        (key) => key.privateJwk !== null && (key.retiredAt === null || key.retiredAt.getTime() > now),
      );
      // Newest first: the newest settled key, else the oldest usable one (the one that was signing,
      // or of two keys made at once by two processes, the same one for both).
      return usable.find((key) => key.createdAt.getTime() <= now - KEY_PUBLISH_LEAD_MS) ?? usable.at(-1);
    };
    let current = pick(await this.load());
    if (!current) {
      // Two processes starting at once may each make one: both are published, the newest signs.
      await this.rotate();
      current = pick(await this.load(true));
    }
    if (!current) throw new Error("No signing key could be made.");
    return current;
  }

  /** The public keys, as `{host_url}/.well-known/jwks.json` serves them. */
  async jwks(): Promise<{ keys: JWK[] }> {
    await this.signer();
    // Read more often than the signer's copy: every process publishes a new key within seconds,
    // long before it signs (KEY_PUBLISH_LEAD_MS), so verifiers' caches have time to catch up.
    return { keys: (await this.load(false, JWKS_CACHE_MS)).map((key) => key.publicJwk) };
  }

  async sign(
    claims: JWTPayload,
    options: { issuer: string; audience: string; subject: string; expiresInSeconds: number; type?: string },
  ): Promise<string> {
    const key = await this.signer();
    return new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM, kid: key.kid, typ: options.type ?? "JWT" })
      .setIssuer(options.issuer)
      .setAudience(options.audience)
      .setSubject(options.subject)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + options.expiresInSeconds)
      .setJti(randomUUID())
      .sign(await importJWK(key.privateJwk!, ALGORITHM));
  }

  /** Verifies a JWT Kontor signed (any published key; an unknown kid rereads the key set once). */
  async verify(jwt: string, options: { issuer: string; audience: string }): Promise<JWTVerifyResult> {
    const lookup = async (protectedHeader: { kid?: string }) => {
      let key = (await this.load()).find((k) => k.kid === protectedHeader.kid);
      if (!key) key = (await this.load(true)).find((k) => k.kid === protectedHeader.kid);
      if (!key) throw new Error("unknown signing key");
      return importJWK(key.publicJwk, ALGORITHM);
    };
    return jwtVerify(jwt, lookup, {
      algorithms: [ALGORITHM],
      issuer: options.issuer,
      audience: options.audience,
    });
  }
}
