import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS, PLANS, type PlanName } from "../../schema/lib/plans.ts";
import { isDashboardFile } from "../dashboard/static.ts";
import { clientAddress } from "../http/client-address.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { HEALTH_PATH } from "../http/well-known.ts";
import type { Config } from "../runtime/config.ts";
import { LeasedLimiter } from "./leased-limiter.ts";

const WINDOW_SECONDS = 60;

interface Quota {
  plan: PlanName;
  limit: number;
  remaining: number;
  msBeforeReset: number;
  exceeded: boolean;
  /** Counted in the plan's AI column (general AI on /v1/responses) rather than its requests. */
  ai: boolean;
}

/** docs/api/limits.md: general AI (POST /v1/responses with ai.responses) has its own per-minute column. */
function isGeneralAi(request: Request, state: RequestState): boolean {
  if (request.method !== "POST" || !state.credential?.scopes.has("ai.responses")) return false;
  const path = new URL(request.url).pathname.replace(/\/$/, "");
  return path === "/v1/responses";
}

type Column = "requests_per_minute" | "ai_requests_per_minute";

/** A per-key counter: resolves with what is left, rejects with a RateLimiterRes past the limit. */
type Limiter = Pick<RateLimiterMemory, "consume">;

function createLimiter(plan: PlanName, column: Column, redis: Redis | undefined, namespace: string): Limiter {
  const points = PLAN_LIMITS[plan][column];
  const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS });
  if (!redis) return memory;
  return new LeasedLimiter({
    redis,
    keyPrefix: `${namespace}${column === "requests_per_minute" ? "ratelimit" : "ratelimit-ai"}:${plan}`,
    points,
    duration: WINDOW_SECONDS,
    // While Redis is unreachable each process limits on its own rather than failing every request.
    insuranceLimiter: memory,
  });
}

const addressLimited = (limit: number, msBeforeNext: number, pathname: string, state: RequestState) => {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  const error = new ApiError(
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
    `This address sent more than ${limit} requests this minute, the most one address may, keyed or not. Retry after ${retryAfter} seconds.`,
    { headers: { "Retry-After": String(retryAfter) } },
  );
  return errorResponse(error, pathname, state);
};

/**
 * docs/api/limits.md#traffic-policies: every request of a client address (the socket's peer, or what a
 * trusted proxy says) counts here first — before its credential is looked up, before its body is
 * read — whether it carries a key or not, at `addressRequestsPerMinute` (far above any plan's rate:
 * it stops floods, not clients). Past it, 429 `rate_limit_exceeded` with Retry-After and nothing
 * else runs: no lookup, no body, no request log row (`unlogged`), so a flood never reaches the
 * database. `GET /health` is not counted; CORS preflights are answered before it. Once an address
 * is over, each process remembers it until the minute ends, so the flood costs Redis nothing either.
 */
export function useAddressLimit(config: Config, redis: Redis | undefined, redisNamespace: string): Plugin {
  const points = config.early.addressRequestsPerMinute;
  const memory = new RateLimiterMemory({ points, duration: WINDOW_SECONDS });
  const limiter: Limiter = redis
    ? new LeasedLimiter({
        redis,
        keyPrefix: `${redisNamespace}ratelimit-address`,
        points,
        duration: WINDOW_SECONDS,
        insuranceLimiter: memory,
      })
    : memory;
  return {
    async onRequest({ url, serverContext, endResponse }) {
      if (url.pathname === HEALTH_PATH) return;
      try {
        await limiter.consume(`ip:${clientAddress(serverContext, config) ?? "unknown"}`);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        const state = stateOf(serverContext);
        state.unlogged = true;
        endResponse(addressLimited(points, rejection.msBeforeNext, url.pathname, state));
      }
    },
  };
}

const tooManyRequests = (quota: Quota, pathname: string, state: RequestState) => {
  const retryAfter = Math.max(1, Math.ceil(quota.msBeforeReset / 1000));
  const error = new ApiError(
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
    `Rate limit of ${quota.limit} ${quota.ai ? "AI " : ""}requests per minute (${quota.plan} plan) exceeded. Retry after ${retryAfter} seconds.`,
    { headers: { "Retry-After": String(retryAfter) } },
  );
  return errorResponse(error, pathname, state);
};

/**
 * docs/api/limits.md: requests per credential per minute by plan. Requests without a credential
 * (401s, public documents) count per client IP at the free plan's rate. Every response carries
 * the X-RateLimit-* headers, but for `/health` (never limited) and the dashboard's files. A refusal
 * is rendered by errorResponse, so each family of routes answers it in its own error shape.
 */
export function useRateLimit(config: Config, redis: Redis | undefined, redisNamespace: string): Plugin {
  const limiters = Object.fromEntries(
    PLANS.map((plan) => [plan, createLimiter(plan, "requests_per_minute", redis, redisNamespace)]),
  ) as Record<PlanName, Limiter>;
  const aiLimiters = Object.fromEntries(
    PLANS.map((plan) => [plan, createLimiter(plan, "ai_requests_per_minute", redis, redisNamespace)]),
  ) as Record<PlanName, Limiter>;
  const quotas = new WeakMap<RequestState, Quota>();

  async function count(state: RequestState, request: Request, serverContext: unknown): Promise<Quota> {
    const credential = state.credential;
    const ai = isGeneralAi(request, state);
    const plan = credential?.plan ?? "free";
    // The client's address: the socket's peer, or what a trusted proxy says (KONTOR_TRUST_PROXY).
    const key = credential
      ? `credential:${credential.id}`
      : `ip:${clientAddress(serverContext, config) ?? "unknown"}`;
    let result: RateLimiterRes;
    let exceeded = false;
    try {
      result = await (ai ? aiLimiters : limiters)[plan].consume(key);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      result = rejection;
      exceeded = true;
    }
    const quota = {
      plan,
      limit: PLAN_LIMITS[plan][ai ? "ai_requests_per_minute" : "requests_per_minute"],
      remaining: result.remainingPoints,
      msBeforeReset: result.msBeforeNext,
      exceeded,
      ai,
    };
    quotas.set(state, quota);
    return quota;
  }

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname === HEALTH_PATH) return;
      const state = stateOf(serverContext);
      const quota = await count(state, request, serverContext);
      if (quota.exceeded) endResponse(tooManyRequests(quota, url.pathname, state));
    },
    async onResponse({ request, response, serverContext, setResponse }) {
      const state = stateOf(serverContext);
      let quota = quotas.get(state);
      // The dashboard's page and hashed files are not API requests (a page load fetches several);
      // the liveness check answers 200 however often a probe (or anyone) asks, and counts nothing.
      // Nor is a request the per-address limit refused: it never got this far.
      if (
        !quota &&
        (state.unlogged || isDashboardFile(state) || new URL(request.url).pathname === HEALTH_PATH)
      )
        return;
      if (!quota) {
        // Answered before onRequest above ran (a 401, a well-known document): counted here instead.
        quota = await count(state, request, serverContext);
        if (quota.exceeded) {
          response = tooManyRequests(quota, new URL(request.url).pathname, state);
          state.errorCode = "rate_limit_exceeded";
          // useRequestId's onResponse has already run, on the response this one replaces.
          response.headers.set("X-Request-Id", state.id);
          setResponse(response);
        }
      }
      response.headers.set("X-RateLimit-Limit", String(quota.limit));
      response.headers.set("X-RateLimit-Remaining", String(quota.remaining));
      response.headers.set("X-RateLimit-Reset", String(Math.ceil((Date.now() + quota.msBeforeReset) / 1000)));
      response.headers.set("X-RateLimit-Plan", quota.plan);
    },
  };
}
