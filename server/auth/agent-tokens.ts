import type { Credential } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { isAgentScope } from "../../schema/lib/scopes.ts";
import { hashApiKey, randomBase62 } from "./api-keys.ts";
import { CredentialCache, type Loaded } from "./credential-cache.ts";
import { LastUsed } from "./last-used.ts";
import { type RevocationBus, tag } from "./revocations.ts";

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
 * pre-claim registration, in a workspace that has agent auth on. Cached like API keys, while the
 * process hears of revocations (server/auth/revocations.ts). Each use stamps the registration's
 * `last_used_at` (at most once a minute).
 */
export class AgentTokenResolver {
  private readonly cache: CredentialCache<Credential | null>;
  private readonly lastUsed: LastUsed;

  constructor(
    private readonly db: PrismaClient,
    bus: RevocationBus,
    ttlMs = 3_000,
  ) {
    this.cache = new CredentialCache(bus, ttlMs);
    this.lastUsed = new LastUsed("an agent registration", (id, now, since) =>
      db.agentRegistration.updateMany({
        where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: since } }] },
        data: { lastUsedAt: now },
      }),
    );
  }

  async resolve(token: string): Promise<Credential | null> {
    if (!isAgentTokenFormat(token)) return null;
    const credential = await this.cache.get(hashAgentToken(token), () => this.load(token));
    if (!credential || credential.expiresAt! <= Date.now()) return null;
    this.lastUsed.touch(credential.id);
    return credential;
  }

  private async load(token: string): Promise<Loaded<Credential | null>> {
    const row = await this.db.agentToken.findUnique({
      where: { hash: hashAgentToken(token) },
      select: {
        id: true,
        scopes: true,
        expiresAt: true,
        revokedAt: true,
        workspaceId: true,
        registration: { select: { id: true, status: true, revokedAt: true } },
        workspace: { select: { plan: true, agentAuthEnabled: true } },
      },
    });
    if (!row) return { value: null, tags: [] };
    // A token refused only because agent auth is off works again when it is turned back on.
    const tags = [
      tag("agent_token", row.id),
      tag("agent_registration", row.registration.id),
      tag("workspace", row.workspaceId),
    ];
    const live =
      !row.revokedAt &&
      row.expiresAt.getTime() > Date.now() &&
      !row.registration.revokedAt &&
      (row.registration.status === "active" || row.registration.status === "pending") &&
      row.workspace.agentAuthEnabled;
    if (!live) return { value: null, tags };
    return {
      value: {
        kind: "agent",
        id: row.registration.id,
        workspaceId: row.workspaceId,
        plan: row.workspace.plan,
        // Never agents.* or audit.read, whatever the row says (isAgentScope).
        scopes: new Set(row.scopes.filter(isAgentScope)),
        expiresAt: row.expiresAt.getTime(),
      },
      tags,
    };
  }
}
