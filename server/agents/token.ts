import { errors as joseErrors } from "jose";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { AGENT_SCOPES } from "../../schema/lib/scopes.ts";
import { issueAgentToken } from "../auth/agent-tokens.ts";
import { hashClaimToken, POLL_INTERVAL_SECONDS } from "./claims.ts";
import { OAuthError, oauthJson, readForm, requiredString } from "./oauth.ts";
import { type AgentServices, agentRoutes } from "./plugin.ts";
import { signIdentityAssertion } from "./registrations.ts";

export const TOKEN_ENDPOINT_PATH = "/oauth2/token";
export const CLAIM_GRANT_TYPE = "urn:kontor:agent-auth:grant-type:claim";
export const JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** An access token lives this long unless the plan caps it lower. */
export const DEFAULT_TOKEN_LIFETIME_SECONDS = 3600;

interface Grantee {
  id: string;
  scopes: string[];
  workspace: { id: string; plan: PlanName; agentAuthEnabled: boolean } | null;
}

/** `scope` may narrow a grant to part of what the registration holds, never widen it. */
function grantedScopes(held: string[], requested: string | undefined): string[] {
  const allowed = held.filter((scope) => AGENT_SCOPES.includes(scope));
  if (requested === undefined) return allowed;
  const asked = [...new Set(requested.split(" ").filter(Boolean))];
  const refused = asked.filter((scope) => !allowed.includes(scope));
  if (asked.length === 0 || refused.length > 0) {
    throw new OAuthError(
      400,
      "invalid_scope",
      `This agent may ask for: ${allowed.join(" ")}${refused.length ? `; not ${refused.join(", ")}` : ""}.`,
    );
  }
  return allowed.filter((scope) => asked.includes(scope));
}

function usableWorkspace(registration: Grantee) {
  const workspace = registration.workspace;
  if (!workspace) throw new OAuthError(400, "invalid_grant", "This registration has no workspace.");
  if (!workspace.agentAuthEnabled)
    throw new OAuthError(403, "agent_auth_disabled", "Agent access is turned off for this workspace.");
  return workspace;
}

/**
 * A new access token at the plan's lifetime cap; past the plan's live-token cap the oldest live
 * tokens of the registration are revoked (the new one always stays).
 */
async function issue(services: AgentServices, registration: Grantee, scopes: string[]) {
  const workspace = usableWorkspace(registration);
  const limits = PLAN_LIMITS[workspace.plan];
  const lifetimeSeconds = Math.min(DEFAULT_TOKEN_LIFETIME_SECONDS, limits.agent_token_lifetime_seconds);
  const issued = await issueAgentToken(services.prisma, {
    registrationId: registration.id,
    workspaceId: workspace.id,
    scopes,
    lifetimeSeconds,
  });
  const now = new Date();
  const surplus = await services.prisma.agentToken.findMany({
    where: {
      registrationId: registration.id,
      id: { not: issued.id },
      revokedAt: null,
      expiresAt: { gt: now },
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    skip: limits.agent_tokens_per_registration - 1,
    select: { id: true },
  });
  if (surplus.length > 0) {
    const ids = surplus.map((t) => t.id);
    await services.prisma.agentToken.updateMany({
      where: { id: { in: ids }, revokedAt: null },
      data: { revokedAt: now },
    });
    await services.revocations.revoked("agent_token", ids);
  }
  return {
    access_token: issued.token,
    token_type: "Bearer",
    expires_in: lifetimeSeconds,
    scope: issued.scopes.join(" "),
  };
}

const registrationSelect = {
  id: true,
  type: true,
  status: true,
  scopes: true,
  revokedAt: true,
  claimedAt: true,
  claimExpiresAt: true,
  workspace: { select: { id: true, plan: true, agentAuthEnabled: true } },
} as const;

/** The claim grant: the agent polls with its claim token until the user has decided. */
async function claimGrant(form: Map<string, string>, services: AgentServices) {
  const token = requiredString(form.get("claim_token"), "claim_token", 200);
  const hash = hashClaimToken(token);
  const registration = await services.prisma.agentRegistration.findUnique({
    where: { claimTokenHash: hash },
    select: registrationSelect,
  });
  if (!registration || registration.revokedAt || registration.status === "revoked") {
    throw new OAuthError(400, "invalid_grant", "The claim_token is unknown, already redeemed or revoked.");
  }
  if (!registration.claimExpiresAt || registration.claimExpiresAt.getTime() <= Date.now()) {
    throw new OAuthError(400, "expired_token", "The claim_token has expired; register again.");
  }
  if (registration.status === "denied")
    throw new OAuthError(400, "access_denied", "The user denied this agent.");

  if (registration.status === "active" && registration.claimedAt) {
    const scopes = grantedScopes(registration.scopes, form.get("scope"));
    usableWorkspace(registration);
    // Spent before anything is issued: of two concurrent redemptions, one wins.
    const spent = await services.prisma.agentRegistration.updateMany({
      where: { id: registration.id, claimTokenHash: hash },
      data: { claimTokenHash: null, claimExpiresAt: null },
    });
    if (spent.count === 0) throw new OAuthError(400, "invalid_grant", "The claim_token is already redeemed.");
    const granted = await issue(services, registration, scopes);
    const { assertion, expires } = await signIdentityAssertion(services, registration.id);
    return { ...granted, identity_assertion: assertion, assertion_expires: expires };
  }

  const attempt = await services.prisma.claimAttempt.findFirst({
    where: { registrationId: registration.id },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    select: { status: true, expiresAt: true },
  });
  if (attempt?.status === "denied") throw new OAuthError(400, "access_denied", "The user denied this agent.");
  if (
    attempt &&
    (attempt.status === "dead" || (attempt.status === "pending" && attempt.expiresAt.getTime() <= Date.now()))
  ) {
    throw new OAuthError(
      400,
      "expired_token",
      "The claim ceremony ended without approval; start a new one at the claim_url.",
    );
  }
  // One conditional update decides, so processes sharing the database agree on who polled too soon.
  const now = Date.now();
  const polled = await services.prisma.agentRegistration.updateMany({
    where: {
      id: registration.id,
      OR: [{ lastPolledAt: null }, { lastPolledAt: { lte: new Date(now - POLL_INTERVAL_SECONDS * 1000) } }],
    },
    data: { lastPolledAt: new Date(now) },
  });
  if (polled.count === 0)
    throw new OAuthError(400, "slow_down", `Poll at most once every ${POLL_INTERVAL_SECONDS} seconds.`, {
      interval: POLL_INTERVAL_SECONDS,
    });
  throw new OAuthError(
    400,
    "authorization_pending",
    attempt ? "The user has not confirmed yet." : "No claim ceremony is running; start one at the claim_url.",
    { interval: POLL_INTERVAL_SECONDS },
  );
}

function assertionProblem(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return "The assertion has expired; register again.";
  if (error instanceof joseErrors.JWTClaimValidationFailed)
    return `The assertion's '${error.claim}' claim is not Kontor's.`;
  return "The assertion is not an identity assertion Kontor signed.";
}

/** RFC 7523: Kontor's own identity assertion exchanged for an access token. */
async function jwtBearerGrant(form: Map<string, string>, services: AgentServices) {
  return assertionGrant(
    requiredString(form.get("assertion"), "assertion", 16_384),
    services,
    form.get("scope"),
  );
}

/**
 * The jwt-bearer grant: an access token for Kontor's identity assertion of an active registration
 * (or an unclaimed anonymous one), at the registration's scopes or the `scope` asked for.
 *
 * @example const { access_token, expires_in } = await assertionGrant(identityAssertion, services)
 */
export async function assertionGrant(assertion: string, services: AgentServices, scope?: string) {
  let subject: string | undefined;
  try {
    ({
      payload: { sub: subject },
    } = await services.keys.verify(assertion, { issuer: services.hostUrl, audience: services.hostUrl }));
  } catch (error) {
    throw new OAuthError(400, "invalid_grant", assertionProblem(error));
  }
  const registration = subject?.startsWith("areg_")
    ? await services.prisma.agentRegistration.findUnique({
        where: { id: subject },
        select: registrationSelect,
      })
    : null;
  if (!registration || registration.revokedAt || registration.status === "revoked") {
    throw new OAuthError(400, "invalid_grant", "The registration of this assertion is revoked or gone.");
  }
  const preClaim = registration.type === "anonymous" && registration.status === "pending";
  if (registration.status !== "active" && !preClaim)
    throw new OAuthError(400, "invalid_grant", "This registration is not active.");
  return issue(services, registration, grantedScopes(registration.scopes, scope));
}

agentRoutes({
  [TOKEN_ENDPOINT_PATH]: {
    POST: async (request, services) => {
      const form = await readForm(request);
      const grantType = requiredString(form.get("grant_type"), "grant_type", 200);
      if (grantType === CLAIM_GRANT_TYPE) return oauthJson(await claimGrant(form, services));
      if (grantType === JWT_BEARER_GRANT_TYPE) return oauthJson(await jwtBearerGrant(form, services));
      throw new OAuthError(
        400,
        "unsupported_grant_type",
        `grant_type must be ${CLAIM_GRANT_TYPE} or ${JWT_BEARER_GRANT_TYPE}.`,
      );
    },
  },
});
