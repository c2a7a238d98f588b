import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";
import { registerIdentityAssertion } from "./id-jag.ts";
import { AGENT_PATHS, CREDENTIAL_TYPES } from "./metadata.ts";
import { OAuthError, oauthJson, readJsonObject } from "./oauth.ts";
import { type AgentHandler, type AgentServices, agentRoutes } from "./plugin.ts";
import { CLAIM_ENDPOINT_PATH, registerAnonymous, registerServiceAuth, startClaim } from "./registrations.ts";
import { assertionGrant } from "./token.ts";

export const IDENTITY_ENDPOINT_PATH = "/agent/identity";
const TYPES = ["service_auth", "anonymous", "identity_assertion"];

const limiters = new WeakMap<AgentServices, RateLimiterAbstract>();

async function countAnonymous(services: AgentServices, ip: string): Promise<void> {
  let limiter = limiters.get(services);
  if (!limiter) {
    // Each anonymous registration makes a workspace: KONTOR_ANONYMOUS_AGENTS_PER_HOUR per client address.
    const options = { points: services.config.anonymousAgentsPerHour, duration: 3600 };
    const memory = new RateLimiterMemory(options);
    limiter = services.redis
      ? new RateLimiterRedis({
          ...options,
          storeClient: services.redis,
          keyPrefix: `${services.redisNamespace}agent-anonymous`,
          insuranceLimiter: memory,
        })
      : memory;
    limiters.set(services, limiter);
  }
  try {
    await limiter.consume(ip);
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    throw new OAuthError(
      429,
      "rate_limit_exceeded",
      `At most ${services.config.anonymousAgentsPerHour} anonymous registrations an hour from one address; retry in ${retryAfter} seconds.`,
      {},
      { "Retry-After": String(retryAfter) },
    );
  }
}

/** `POST /agent/identity` (and its auth.md reference alias `/agent/auth`): registration, by `type`. */
const register: AgentHandler = async (request, services, _url, client) => {
  const body = await readJsonObject(request);
  const requested = requestedCredential(body.requested_credential_type);
  switch (body.type) {
    case "service_auth":
      if (!services.config.serviceAuthAgents) {
        throw new OAuthError(
          400,
          "service_auth_not_enabled",
          "This deployment does not take service_auth registrations.",
        );
      }
      // No assertion at once (the user confirms first): the claim grant hands out the token.
      return oauthJson(await registerServiceAuth(body, services));
    case "anonymous":
      if (services.config.anonymousAgentsPerHour === 0) {
        throw new OAuthError(
          400,
          "anonymous_not_enabled",
          "This deployment does not take anonymous registrations.",
        );
      }
      await countAnonymous(services, client.ip);
      return withCredential(oauthJson(await registerAnonymous(body, services)), requested, services);
    case "identity_assertion":
      return withCredential(await registerIdentityAssertion(body, services), requested, services);
    default:
      throw new OAuthError(400, "invalid_request", `type must be one of ${TYPES.join(", ")}.`);
  }
};

/** `requested_credential_type`: absent, or one of CREDENTIAL_TYPES. */
function requestedCredential(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === "string" && (CREDENTIAL_TYPES as readonly string[]).includes(value)) return true;
  throw new OAuthError(
    400,
    "invalid_request",
    `requested_credential_type must be ${CREDENTIAL_TYPES.join(" or ")}.`,
  );
}

/**
 * An answer that hands out an identity assertion gets, when the agent asked for one, an access token
 * too (`credential`): the one the token endpoint's jwt-bearer grant would issue for that assertion,
 * with the same scopes, caps and lifetime (docs/api/agents.md).
 */
async function withCredential(
  response: Response,
  requested: boolean,
  services: AgentServices,
): Promise<Response> {
  if (!requested || response.status !== 200) return response;
  const body = (await response.clone().json()) as Record<string, unknown>;
  if (typeof body.identity_assertion !== "string") return response;
  const granted = await assertionGrant(body.identity_assertion, services);
  return oauthJson({
    ...body,
    credential: granted.access_token,
    credential_type: "access_token",
    credential_expires: new Date(Date.now() + granted.expires_in * 1000).toISOString(),
  });
}

agentRoutes({
  [IDENTITY_ENDPOINT_PATH]: { POST: register },
  [AGENT_PATHS.register]: { POST: register },
  [CLAIM_ENDPOINT_PATH]: {
    POST: async (request, services) => oauthJson(await startClaim(await readJsonObject(request), services)),
  },
});
