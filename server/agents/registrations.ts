import { newId } from "../../schema/lib/ids.ts";
import { textProblem } from "../../schema/lib/limits.ts";
import { AGENT_SCOPES } from "../../schema/lib/scopes.ts";
import { hashClaimToken, newClaimToken, type StartedAttempt, startClaimAttempt } from "./claims.ts";
import { ASSERTION_LIFETIME_SECONDS } from "./keys.ts";
import { OAuthError, requiredString } from "./oauth.ts";
import type { AgentServices } from "./plugin.ts";
import { createSandbox } from "./sandbox.ts";

/** Where an agent starts (or restarts) the claim ceremony. */
export const CLAIM_ENDPOINT_PATH = "/agent/identity/claim";

/** A service_auth claim token outlives one 10-minute attempt, so the agent can start another. */
export const SERVICE_AUTH_CLAIM_TOKEN_TTL_SECONDS = 3600;

/** What an anonymous agent may do in its sandbox before a user claims it (docs/api/agents.md). */
export const PRE_CLAIM_SCOPES: readonly string[] = [
  ...["clients", "leads", "inventory", "invoices", "projects"].flatMap((r) => [`${r}.read`, `${r}.write`]),
  "payments.write",
];

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_AGENT_NAME = 100;

export function loginHint(value: unknown): string {
  if (typeof value !== "string" || textProblem(value, 254) !== null || !EMAIL.test(value.trim())) {
    throw new OAuthError(400, "invalid_login_hint", "login_hint must be the user's e-mail address.");
  }
  return value.trim().toLowerCase();
}

export function agentName(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") throw new OAuthError(400, "invalid_request", "agent_name must be a string.");
  return requiredString(value, "agent_name", MAX_AGENT_NAME).trim();
}

/** `scope` (space-separated) narrows what the agent asks for; agents.*, audit.read and unknown scopes are refused. */
export function requestedScopes(value: unknown): string[] {
  if (value === undefined || value === null) return [...AGENT_SCOPES];
  if (typeof value !== "string")
    throw new OAuthError(400, "invalid_request", "scope must be a space-separated string of scopes.");
  const scopes = [...new Set(value.split(" ").filter(Boolean))];
  if (scopes.length === 0)
    throw new OAuthError(
      400,
      "invalid_request",
      "scope names no scope; leave it out to ask for every scope.",
    );
  const refused = scopes.filter((scope) => !AGENT_SCOPES.includes(scope));
  if (refused.length > 0) {
    throw new OAuthError(
      400,
      "invalid_request",
      `scope holds scopes an agent cannot have: ${refused.join(", ")}. Agents may hold: ${AGENT_SCOPES.join(" ")}.`,
    );
  }
  return AGENT_SCOPES.filter((scope) => scopes.includes(scope));
}

/** Kontor's identity assertion for a registration: exchanged for access tokens at the token endpoint. */
export async function signIdentityAssertion(
  services: AgentServices,
  registrationId: string,
): Promise<{ assertion: string; expires: string }> {
  const expires = new Date(Date.now() + ASSERTION_LIFETIME_SECONDS * 1000);
  const assertion = await services.keys.sign(
    {},
    {
      issuer: services.hostUrl,
      audience: services.hostUrl,
      subject: registrationId,
      expiresInSeconds: ASSERTION_LIFETIME_SECONDS,
    },
  );
  return { assertion, expires: expires.toISOString() };
}

const claimUrl = (services: AgentServices) => `${services.hostUrl}${CLAIM_ENDPOINT_PATH}`;

/**
 * `service_auth`: a pending registration with no workspace, and a claim ceremony for the user the
 * agent names. The answer is the same whether or not that e-mail has an account: the workspace and
 * whether it lets agents in are settled when the user claims.
 */
export async function registerServiceAuth(body: Record<string, unknown>, services: AgentServices) {
  const hint = loginHint(body.login_hint);
  const name = agentName(body.agent_name);
  const postClaimScopes = requestedScopes(body.scope);
  const claim = newClaimToken();
  const claimExpiresAt = new Date(Date.now() + SERVICE_AUTH_CLAIM_TOKEN_TTL_SECONDS * 1000);
  const registration = await services.prisma.agentRegistration.create({
    data: {
      id: newId("agentRegistration"),
      type: "service_auth",
      status: "pending",
      agentName: name,
      loginHint: hint,
      scopes: [],
      postClaimScopes,
      claimTokenHash: claim.hash,
      claimExpiresAt,
    },
  });
  const attempt = await startClaimAttempt(services.prisma, {
    registrationId: registration.id,
    loginHint: hint,
    hostUrl: services.hostUrl,
  });
  return {
    registration_id: registration.id,
    registration_type: "service_auth",
    claim_url: claimUrl(services),
    claim_token: claim.token,
    claim_token_expires: claimExpiresAt.toISOString(),
    post_claim_scopes: postClaimScopes,
    claim: attempt.claim,
  };
}

/** `anonymous`: a sandbox workspace the agent works in at once, at pre-claim scopes. */
export async function registerAnonymous(body: Record<string, unknown>, services: AgentServices) {
  const name = agentName(body.agent_name);
  const claim = newClaimToken();
  const registrationId = newId("agentRegistration");
  const sandbox = await services.prisma.$transaction(async (tx) => {
    const workspace = await createSandbox(tx, name, services.config.maxSandboxes);
    await tx.agentRegistration.create({
      data: {
        id: registrationId,
        workspaceId: workspace.id,
        type: "anonymous",
        status: "pending",
        agentName: name,
        scopes: [...PRE_CLAIM_SCOPES],
        postClaimScopes: [...AGENT_SCOPES],
        claimTokenHash: claim.hash,
        // The claim token lives as long as the sandbox it can claim.
        claimExpiresAt: workspace.expiresAt,
      },
    });
    return workspace;
  });
  const { assertion, expires } = await signIdentityAssertion(services, registrationId);
  return {
    registration_id: registrationId,
    registration_type: "anonymous",
    identity_assertion: assertion,
    assertion_expires: expires,
    pre_claim_scopes: [...PRE_CLAIM_SCOPES],
    claim_url: claimUrl(services),
    claim_token: claim.token,
    claim_token_expires: sandbox.expiresAt.toISOString(),
    post_claim_scopes: [...AGENT_SCOPES],
  };
}

/**
 * `POST /agent/identity/claim`: starts a claim ceremony (a new code and link; earlier attempts end)
 * for a registration still waiting for its user. An anonymous agent names the user here; a
 * service_auth agent restarts the ceremony for the user it registered with.
 */
export async function startClaim(body: Record<string, unknown>, services: AgentServices) {
  if (body.type !== "login_hint") throw new OAuthError(400, "invalid_request", 'type must be "login_hint".');
  const token = requiredString(body.claim_token, "claim_token", 200);
  const hint = loginHint(body.login_hint);
  const registration = await services.prisma.agentRegistration.findUnique({
    where: { claimTokenHash: hashClaimToken(token) },
  });
  if (!registration || registration.revokedAt || registration.status === "revoked") {
    throw new OAuthError(400, "invalid_request", "The claim_token is unknown, already used or revoked.");
  }
  if (!registration.claimExpiresAt || registration.claimExpiresAt.getTime() <= Date.now()) {
    throw new OAuthError(400, "credential_expired", "The claim_token has expired; register again.");
  }
  if (registration.status === "active")
    throw new OAuthError(
      400,
      "invalid_request",
      "This registration is already claimed; redeem the claim_token at the token endpoint.",
    );
  if (registration.status === "denied")
    throw new OAuthError(400, "invalid_request", "The user denied this registration; register again.");
  if (registration.type === "service_auth" && registration.loginHint !== hint) {
    throw new OAuthError(
      400,
      "invalid_login_hint",
      "login_hint must be the e-mail address this agent registered with.",
    );
  }
  if (registration.type === "anonymous") {
    await services.prisma.agentRegistration.update({
      where: { id: registration.id },
      data: { loginHint: hint },
    });
  }
  const attempt: StartedAttempt = await startClaimAttempt(services.prisma, {
    registrationId: registration.id,
    loginHint: hint,
    hostUrl: services.hostUrl,
  });
  return {
    registration_id: registration.id,
    registration_type: registration.type,
    status: "initiated",
    expires_at: new Date(Date.now() + attempt.claim.expires_in * 1000).toISOString(),
    claim_attempt: attempt.claim,
    claim: attempt.claim,
  };
}
