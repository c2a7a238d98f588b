import {
  createMcpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
} from "@modelcontextprotocol/server";
import type { Plugin } from "graphql-yoga";
import { isApiError } from "../../schema/lib/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { log } from "../observability/log.ts";
import { BODY_LIMITS } from "../policies/body-limits.ts";
import { callTool } from "./calls.ts";
import { serveJsonExchange } from "./json-exchange.ts";
import type { McpServices } from "./plugin.ts";
import { listResources, type McpResource } from "./resources.ts";
import {
  describeTool,
  narrowedTools,
  offeredTools,
  pageOf,
  type ToolNarrowing,
  toolNarrowing,
} from "./tools.ts";

/** Yoga's `onRequest` hook, as `/mcp` answers it. */
export type McpRequestHook = NonNullable<Plugin["onRequest"]>;

const SERVER_INFO = { name: "kontor", title: "Kontor", version: "1.0.0" };

const INSTRUCTIONS =
  "Kontor is a small business's workspace: clients and leads (crm), invoices, quotes and payments (invoicing), " +
  "inventory, projects and tasks, file storage, webhooks, request logs and agents. Each tool is one API operation " +
  "run as your credential; list_* tools page with limit and cursor. Write tools take an optional idempotency_key " +
  "that makes a retry safe. A refused call answers isError with the API's error body (code, message, param).";

/** `resources/read` over ./documents.ts. */
function readResource(resources: readonly McpResource[], uri: string) {
  const resource = resources.find((candidate) => candidate.uri === uri);
  if (!resource) throw new ResourceNotFoundError(uri, `There is no resource ${uri}: see resources/list.`);
  return { contents: [{ uri, mimeType: resource.mimeType, text: resource.text() }] };
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
    return callTool(tool, args ?? {}, state, services.contextFor(state), schema, services.idempotency);
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
 * `POST /mcp`'s answer, which ./plugin.ts `useMcp` loads on the first such request: the SDK's
 * `Server` for each request, the 2026-07-28 revision through the SDK's handler, 2025-era requests
 * through ./json-exchange.ts.
 */
export function mcpHandler(services: McpServices): McpRequestHook {
  /** What the SDK's factory needs of the request it is handed back (`requestInfo`, the Request given to `fetch`). */
  const served = new WeakMap<Request, { state: RequestState; narrowing: ToolNarrowing }>();
  const factory = ({ requestInfo }: { requestInfo?: Request }) => {
    const request = requestInfo && served.get(requestInfo);
    if (!request) throw new Error("The MCP SDK asked for a server for a request it was not handed.");
    return serverFor(request.state, request.narrowing, services);
  };
  // The 2026-07-28 revision through the SDK's entry; 2025-era requests (classified by the SDK's own
  // isLegacyRequest) statelessly, answered as JSON (./json-exchange.ts).
  const modern = createMcpHandler(factory, {
    legacy: "reject",
    maxRequestBodySize: BODY_LIMITS.api,
    onerror: (error) => log("warn", "mcp request refused", { error: error.message }),
  });
  return async ({ request, url, serverContext, endResponse, fetchAPI }) => {
    const state = stateOf(serverContext);
    let narrowing: ToolNarrowing;
    try {
      narrowing = toolNarrowing(url, services.schema());
    } catch (error) {
      if (isApiError(error)) return endResponse(errorResponse(error, url.pathname, state));
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
      const answer = await serveJsonExchange(request, body?.value, serverFor(state, narrowing, services));
      return endResponse(
        new fetchAPI.Response(answer.body === null ? null : JSON.stringify(answer.body), {
          status: answer.status,
          headers: { "content-type": "application/json" },
        }),
      );
    }
    served.set(request, { state, narrowing });
    const response = await modern.fetch(request, body && { parsedBody: body.value });
    const answer = response.body ? await response.text() : null;
    endResponse(new fetchAPI.Response(answer, { status: response.status, headers: response.headers }));
  };
}
