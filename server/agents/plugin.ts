import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import type { Revocations } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { clientAddress } from "../http/client-address.ts";
import { type ErrorShape, routeErrorShape } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { describeError, log } from "../observability/log.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import type { SigningKeys } from "./keys.ts";
import { OAuthError, oauthErrorResponse, oauthJson } from "./oauth.ts";

/** What the agent endpoints work with. */
export interface AgentServices {
  config: Config;
  prisma: PrismaClient;
  keys: SigningKeys;
  /** Undefined without REDIS_URL: state then lives in the database or in process. */
  redis: Redis | undefined;
  /** The deployment's Redis key prefix (server/runtime/redis.ts). */
  redisNamespace: string;
  /** Tells every process that tokens or registrations were revoked, after the write committed. */
  revocations: Revocations;
  /** `{host_url}` and `{base_url}` of this deployment. */
  hostUrl: string;
  baseUrl: string;
}

/** Who sent the request: its client address (server/http/client-address.ts: the socket's peer, or what a trusted proxy says). */
export interface AgentClient {
  ip: string;
  /** The request's state: its id and client, which the audit records it makes carry. */
  state: RequestState;
}

export type AgentHandler = (
  request: Request,
  services: AgentServices,
  url: URL,
  client: AgentClient,
) => Promise<Response>;

/** One path of the protocol: its handler for each method. */
export type AgentRoutes = Record<string, Partial<Record<"GET" | "POST", AgentHandler>>>;

/** The paths of the agent-registration protocol (all at `{host_url}`, none under `/v1`). */
const ROUTES: AgentRoutes = {};

/** Adds the handlers of one endpoint module (called at import time by server/agents/index.ts). */
export function agentRoutes(routes: AgentRoutes): void {
  for (const [path, handlers] of Object.entries(routes)) ROUTES[path] = { ...ROUTES[path], ...handlers };
}

/** The protocol's paths: what the handlers answer and what is answered before them share one shape. */
const AGENT_PATHS = /^\/(oauth2|agent)\//;

/** The paths whose errors are not RFC 6749-shaped (the SET receiver's RFC 8935 `{err, description}`). */
const ERROR_SHAPES: Record<string, ErrorShape> = {};

/** Declares the error shape of `path` when it is not RFC 6749's (called at import time, as agentRoutes). */
export function agentErrorShape(path: string, render: ErrorShape): void {
  ERROR_SHAPES[path] = render;
}

/** RFC 6749 §5.2's `{"error", "error_description"}`, never cached (§5.1), its headers (Retry-After…) kept. */
const oauthShape: ErrorShape = (error, _pathname, requestId) =>
  oauthJson(
    { error: error.code, error_description: error.message, ...(requestId && { request_id: requestId }) },
    error.status,
    error.headers,
  );

// An error raised before a handler runs (the per-address rate limit's 429, a 413 of the body limit)
// is answered as the path's handler answers its own.
routeErrorShape(
  (pathname) => AGENT_PATHS.test(pathname),
  (error, pathname, requestId) => (ERROR_SHAPES[pathname] ?? oauthShape)(error, pathname, requestId),
);

/**
 * The auth.md agent-registration protocol over OAuth 2.0: discovery, registration, the claim page,
 * the token and revocation endpoints. These paths are public (the protocol authenticates by its own
 * means); errors are RFC 6749-shaped, never the /v1 envelope.
 */
export function useAgentAuth(services: Omit<AgentServices, "hostUrl" | "baseUrl">): Plugin {
  const full: AgentServices = {
    ...services,
    hostUrl: services.config.publicUrl,
    baseUrl: baseUrl(services.config),
  };
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const handlers = ROUTES[url.pathname];
      if (!handlers) return;
      const state = stateOf(serverContext);
      state.route = url.pathname;
      const handler =
        handlers[request.method as "GET" | "POST"] ?? (request.method === "HEAD" ? handlers.GET : undefined);
      try {
        if (!handler) {
          const allow = Object.keys(handlers).join(", ");
          throw new OAuthError(
            405,
            "method_not_allowed",
            `${request.method} is not allowed on ${url.pathname}; use ${allow}.`,
            {},
            { Allow: allow },
          );
        }
        endResponse(
          await handler(request, full, url, {
            ip: clientAddress(serverContext, full.config) ?? "unknown",
            state,
          }),
        );
      } catch (error) {
        if (error instanceof OAuthError) {
          state.errorCode = error.code;
          return endResponse(oauthErrorResponse(error, state.id));
        }
        log("error", "agent endpoint failed", { request_id: state.id, ...describeError(error) });
        state.errorCode = "server_error";
        endResponse(
          oauthErrorResponse(
            new OAuthError(
              500,
              "server_error",
              "An unexpected error occurred. Quote the request id when reporting it.",
            ),
            state.id,
          ),
        );
      }
    },
  };
}
