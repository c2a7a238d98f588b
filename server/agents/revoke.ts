import { decodeProtectedHeader, errors } from "jose";
import type { Revocations } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { recordAudit } from "../../schema/lib/audit.ts";
import { type AuditRequest, requestOrigin } from "../audit/record.ts";
import { hashAgentToken, isAgentTokenFormat } from "../auth/agent-tokens.ts";
import { ASSERTION_LIFETIME_SECONDS } from "./keys.ts";
import { AGENT_PATHS } from "./metadata.ts";
import { OAuthError, readForm, requiredString } from "./oauth.ts";
import { type AgentClient, type AgentServices, agentRoutes } from "./plugin.ts";

/** Longer than any token Kontor issues (an identity assertion is well under 1 KB). */
const MAX_TOKEN_LENGTH = 8192;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/** Revokes one access token, and tells every process; false when no live token has that value. */
export async function revokeAgentToken(
  db: PrismaClient,
  revocations: Revocations,
  token: string,
): Promise<boolean> {
  const row = await db.agentToken.findUnique({
    where: { hash: hashAgentToken(token) },
    select: { id: true },
  });
  if (!row) return false;
  const { count } = await db.agentToken.updateMany({
    where: { id: row.id, revokedAt: null },
    data: { revokedAt: new Date() },
  });
  if (count > 0) await revocations.revoked("agent_token", [row.id]);
  return count > 0;
}

/**
 * Revokes a registration and every token it holds (its identity assertion is then refused too), and
 * tells every process. The agent revoked itself: a registration in a workspace records it there.
 */
export async function revokeRegistration(
  db: PrismaClient,
  revocations: Revocations,
  registrationId: string,
  request: AuditRequest,
): Promise<boolean> {
  const now = new Date();
  const registration = await db.$transaction(async (tx) => {
    const revoked = await tx.agentRegistration.updateMany({
      where: { id: registrationId, revokedAt: null },
      data: { status: "revoked", revokedAt: now },
    });
    await tx.agentToken.updateMany({ where: { registrationId, revokedAt: null }, data: { revokedAt: now } });
    const row = await tx.agentRegistration.findUnique({
      where: { id: registrationId },
      select: { workspaceId: true },
    });
    if (revoked.count > 0 && row?.workspaceId) {
      const origin = requestOrigin({ type: "agent", id: registrationId, email: null }, request);
      await recordAudit(tx, origin, {
        action: "agent_registration.revoked",
        targetId: registrationId,
        workspaceId: row.workspaceId,
      });
    }
    return revoked;
  });
  if (registration.count > 0) await revocations.revoked("agent_registration", [registrationId]);
  return registration.count > 0;
}

/**
 * The registration an identity assertion names, when Kontor signed it and it is still valid; null
 * for anything else (RFC 7009 §2.2: an invalid token is not an error).
 */
async function assertedRegistration(jwt: string, services: AgentServices): Promise<string | null> {
  if (!JWT_SHAPE.test(jwt)) return null;
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(jwt).kid;
  } catch {
    return null;
  }
  if (typeof kid !== "string" || kid.length > 100) return null;
  // Read from the database, not a process's key cache (another process may have just rotated), and
  // first, so that verify() failing can only mean a bad token, never a key-store problem.
  const retiredSince = new Date(Date.now() - ASSERTION_LIFETIME_SECONDS * 1000);
  const key = await services.prisma.signingKey.findFirst({
    where: { id: kid, OR: [{ retiredAt: null }, { retiredAt: { gt: retiredSince } }] },
    select: { id: true },
  });
  if (!key) return null;
  try {
    const { payload } = await services.keys.verify(jwt, {
      issuer: services.hostUrl,
      audience: services.hostUrl,
    });
    return typeof payload.sub === "string" && payload.sub.startsWith("areg_") ? payload.sub : null;
  } catch (error) {
    if (error instanceof errors.JOSEError) return null;
    throw error;
  }
}

/** RFC 7009 token revocation: an access token, or a whole registration given its identity assertion. */
async function revoke(
  request: Request,
  services: AgentServices,
  _url: URL,
  client: AgentClient,
): Promise<Response> {
  const form = await readForm(request);
  const token = requiredString(form.get("token"), "token", MAX_TOKEN_LENGTH);
  const hint = form.get("token_type_hint");
  if (hint !== undefined && !/^[\x21-\x7e]{1,256}$/.test(hint)) {
    throw new OAuthError(
      400,
      "invalid_request",
      "token_type_hint, when sent, must be a token type such as access_token.",
    );
  }
  // The hint only orders the search (RFC 7009 §2.1); each kind of token has its own shape anyway.
  if (isAgentTokenFormat(token)) await revokeAgentToken(services.prisma, services.revocations, token);
  else {
    const registrationId = await assertedRegistration(token, services);
    if (registrationId)
      await revokeRegistration(services.prisma, services.revocations, registrationId, client.state);
  }
  return new Response(null, { status: 200, headers: { "Cache-Control": "no-store", Pragma: "no-cache" } });
}

agentRoutes({ [AGENT_PATHS.revoke]: { POST: revoke } });
