import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { Credential } from "../../schema/context.ts";
import { newId } from "../../schema/lib/ids.ts";
import { hashApiKey, randomBase62 } from "../auth/api-keys.ts";
import { LastUsed } from "../auth/last-used.ts";

export const AGENT_TOKEN_PREFIX = "ktr_agt_";
const TOKEN_PATTERN = /^ktr_agt_[0-9A-Za-z]{43}$/;

export const isAgentTokenFormat = (token: string) => TOKEN_PATTERN.test(token);
/** SHA-256, as for API keys: the token is 256 random bits, so no slow hash is needed. */
export const hashAgentToken = hashApiKey;

export interface IssuedToken {
  id: string;
  token: string;
  expiresAt: Date;
  scopes: string[];
}

/** A new access token of `registrationId` for its workspace and scopes; only its hash is stored. */
export async function issueAgentToken(
  db: PrismaClient,
  input: { registrationId: string; workspaceId: string; scopes: string[]; lifetimeSeconds: number },
): Promise<IssuedToken> {
  const token = `${AGENT_TOKEN_PREFIX}${randomBase62(43)}`;
  const expiresAt = new Date(Date.now() + input.lifetimeSeconds * 1000);
  const row = await db.agentToken.create({
    data: {
      id: newId("agentToken"),
      registrationId: input.registrationId,
      workspaceId: input.workspaceId,
      hash: hashAgentToken(token),
      scopes: input.scopes,
      expiresAt,
    },
  });
  return { id: row.id, token, expiresAt, scopes: row.scopes };
}

/**
 * Resolves a presented `ktr_agt_…` token: live (not expired, not revoked), of an active or
 * pre-claim registration, in a workspace that has agent auth on. Cached briefly like API keys: the
 * cache lifetime bounds how long a revoked token keeps working on any process. Each use stamps the
 * registration's `last_used_at` (at most once a minute).
 */
export class AgentTokenResolver {
  private readonly cache = new Map<string, { credential: Credential | null; expires: number }>();
  private readonly lastUsed: LastUsed;

  constructor(
    private readonly db: PrismaClient,
    // Under the API keys' 4 s: a revoked agent must stop within 5 s on every process, polls included.
    private readonly ttlMs = 3_000,
    private readonly maxEntries = 10_000,
  ) {
    this.lastUsed = new LastUsed("an agent registration", (id, now, since) =>
      db.agentRegistration.updateMany({ where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: since } }] }, data: { lastUsedAt: now } }),
    );
  }

  async resolve(token: string): Promise<Credential | null> {
    const credential = await this.lookup(token);
    if (credential) this.lastUsed.touch(credential.id);
    return credential;
  }

  private async lookup(token: string): Promise<Credential | null> {
    if (!isAgentTokenFormat(token)) return null;
    const hash = hashAgentToken(token);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.expires > now) return cached.credential && cached.credential.expiresAt! > now ? cached.credential : null;
    const row = await this.db.agentToken.findUnique({
      where: { hash },
      select: {
        scopes: true,
        expiresAt: true,
        revokedAt: true,
        workspaceId: true,
        registration: { select: { id: true, status: true, revokedAt: true } },
        workspace: { select: { plan: true, agentAuthEnabled: true } },
      },
    });
    const live =
      row &&
      !row.revokedAt &&
      row.expiresAt.getTime() > now &&
      !row.registration.revokedAt &&
      (row.registration.status === "active" || row.registration.status === "pending") &&
      row.workspace.agentAuthEnabled;
    const credential: Credential | null = live
      ? {
          kind: "agent",
          id: row.registration.id,
          workspaceId: row.workspaceId,
          plan: row.workspace.plan,
          scopes: new Set(row.scopes.filter((scope) => !scope.startsWith("agents."))),
          expiresAt: row.expiresAt.getTime(),
        }
      : null;
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(hash, { credential, expires: now + this.ttlMs });
    return credential;
  }
}
