import type { GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Context } from "../../schema/context.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import type { IdempotencyStore } from "../policies/idempotency-store.ts";
import type { Config } from "../runtime/config.ts";
import { MCP_PATH } from "./path.ts";
import type { McpResource } from "./resources.ts";
import type { McpRequestHook } from "./serve.ts";

const methodNotAllowed = (method: string) =>
  new ApiError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `${method} is not allowed on /mcp: send JSON-RPC with POST.`,
    {
      headers: { Allow: "POST" },
    },
  );

const foreignOrigin = (origin: string) =>
  new ApiError(
    403,
    "permission_error",
    "origin_not_allowed",
    `Requests from the origin '${origin}' may not call /mcp: only this deployment's own origin and those in KONTOR_MCP_ALLOWED_ORIGINS may.`,
  );

/**
 * The checks of `/mcp` that come before any credential (server/app.ts registers it before
 * authentication): POST only (405 `Allow: POST`, also for a 2025 client's GET stream and DELETE),
 * and an `Origin`, when sent, that is this deployment's or one allowed (403 otherwise: a page of
 * another site must not drive a user's local agent). A request without Origin is served.
 */
export function useMcpGuard(config: Config): Plugin {
  const allowed = new Set([new URL(config.publicUrl).origin, ...config.mcpAllowedOrigins]);
  return {
    onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname !== MCP_PATH) return;
      const state = stateOf(serverContext);
      state.route = MCP_PATH;
      if (request.method !== "POST")
        return endResponse(errorResponse(methodNotAllowed(request.method), url.pathname, state));
      const origin = request.headers.get("origin");
      if (origin !== null && !allowed.has(origin))
        return endResponse(errorResponse(foreignOrigin(origin), url.pathname, state));
    },
  };
}

export interface McpServices {
  schema: () => GraphQLSchema;
  contextFor: (state: RequestState) => Context;
  idempotency: IdempotencyStore;
  /** The documents `resources/read` serves. */
  resources: readonly McpResource[];
}

/**
 * `POST /mcp`: a stateless Model Context Protocol server (Streamable HTTP, the 2026-07-28 revision
 * and 2025-era clients) whose tools are the API's operations (server/tools/catalog.ts). It runs
 * after authentication, the rate limits and the body limit, like `/graphql`: a tool call is one
 * request of its credential, logged with the tool's name.
 */
export function useMcp(services: McpServices): Plugin {
  // The MCP SDK (and zod, which it brings) is loaded by the first request to /mcp, not at start:
  // a process that serves none never holds it (docs/performance.md#memory).
  let handler: Promise<McpRequestHook> | undefined;
  return {
    async onRequest(payload) {
      if (payload.url.pathname !== MCP_PATH) return;
      handler ??= import("./serve.ts").then(({ mcpHandler }) => mcpHandler(services));
      return (await handler)(payload);
    },
  };
}
