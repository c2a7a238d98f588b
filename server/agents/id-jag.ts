import { newId } from "../../schema/lib/ids.ts";
import { textProblem } from "../../schema/lib/limits.ts";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import { AGENT_SCOPES } from "../../schema/lib/scopes.ts";
import { normalEmail } from "../accounts/workspaces.ts";
import { startClaimAttempt } from "./claims.ts";
import { OAuthError, oauthJson, requiredString } from "./oauth.ts";
import type { AgentServices } from "./plugin.ts";
import {
  CLOCK_SKEW_SECONDS,
  consumeJti,
  ProviderJwtError,
  type ProviderRow,
  verifyProviderJwt,
} from "./provider-keys.ts";
import { signIdentityAssertion } from "./registrations.ts";

export const ID_JAG_ASSERTION_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
export const ID_JAG_TYP = "oauth-id-jag+jwt";
/** An ID-JAG is a few KB; a bigger one is refused before any work. */
const MAX_ASSERTION_LENGTH = 16 * 1024;

const FAILURES: Record<
  ProviderJwtError["failure"],
  {
    status: number;
    code:
      | "invalid_request"
      | "issuer_not_enabled"
      | "invalid_signature"
      | "audience_mismatch"
      | "credential_expired";
  }
> = {
  malformed: { status: 400, code: "invalid_request" },
  typ: { status: 400, code: "invalid_request" },
  claims: { status: 400, code: "invalid_request" },
  unknown_issuer: { status: 400, code: "issuer_not_enabled" },
  signature: { status: 400, code: "invalid_signature" },
  audience: { status: 400, code: "audience_mismatch" },
  expired: { status: 400, code: "credential_expired" },
};

/** `scope` (space-separated) narrows what the agent may do once linked; the default is every agent scope. */
function requestedScopes(value: unknown): string[] {
  if (value === undefined || value === null) return [...AGENT_SCOPES];
  const scopes = [...new Set(requiredString(value, "scope", 1024).split(" ").filter(Boolean))];
  const unknown = scopes.filter((scope) => !AGENT_SCOPES.includes(scope));
  if (unknown.length > 0)
    throw new OAuthError(400, "invalid_scope", `Unknown or not grantable to agents: ${unknown.join(", ")}.`);
  return scopes;
}

function optionalName(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return requiredString(value, "agent_name", 200);
}

/**
 * `POST /agent/identity` with `type: "identity_assertion"` (docs/api/agents.md): an ID-JAG from a
 * provider some workspace trusts. The first time an `(iss, sub)` is seen, the user confirms once
 * through the claim ceremony (401 interaction_required with a claim block); once they have, each
 * new ID-JAG for that `(iss, sub)` yields Kontor's own identity assertion. Trust is per workspace:
 * the ID-JAG acts only in the workspaces whose trusted-provider entry's key set verified it, and
 * its registrations (active or pending) are looked up by those workspaces with `(iss, sub)`.
 */
export async function registerIdentityAssertion(
  body: Record<string, unknown>,
  services: AgentServices,
): Promise<Response> {
  if (body.assertion_type !== ID_JAG_ASSERTION_TYPE) {
    throw new OAuthError(400, "invalid_request", `assertion_type must be '${ID_JAG_ASSERTION_TYPE}'.`);
  }
  const assertion = requiredString(body.assertion, "assertion", MAX_ASSERTION_LENGTH);
  const agentName = optionalName(body.agent_name);
  const scopes = requestedScopes(body.scope);

  let verified;
  try {
    verified = await verifyProviderJwt(assertion, {
      prisma: services.prisma,
      production: services.config.env === "production",
      audiences: [services.hostUrl, services.baseUrl],
      typs: [ID_JAG_TYP],
      requiredClaims: ["exp", "iat", "jti", "sub"],
    });
  } catch (error) {
    if (!(error instanceof ProviderJwtError)) throw error;
    const { status, code } = FAILURES[error.failure];
    throw new OAuthError(status, code, `The ID-JAG was refused: ${error.message}`);
  }
  const { payload, issuer, providers } = verified;
  const subject = requiredString(payload.sub, "The ID-JAG's sub", 255);
  const jti = requiredString(payload.jti, "The ID-JAG's jti", 255);
  if (payload.email_verified !== true && payload.phone_number_verified !== true) {
    throw new OAuthError(
      400,
      "invalid_request",
      "The ID-JAG must carry email_verified: true or phone_number_verified: true.",
    );
  }

  const linked = await services.prisma.agentRegistration.findFirst({
    where: {
      type: "identity_assertion",
      providerIssuer: issuer,
      providerSubject: subject,
      status: "active",
      revokedAt: null,
      workspaceId: { in: providers.map((p) => p.workspaceId) },
    },
    orderBy: { createdAt: "desc" },
  });
  // Linked: only its workspace's entry for this issuer counts; otherwise every workspace whose entry verified it.
  const relevant = linked ? providers.filter((p) => p.workspaceId === linked.workspaceId) : providers;
  if (relevant.length === 0)
    throw new OAuthError(
      400,
      "issuer_not_enabled",
      `No workspace trusts the issuer '${issuer}' with the keys that signed this ID-JAG.`,
    );
  const enabled = relevant.filter((p) => p.workspace.agentAuthEnabled);
  if (enabled.length === 0)
    throw new OAuthError(
      403,
      "agent_auth_disabled",
      "Agent access is turned off for the workspace that trusts this issuer.",
    );
  checkAuthTime(payload.auth_time, enabled);

  const expiresAt = new Date(((payload.exp as number) + CLOCK_SKEW_SECONDS) * 1000);
  if (!(await consumeJti(services.prisma, issuer, jti, expiresAt))) {
    throw new OAuthError(
      400,
      "replay_detected",
      "This ID-JAG's jti was already used; ask the provider for a new one.",
    );
  }

  if (linked) {
    const { assertion: identityAssertion, expires } = await signIdentityAssertion(services, linked.id);
    return oauthJson({
      registration_id: linked.id,
      registration_type: "identity_assertion",
      identity_assertion: identityAssertion,
      assertion_expires: expires,
      scopes: linked.scopes,
    });
  }
  return startLink(services, {
    providers: enabled,
    issuer,
    subject,
    email: payload.email,
    agentName,
    scopes,
  });
}

/** With max_auth_age set (the strictest entry wins), auth_time must be present and recent enough. */
function checkAuthTime(authTime: unknown, providers: ProviderRow[]) {
  const ages = providers.map((p) => p.maxAuthAge).filter((age): age is number => age !== null);
  if (ages.length === 0) return;
  const maxAge = Math.min(...ages);
  if (typeof authTime !== "number" || !Number.isFinite(authTime)) {
    throw new OAuthError(
      401,
      "login_required",
      `The ID-JAG has no auth_time; the user must have signed in within ${maxAge} seconds.`,
    );
  }
  if (Date.now() / 1000 - authTime > maxAge + CLOCK_SKEW_SECONDS) {
    throw new OAuthError(
      401,
      "login_required",
      `The user signed in more than ${maxAge} seconds ago; they must sign in with the provider again.`,
    );
  }
}

/**
 * The first link of an `(iss, sub)`: a pending registration and a claim attempt the user confirms.
 * The registration carries its workspace from the start: one whose entry for the issuer verified
 * the ID-JAG (agent access on, room under its plan's cap), the one the ID-JAG's person owns when
 * several did, else the oldest entry's. It is found again only by such a workspace with
 * `(iss, sub)`, so an entry of another workspace (other keys under the same issuer) never
 * re-scopes, renames or restarts it; the user approves it into that workspace.
 */
async function startLink(
  services: AgentServices,
  input: {
    providers: ProviderRow[];
    issuer: string;
    subject: string;
    email: unknown;
    agentName: string | null;
    scopes: string[];
  },
): Promise<never> {
  const counts = await services.prisma.agentRegistration.groupBy({
    by: ["workspaceId"],
    where: {
      workspaceId: { in: input.providers.map((p) => p.workspaceId) },
      status: "active",
      revokedAt: null,
    },
    _count: { _all: true },
  });
  const active = new Map(counts.map((row) => [row.workspaceId, row._count._all]));
  const eligible = input.providers
    .filter((p) => (active.get(p.workspaceId) ?? 0) < PLAN_LIMITS[p.workspace.plan].agent_registrations)
    .map((p) => p.workspaceId);
  if (eligible.length === 0) {
    throw new OAuthError(
      403,
      "plan_limit_reached",
      "The workspace that trusts this issuer has as many agents as its plan allows; an owner must revoke one first.",
    );
  }
  const loginHint =
    typeof input.email === "string" && textProblem(input.email, 320) === null ? input.email : null;
  const pending = await services.prisma.agentRegistration.findFirst({
    where: {
      type: "identity_assertion",
      providerIssuer: input.issuer,
      providerSubject: input.subject,
      status: "pending",
      revokedAt: null,
      workspaceId: { in: eligible },
    },
    orderBy: { createdAt: "desc" },
    select: { id: true },
  });
  const registrationId = pending?.id ?? newId("agentRegistration");
  if (pending) {
    await services.prisma.agentRegistration.update({
      where: { id: registrationId },
      data: {
        postClaimScopes: input.scopes,
        ...(input.agentName !== null && { agentName: input.agentName }),
        loginHint,
      },
    });
  } else {
    await services.prisma.agentRegistration.create({
      data: {
        id: registrationId,
        workspaceId: await linkWorkspace(services, eligible, loginHint),
        type: "identity_assertion",
        status: "pending",
        agentName: input.agentName,
        loginHint,
        scopes: [],
        postClaimScopes: input.scopes,
        providerIssuer: input.issuer,
        providerSubject: input.subject,
      },
    });
  }
  const { claim } = await startClaimAttempt(services.prisma, {
    registrationId,
    loginHint,
    hostUrl: services.hostUrl,
  });
  throw new OAuthError(
    401,
    "interaction_required",
    "The user must confirm this agent once: show them claim.verification_uri and claim.user_code, then send a new ID-JAG after they approve.",
    { registration_id: registrationId, registration_type: "identity_assertion", claim },
  );
}

/** Of the workspaces a new link may go to (oldest entry first), the first that the ID-JAG's person owns, else the first. */
async function linkWorkspace(
  services: AgentServices,
  workspaceIds: string[],
  email: string | null,
): Promise<string> {
  if (workspaceIds.length === 1 || email === null) return workspaceIds[0]!;
  const owned = await services.prisma.membership.findMany({
    where: { role: "owner", workspaceId: { in: workspaceIds }, user: { email: normalEmail(email) } },
    select: { workspaceId: true },
  });
  const mine = new Set(owned.map((m) => m.workspaceId));
  return workspaceIds.find((id) => mine.has(id)) ?? workspaceIds[0]!;
}
