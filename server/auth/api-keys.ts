import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { Credential } from "../../schema/context.ts";
import { displayPrefix, generateApiKey, hashApiKey, isApiKeyFormat } from "../../schema/lib/api-key-secret.ts";
import { newId } from "../../schema/lib/ids.ts";
import { LastUsed } from "./last-used.ts";

// The key's format and hash live with the schema, which creates keys too (the dashboard's createApiKey).
export { displayPrefix, generateApiKey, hashApiKey, isApiKeyFormat, KEY_PREFIX, randomBase62 } from "../../schema/lib/api-key-secret.ts";

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

/** A key not revoked, or rotated and still in its grace period. */
export const liveKeyWhere = (now: Date) => ({ OR: [{ revokedAt: null }, { revokedAt: { gt: now } }] });

/** Revokes a key now (a rotated key's grace ends too). Returns false when no such key exists. */
export async function revokeApiKey(db: PrismaClient, id: string): Promise<boolean> {
  const now = new Date();
  const { count } = await db.apiKey.updateMany({ where: { id, ...liveKeyWhere(now) }, data: { revokedAt: now } });
  if (count > 0) return true;
  return (await db.apiKey.count({ where: { id } })) > 0;
}

/**
 * Resolves a presented key with one lookup on the unique hash index, cached briefly.
 * The cache lifetime bounds how long a revoked key keeps working on any process; a key whose
 * `revoked_at` lies ahead (a rotation's grace) works until then, cached or not.
 */
export class ApiKeyResolver {
  private readonly cache = new Map<string, { credential: Credential | null; expires: number }>();
  private readonly lastUsed: LastUsed;

  constructor(
    private readonly db: PrismaClient,
    private readonly ttlMs = 4_000,
    private readonly maxEntries = 10_000,
  ) {
    this.lastUsed = new LastUsed("an API key", (id, now, since) =>
      db.apiKey.updateMany({ where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: since } }] }, data: { lastUsedAt: now } }),
    );
  }

  async resolve(key: string): Promise<Credential | null> {
    const credential = await this.lookup(key);
    if (credential) this.lastUsed.touch(credential.id);
    return credential;
  }

  private async lookup(key: string): Promise<Credential | null> {
    if (!isApiKeyFormat(key)) return null;
    const hash = hashApiKey(key);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.expires > now) return usable(cached.credential, now);
    const row = await this.db.apiKey.findUnique({
      where: { hash },
      select: { id: true, workspaceId: true, scopes: true, revokedAt: true, workspace: { select: { plan: true } } },
    });
    const credential: Credential | null =
      row && (!row.revokedAt || row.revokedAt.getTime() > now)
        ? {
            kind: "api_key",
            id: row.id,
            workspaceId: row.workspaceId,
            plan: row.workspace.plan,
            scopes: new Set(row.scopes),
            ...(row.revokedAt && { expiresAt: row.revokedAt.getTime() }),
          }
        : null;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(hash, { credential, expires: now + this.ttlMs });
    return credential;
  }
}

const usable = (credential: Credential | null, now: number) =>
  credential && (credential.expiresAt === undefined || credential.expiresAt > now) ? credential : null;
