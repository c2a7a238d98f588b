import {
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  Kind,
} from "graphql";
import type { FetchAPI, Plugin } from "graphql-yoga";
import { ApiError, internalError, isApiError } from "../../schema/lib/errors.ts";
import { MAX_JSON_DEPTH } from "../../schema/lib/limits.ts";
import { restView } from "../../schema/lib/rest.ts";
import { reportMaskedErrors } from "../graphql/errors.ts";
import { errorResponse, findApiError, restErrorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { describeError, log } from "../observability/log.ts";
import type { Config } from "../runtime/config.ts";
import { restVariables } from "./input.ts";
import { buildOpenApi, type OpenApiExtension } from "./openapi.ts";
import { sofaOperations } from "./operations.ts";
import { matchRoute, pathExists, type RouteEntry, routeTable } from "./view.ts";

export const REST_BASE = "/v1";

const unsupportedMediaType = () =>
  new ApiError(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    "Send the body as JSON with 'Content-Type: application/json'.",
  );
const invalidJson = (detail: string) =>
  new ApiError(400, "invalid_request_error", "invalid_json", `The request body is not valid JSON: ${detail}`);
const notFoundRoute = (method: string, path: string) =>
  new ApiError(404, "invalid_request_error", "not_found", `No route ${method} ${path}.`);

/** Sofa reports several errors at once; the REST answer is the most severe of them. */
function sofaErrorResponse(errors: ReadonlyArray<Error>, state: RequestState): Response {
  reportMaskedErrors(errors, state.id);
  const known = errors.map(findApiError).filter((error) => error !== undefined);
  const worst = known.sort((a, b) => b.status - a.status)[0];
  if (!worst) log("error", "unhandled error", { request_id: state.id, ...describeError(errors[0]) });
  return restErrorResponse(worst ?? internalError(), state);
}

/** How deeply objects and arrays nest in a parsed JSON value (walked without recursion). */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) break;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}

async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const text = await request.clone().text();
  if (text.trim() === "") return {};
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) throw unsupportedMediaType();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw invalidJson((error as Error).message);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(
      400,
      "invalid_request_error",
      "validation_failed",
      "The request body must be a JSON object.",
    );
  }
  if (nestingDepth(body) > MAX_JSON_DEPTH) {
    throw new ApiError(
      400,
      "invalid_request_error",
      "validation_failed",
      `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`,
    );
  }
  return body as Record<string, unknown>;
}

interface Enveloped {
  contextFactory: (context: unknown) => unknown;
  execute: (args: ExecutionArgs) => unknown;
}

/** The operation Sofa generates for a route: every field of the REST type, models as `{id}`. */
interface RouteOperation {
  document: DocumentNode;
  operationName: string | undefined;
  fieldName: string;
  status: number;
  /** The route template the request is logged under (`/v1/leads/{id}`). */
  template: string;
}

/** Sofa's operation for every route, built once per schema with Sofa's own settings (models, depth). */
function routeOperations(view: GraphQLSchema, table: RouteEntry[]): Map<string, RouteOperation> {
  const nodes = sofaOperations(view, table);
  const operations = new Map<string, RouteOperation>();
  for (const entry of table) {
    const fieldName = entry.key.split(".")[1]!;
    const node = nodes.get(entry.key)!;
    operations.set(entry.key, {
      document: { kind: Kind.DOCUMENT, definitions: [node] },
      operationName: node.name?.value,
      fieldName,
      status: entry.route.status,
      template: `${REST_BASE}${entry.route.path.replace(/:(\w+)/g, "{$1}")}`,
    });
  }
  return operations;
}

/**
 * The `/v1` REST facade: Sofa generates the routes from the fields that declare one (see
 * schema/lib/rest.ts). This layer adds what Sofa lacks: strict input validation, 404/405/415,
 * errors in the API's shape, and a corrected OpenAPI document.
 */
export function useRest(config: Config, openApiExtensions: OpenApiExtension[] = []): Plugin {
  let table: RouteEntry[] = [];
  let operations = new Map<string, RouteOperation>();
  let openApi: unknown;
  let getEnveloped: (context: unknown) => Enveloped;
  let fullSchema: GraphQLSchema;

  /**
   * Runs a route's operation as Sofa's handler would (same document, context and error handler),
   * with the variables validated above. Sofa's own router is not on the request path: it matched
   * the route again (URLPattern), read the body again, parsed the query string for variables that
   * were then replaced, and answered with a Response of its own fetch implementation, which Yoga
   * then had to copy; together about 5 % of the CPU of a GET /v1/leads/{id}.
   */
  async function run(
    operation: RouteOperation,
    request: Request,
    serverContext: object,
    variableValues: Record<string, unknown>,
    fetchAPI: FetchAPI,
  ) {
    try {
      const sofaContext = Object.assign(serverContext, { request });
      const enveloped = getEnveloped(sofaContext);
      const contextValue = await enveloped.contextFactory(sofaContext);
      const result = (await enveloped.execute({
        schema: fullSchema,
        document: operation.document,
        contextValue,
        variableValues,
        operationName: operation.operationName,
      })) as ExecutionResult;
      if (result.errors) return sofaErrorResponse(result.errors, stateOf(serverContext));
      return fetchAPI.Response.json(result.data?.[operation.fieldName], { status: operation.status });
    } catch (error) {
      return sofaErrorResponse([error as Error], stateOf(serverContext));
    }
  }

  return {
    onYogaInit({ yoga }) {
      getEnveloped = yoga.getEnveloped as unknown as typeof getEnveloped;
    },
    onSchemaChange({ schema }) {
      fullSchema = schema;
      const view = restView(schema);
      table = routeTable(view);
      operations = routeOperations(view, table);
      // Built on its first request: most processes never serve it, and it was 3 % of a start's CPU.
      openApi = undefined;
    },
    async onRequest({ request, url, endResponse, serverContext, fetchAPI }) {
      if (url.pathname !== REST_BASE && !url.pathname.startsWith(`${REST_BASE}/`)) return;
      if (url.pathname === `${REST_BASE}/openapi.json` && request.method === "GET") {
        openApi ??= buildOpenApi(table, config, openApiExtensions);
        return endResponse(Response.json(openApi));
      }
      const state = stateOf(serverContext);
      let matched: ReturnType<typeof matchRoute>;
      try {
        matched = matchRoute(table, request.method, url.pathname);
      } catch (error) {
        if (!isApiError(error)) throw error;
        return endResponse(errorResponse(error, url.pathname, state));
      }
      if (!matched) {
        const allowed = pathExists(table, url.pathname);
        if (allowed.length > 0) {
          const error = new ApiError(
            405,
            "invalid_request_error",
            "method_not_allowed",
            `${request.method} is not allowed on ${url.pathname}.`,
            {
              headers: { Allow: allowed.join(", ") },
            },
          );
          return endResponse(errorResponse(error, url.pathname, state));
        }
        return endResponse(errorResponse(notFoundRoute(request.method, url.pathname), url.pathname, state));
      }
      const operation = operations.get(matched.entry.key)!;
      state.route = operation.template;
      let variables: Record<string, unknown>;
      try {
        const body = request.method === "GET" ? {} : await jsonBody(request);
        variables = restVariables(
          fullSchema,
          request.method,
          matched.entry,
          matched.params,
          url.searchParams,
          body,
        );
        state.restVariables = variables;
      } catch (error) {
        if (!isApiError(error)) throw error;
        return endResponse(errorResponse(error, url.pathname, state));
      }
      return endResponse(await run(operation, request, serverContext as object, variables, fetchAPI));
    },
  };
}
