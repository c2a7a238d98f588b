import type { Credential } from "../../schema/context.ts";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import {
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
} from "../../schema/lib/api-key-secret.ts";
import { newId } from "../../schema/lib/ids.ts";
import { CredentialCache, type Loaded } from "./credential-cache.ts";
import { LastUsed } from "./last-used.ts";
import { type RevocationBus, tag } from "./revocations.ts";

// The key's format and hash live with the schema, which creates keys too (the dashboard's createApiKey).
export {
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
  KEY_PREFIX,
  randomBase62,
} from "../../schema/lib/api-key-secret.ts";

export interface CreatedApiKey {
  id: string;
  /** The full key: shown once, never stored. */
  key: string;
  scopes: string[];
}

/** Makes a key (in the caller's transaction when `db` is one). */
export async function createApiKey(
  db: Prisma.TransactionClient,
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

/**
 * Revokes a key now (a rotated key's grace ends too). Returns false when no such key exists.
 * `then` runs in the same transaction when the key was live until now (the CLI's audit record).
 */
export async function revokeApiKey(
  db: PrismaClient,
  id: string,
  then?: (tx: Prisma.TransactionClient, key: { workspaceId: string }) => Promise<void>,
): Promise<boolean> {
  const now = new Date();
  return db.$transaction(async (tx) => {
    const { count } = await tx.apiKey.updateMany({
      where: { id, ...liveKeyWhere(now) },
      data: { revokedAt: now },
    });
    const key = await tx.apiKey.findUnique({ where: { id }, select: { workspaceId: true } });
    if (count > 0 && key) await then?.(tx, key);
    return key !== null;
  });
}

/**
 * Resolves a presented key with one lookup on the unique hash index, cached while the process
 * hears of revocations (server/auth/revocations.ts); a key whose `revoked_at` lies ahead (a
 * rotation's grace) works until then, cached or not.
 */
export class ApiKeyResolver {
  private readonly cache: CredentialCache<Credential | null>;
  private readonly lastUsed: LastUsed;

  constructor(
    private readonly db: PrismaClient,
    bus: RevocationBus,
    ttlMs = 4_000,
  ) {
    this.cache = new CredentialCache(bus, ttlMs);
    this.lastUsed = new LastUsed("an API key", (id, now, since) =>
      db.apiKey.updateMany({
        where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: since } }] },
        data: { lastUsedAt: now },
      }),
    );
  }

  async resolve(key: string): Promise<Credential | null> {
    if (!isApiKeyFormat(key)) return null;
    const credential = usable(await this.cache.get(hashApiKey(key), () => this.load(key)), Date.now());
    if (credential) this.lastUsed.touch(credential.id);
    return credential;
  }

  private async load(key: string): Promise<Loaded<Credential | null>> {
    const row = await this.db.apiKey.findUnique({
      where: { hash: hashApiKey(key) },
      select: {
        id: true,
        workspaceId: true,
        scopes: true,
        revokedAt: true,
        workspace: { select: { plan: true } },
      },
    });
    if (!row || (row.revokedAt && row.revokedAt.getTime() <= Date.now())) return { value: null, tags: [] };
    return {
      value: {
        kind: "api_key",
        id: row.id,
        workspaceId: row.workspaceId,
        plan: row.workspace.plan,
        scopes: new Set(row.scopes),
        ...(row.revokedAt && { expiresAt: row.revokedAt.getTime() }),
      },
      tags: [tag("api_key", row.id), tag("workspace", row.workspaceId)],
    };
  }
}
const usable = (credential: Credential | null, now: number) =>
  credential && (credential.expiresAt === undefined || credential.expiresAt > now) ? credential : null;
