import {
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
} from "@modelcontextprotocol/server";
import type { GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";
import type { Context } from "../../schema/context.ts";
import { ApiError, isApiError } from "../../schema/lib/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, requestState } from "../http/request-state.ts";
import { log } from "../observability/log.ts";
import { BODY_LIMITS } from "../policies/body-limits.ts";
import type { IdempotencyStore } from "../policies/idempotency-store.ts";
import type { Config } from "../runtime/config.ts";
import { callTool } from "./calls.ts";
import { serveJsonExchange } from "./json-exchange.ts";
import { MCP_PATH } from "./path.ts";
import { listResources, type McpResource, readResource } from "./resources.ts";
import {
  describeTool,
  narrowedTools,
  offeredTools,
  pageOf,
  type ToolNarrowing,
  toolNarrowing,
} from "./tools.ts";

const SERVER_INFO = { name: "kontor", title: "Kontor", version: "1.0.0" };

const INSTRUCTIONS =
  "Kontor is a small business's workspace: clients and leads (crm), invoices, quotes and payments (invoicing), " +
  "inventory, projects and tasks, file storage, webhooks, request logs and agents. Each tool is one API operation " +
  "run as your credential; list_* tools page with limit and cursor. Write tools take an optional idempotency_key " +
  "that makes a retry safe. A refused call answers isError with the API's error body (code, message, param).";

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
    onRequest({ request, url, endResponse }) {
      if (url.pathname !== MCP_PATH) return;
      requestState()!.route = MCP_PATH;
      if (request.method !== "POST")
        return endResponse(errorResponse(methodNotAllowed(request.method), url.pathname));
      const origin = request.headers.get("origin");
      if (origin !== null && !allowed.has(origin))
        return endResponse(errorResponse(foreignOrigin(origin), url.pathname));
    },
  };
}

interface McpServices {
  schema: () => GraphQLSchema;
  contextFor: (state: RequestState) => Context;
  idempotency: IdempotencyStore;
  /** The documents `resources/read` serves. */
  resources: readonly McpResource[];
}

/** An MCP server for one request: the caller's tools, narrowed by the URL, over the GraphQL schema. */
function serverFor(state: RequestState, narrowing: ToolNarrowing, services: McpServices): Server {
  const schema = services.schema();
  const credential = state.credential!;
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: {}, resources: {} },
    instructions: INSTRUCTIONS,
  });
  server.setRequestHandler("resources/list", async () => listResources(services.resources));
  server.setRequestHandler("resources/read", async (request) =>
    readResource(services.resources, request.params.uri),
  );
  server.setRequestHandler("tools/list", async (request) => {
    const tools = offeredTools(schema, credential.scopes, narrowing);
    try {
      const { page, nextCursor } = pageOf(tools, request.params?.cursor);
      return { tools: page.map(describeTool), ...(nextCursor && { nextCursor }) };
    } catch (error) {
      if (isApiError(error)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, error.message);
      throw error;
    }
  });
  server.setRequestHandler("tools/call", async (request) => {
    const { name, arguments: args } = request.params;
    const tool = narrowedTools(schema, narrowing).find((candidate) => candidate.name === name);
    if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
    state.tool = tool.name;
    return callTool(tool, args ?? {}, services.contextFor(state), schema, services.idempotency);
  });
  return server;
}

/**
 * The (buffered) body parsed once, so the SDK reads it no more (`parsedBody`); undefined when it is not
 * JSON, which the SDK then answers itself (-32700).
 */
async function parsedBody(request: Request): Promise<{ value: unknown } | undefined> {
  try {
    return { value: JSON.parse(await request.text()) };
  } catch {
    return undefined;
  }
}

/**
 * `POST /mcp`: a stateless Model Context Protocol server (Streamable HTTP, the 2026-07-28 revision
 * and 2025-era clients) whose tools are the API's operations (server/tools/catalog.ts). It runs
 * after authentication, the rate limits and the body limit, like `/graphql`: a tool call is one
 * request of its credential, logged with the tool's name.
 */
export function useMcp(services: McpServices): Plugin {
  const narrowings = new WeakMap<RequestState, ToolNarrowing>();
  const factory = () => {
    const state = requestState()!;
    return serverFor(state, narrowings.get(state)!, services);
  };
  // The 2026-07-28 revision through the SDK's entry; 2025-era requests (classified by the SDK's own
  // isLegacyRequest) statelessly, answered as JSON (./json-exchange.ts).
  const modern = createMcpHandler(factory, {
    legacy: "reject",
    maxRequestBodySize: BODY_LIMITS.api,
    onerror: (error) => log("warn", "mcp request refused", { error: error.message }),
  });
  return {
    async onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== MCP_PATH) return;
      const state = requestState()!;
      try {
        narrowings.set(state, toolNarrowing(url, services.schema()));
      } catch (error) {
        if (isApiError(error)) return endResponse(errorResponse(error, url.pathname));
        throw error;
      }
      const body = await parsedBody(request);
      // A batch (a JSON array): the 2025-06-18 revision dropped them, and no client sends one.
      if (Array.isArray(body?.value))
        return endResponse(
          Response.json(
            {
              jsonrpc: "2.0",
              id: null,
              error: {
                code: ProtocolErrorCode.InvalidRequest,
                message: "Invalid Request: send one JSON-RPC message per request; batches are not served.",
              },
            },
            { status: 400 },
          ),
        );
      // Read to its end here: the call has then run, so its log row, error code and webhook wake-up
      // (set as it runs) are known when the response hooks see it. Results are bounded (64 KiB a call).
      if (await isLegacyRequest(request, body?.value)) {
        const answer = await serveJsonExchange(request, body?.value, factory());
        return endResponse(
          new fetchAPI.Response(answer.body === null ? null : JSON.stringify(answer.body), {
            status: answer.status,
            headers: { "content-type": "application/json" },
          }),
        );
      }
      const response = await modern.fetch(request, body && { parsedBody: body.value });
      const answer = response.body ? await response.text() : null;
      endResponse(new fetchAPI.Response(answer, { status: response.status, headers: response.headers }));
    },
  };
}
