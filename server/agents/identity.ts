import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";
import { registerIdentityAssertion } from "./id-jag.ts";
import { OAuthError, oauthJson, readJsonObject } from "./oauth.ts";
import { type AgentServices, agentRoutes } from "./plugin.ts";
import { CLAIM_ENDPOINT_PATH, registerAnonymous, registerServiceAuth, startClaim } from "./registrations.ts";

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

agentRoutes({
  [IDENTITY_ENDPOINT_PATH]: {
    POST: async (request, services, _url, client) => {
      const body = await readJsonObject(request);
      switch (body.type) {
        case "service_auth":
          if (!services.config.serviceAuthAgents) {
            throw new OAuthError(
              400,
              "service_auth_not_enabled",
              "This deployment does not take service_auth registrations.",
            );
          }
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
          return oauthJson(await registerAnonymous(body, services));
        case "identity_assertion":
          return registerIdentityAssertion(body, services);
        default:
          throw new OAuthError(400, "invalid_request", `type must be one of ${TYPES.join(", ")}.`);
      }
    },
  },
  [CLAIM_ENDPOINT_PATH]: {
    POST: async (request, services) => oauthJson(await startClaim(await readJsonObject(request), services)),
  },
});
