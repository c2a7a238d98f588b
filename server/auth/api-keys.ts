import { createHash, randomBytes } from "node:crypto";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { Credential } from "../../schema/context.ts";
import { newId } from "../../schema/lib/ids.ts";

export const KEY_PREFIX = "ktr_live_";
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

export interface CreatedApiKey {
  id: string;
  /** The full key: shown once, never stored. */
  key: string;
  scopes: string[];
}

export async function createApiKey(
  db: PrismaClient,
  input: { workspaceId: string; scopes: string[]; name?: string | undefined },
): Promise<CreatedApiKey> {
  const key = generateApiKey();
  const row = await db.apiKey.create({
    data: {
      id: newId("apiKey"),
      workspaceId: input.workspaceId,
      name: input.name ?? null,
      prefix: displayPrefix(key),
      hash: hashApiKey(key),
      scopes: input.scopes,
    },
  });
  return { id: row.id, key, scopes: row.scopes };
}

/** Marks a key revoked. Returns false when no such key exists. */
export async function revokeApiKey(db: PrismaClient, id: string): Promise<boolean> {
  const { count } = await db.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
  if (count > 0) return true;
  return (await db.apiKey.count({ where: { id } })) > 0;
}

/**
 * Resolves a presented key with one lookup on the unique hash index, cached briefly.
 * The cache lifetime bounds how long a revoked key keeps working on any process.
 */
export class ApiKeyResolver {
  private readonly cache = new Map<string, { credential: Credential | null; expires: number }>();

  constructor(
    private readonly db: PrismaClient,
    private readonly ttlMs = 4_000,
    private readonly maxEntries = 10_000,
  ) {}

  async resolve(key: string): Promise<Credential | null> {
    if (!isApiKeyFormat(key)) return null;
    const hash = hashApiKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.expires > now) return cached.credential;
    const row = await this.db.apiKey.findUnique({
      where: { hash },
      select: { id: true, workspaceId: true, scopes: true, revokedAt: true, workspace: { select: { plan: true } } },
    });
    const credential: Credential | null =
      row && !row.revokedAt
        ? { kind: "api_key", id: row.id, workspaceId: row.workspaceId, plan: row.workspace.plan, scopes: new Set(row.scopes) }
        : null;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(hash, { credential, expires: now + this.ttlMs });
    return credential;
  }
}
