import type { ExecutionArgs, GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";
import { useSofa as createSofaRouter } from "sofa-api";
import { ApiError, internalError, isApiError, validationFailed } from "../../schema/lib/errors.ts";
import { MAX_JSON_DEPTH, RESPONSE_BUDGET_BYTES } from "../../schema/lib/limits.ts";
import { priceRoutes, type RoutePrice } from "../rest/page-limits.ts";
import type { Config } from "../config.ts";
import { errorResponse, findApiError, restErrorBody } from "../error-response.ts";
import { describeError, log } from "../log.ts";
import { requestState } from "../request-state.ts";
import { restVariables } from "../rest/input.ts";
import { buildOpenApi, type OpenApiExtension } from "../rest/openapi.ts";
import { restView } from "../../schema/lib/rest.ts";
import { matchRoute, pathExists, routeTable, type RouteEntry } from "../rest/view.ts";

export const REST_BASE = "/v1";

const unsupportedMediaType = () =>
  new ApiError(415, "invalid_request_error", "unsupported_media_type", "Send the body as JSON with 'Content-Type: application/json'.");
const invalidJson = (detail: string) =>
  new ApiError(400, "invalid_request_error", "invalid_json", `The request body is not valid JSON: ${detail}`);
const notFoundRoute = (method: string, path: string) =>
  new ApiError(404, "invalid_request_error", "not_found", `No route ${method} ${path}.`);

/** Sofa reports several errors at once; the REST answer is the most severe of them. */
function sofaErrorResponse(errors: ReadonlyArray<Error>): Response {
  const known = errors.map(findApiError).filter((error) => error !== undefined);
  const worst = known.sort((a, b) => b.status - a.status)[0];
  if (!worst) log("error", "unhandled error", describeError(errors[0]));
  const error = worst ?? internalError();
  return Response.json(restErrorBody(error), { status: error.status, headers: error.headers });
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
    throw new ApiError(400, "invalid_request_error", "validation_failed", "The request body must be a JSON object.");
  }
  if (nestingDepth(body) > MAX_JSON_DEPTH) {
    throw new ApiError(400, "invalid_request_error", "validation_failed", `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`);
  }
  return body as Record<string, unknown>;
}

/** A list route whose items can be large answers smaller pages, so no answer exceeds the response budget. */
function checkPageSize(variables: Record<string, unknown>, price: RoutePrice | undefined): void {
  const limit = variables.limit;
  if (price?.maxLimit === undefined || typeof limit !== "number" || limit <= price.maxLimit) return;
  throw validationFailed(
    "limit",
    `limit must be from 1 to ${price.maxLimit} on this route: each item can be up to ${Math.ceil(price.perItem / 1024)} KiB ` +
      `and a response carries at most ${RESPONSE_BUDGET_BYTES / 1024 / 1024} MiB.`,
  );
}

/**
 * The `/v1` REST facade: Sofa generates the routes from the fields that declare one (see
 * schema/lib/rest.ts). This layer adds what Sofa lacks: strict input validation, 404/405/415,
 * errors in the API's shape, and a corrected OpenAPI document.
 */
export function useRest(config: Config, openApiExtensions: OpenApiExtension[] = []): Plugin {
  let sofa: ReturnType<typeof createSofaRouter>;
  let table: RouteEntry[] = [];
  let prices = new Map<string, RoutePrice>();
  let openApi: unknown;
  let getEnveloped: (context: unknown) => { contextFactory: (c: unknown) => unknown; execute: (a: ExecutionArgs) => unknown };
  let fullSchema: GraphQLSchema;
  const envelopedByContext = new WeakMap<object, ReturnType<typeof getEnveloped>>();

  return {
    onYogaInit({ yoga }) {
      getEnveloped = yoga.getEnveloped as unknown as typeof getEnveloped;
    },
    onSchemaChange({ schema }) {
      fullSchema = schema;
      const view = restView(schema);
      table = routeTable(view);
      prices = priceRoutes(view, table);
      sofa = createSofaRouter({
        basePath: REST_BASE,
        schema: view,
        routes: Object.fromEntries(
          table.map(({ key, route }) => [key, { method: route.method, path: route.path, responseStatus: route.status as 200 }]),
        ),
        errorHandler: sofaErrorResponse as never,
        context: async (serverContext: object) => {
          const enveloped = getEnveloped(serverContext);
          const context = (await enveloped.contextFactory(serverContext)) as Record<string, unknown>;
          envelopedByContext.set(context, enveloped);
          return context;
        },
        execute: ((args: ExecutionArgs) => {
          const enveloped = envelopedByContext.get(args.contextValue as object);
          if (!enveloped) throw new TypeError("REST execution outside a request.");
          // Variables come from the strict validation above, not from Sofa's lenient parsing.
          return enveloped.execute({ ...args, schema: fullSchema, variableValues: requestState()?.restVariables ?? {} });
        }) as never,
      });
      openApi = buildOpenApi(table, config, openApiExtensions);
    },
    async onRequest({ request, url, endResponse, serverContext }) {
      if (url.pathname !== REST_BASE && !url.pathname.startsWith(`${REST_BASE}/`)) return;
      if (url.pathname === `${REST_BASE}/openapi.json` && request.method === "GET") {
        return endResponse(Response.json(openApi));
      }
      let matched: ReturnType<typeof matchRoute>;
      try {
        matched = matchRoute(table, request.method, url.pathname);
      } catch (error) {
        if (!isApiError(error)) throw error;
        return endResponse(errorResponse(error, url.pathname));
      }
      if (!matched) {
        const allowed = pathExists(table, url.pathname);
        if (allowed.length > 0) {
          const error = new ApiError(405, "invalid_request_error", "method_not_allowed", `${request.method} is not allowed on ${url.pathname}.`, {
            headers: { Allow: allowed.join(", ") },
          });
          return endResponse(errorResponse(error, url.pathname));
        }
        return endResponse(errorResponse(notFoundRoute(request.method, url.pathname), url.pathname));
      }
      requestState()!.route = `${REST_BASE}${matched.entry.route.path.replace(/:(\w+)/g, "{$1}")}`;
      try {
        const body = request.method === "GET" ? {} : await jsonBody(request);
        const variables = restVariables(fullSchema, request.method, matched.entry, matched.params, url.searchParams, body);
        checkPageSize(variables, prices.get(matched.entry.key));
        requestState()!.restVariables = variables;
      } catch (error) {
        if (!isApiError(error)) throw error;
        return endResponse(errorResponse(error, url.pathname));
      }
      return endResponse((await sofa.handleRequest(request, serverContext)) as Response);
    },
  };
}
