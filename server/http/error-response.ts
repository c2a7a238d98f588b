import type { GraphQLError } from "graphql";
import { type ApiError, isApiError } from "../../schema/lib/errors.ts";
import type { RequestState } from "./request-state.ts";

export const GRAPHQL_PATH = "/graphql";

/** Remembers the first error code of the request for its log line. */
export function noteErrorCode(state: RequestState, code: string): void {
  state.errorCode ??= code;
}

/** The REST error body of docs/api/conventions-and-errors.md#errors, for the request `state` answers. */
export function restErrorBody(error: ApiError, state: RequestState) {
  noteErrorCode(state, error.code);
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param !== undefined && { param: error.param }),
      ...error.details,
      request_id: state.id,
    },
  };
}

/** The same error as a GraphQL response: the code, type and request id ride in `extensions`. */
export function graphqlErrorBody(error: ApiError, state: RequestState) {
  noteErrorCode(state, error.code);
  const { http: _http, ...extensions } = error.extensions as Record<string, unknown>;
  return {
    errors: [{ message: error.message, extensions: { ...extensions, request_id: state.id } }],
  };
}

/** Renders an error as one family of routes answers errors: its body, status and headers. */
export type ErrorShape = (error: ApiError, pathname: string, requestId: string | null) => Response;

const families: { test: (pathname: string) => boolean; render: ErrorShape }[] = [];

/**
 * Lets a family of routes answer the errors raised before its handlers run (the per-address rate
 * limit's 429, a 413) as its handlers answer theirs: the agent protocol's endpoints in RFC 6749's
 * shape, never cached (server/agents/plugin.ts). The first family registered for a path wins.
 */
export function routeErrorShape(test: (pathname: string) => boolean, render: ErrorShape): void {
  families.push({ test, render });
}

/**
 * Renders an error raised before GraphQL execution, in the shape the caller's interface speaks,
 * and notes its code on the request's state (for the request's log row).
 *
 * @example return endResponse(errorResponse(methodNotAllowed(request.method), url.pathname, stateOf(serverContext)));
 */
export function errorResponse(error: ApiError, pathname: string, state: RequestState): Response {
  const family = families.find((f) => f.test(pathname));
  if (family) {
    noteErrorCode(state, error.code);
    return family.render(error, pathname, state.id);
  }
  if (pathname === GRAPHQL_PATH)
    return Response.json(graphqlErrorBody(error, state), { status: error.status, headers: error.headers });
  return restErrorResponse(error, state);
}

/** The REST error response: its body, status and headers (the `/v1` family's shape). */
export function restErrorResponse(error: ApiError, state: RequestState): Response {
  return Response.json(restErrorBody(error, state), {
    status: error.status,
    headers: restErrorHeaders(error),
  });
}

/**
 * The headers of a REST error: its own, and for `insufficient_scope` the RFC 6750 §3.1 challenge
 * naming the scope, which a client that can ask for more (an agent) reads to step up.
 *
 * @example restErrorHeaders(insufficientScope("leads.write"))["WWW-Authenticate"] // 'Bearer error="insufficient_scope", scope="leads.write"'
 */
export function restErrorHeaders(error: ApiError): Record<string, string> {
  const scope = error.details.required_scope;
  if (error.code !== "insufficient_scope" || typeof scope !== "string") return error.headers;
  return { ...error.headers, "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}"` };
}

/** The ApiError behind an error (itself, or the one a resolver threw), if there is one. */
export function findApiError(error: GraphQLError | Error): ApiError | undefined {
  if (isApiError(error)) return error;
  const original = (error as GraphQLError).originalError;
  return isApiError(original) ? original : undefined;
}
