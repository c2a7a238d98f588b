import { GraphQLError, type GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";
import { ApiError, internalError, isApiError } from "../../schema/lib/errors.ts";
import { explainEnumError } from "../enum-message.ts";
import { noteErrorCode } from "../error-response.ts";
import { describeError, log } from "../log.ts";
import { requestState } from "../request-state.ts";

/**
 * Prisma gave up on a transaction past its time-out (P2028), PostgreSQL cancelled a statement past
 * statement_timeout (57014), or no connection came free in time (P2024): whatever ran was rolled
 * back, and the same request may succeed a moment later.
 */
function isDatabaseTimeout(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === "P2028" || code === "P2024" || (typeof message === "string" && /Code: `57014`|statement timeout/.test(message));
}

const databaseBusy = () =>
  new ApiError(503, "api_error", "service_unavailable", "The request took too long and was rolled back: nothing was written. Retry it.", {
    headers: { "Retry-After": "1" },
  });

/**
 * Yoga's masking hook: an exception that is not an ApiError is logged with the request id and
 * replaced by `internal_error`, so no stack trace, SQL or driver message reaches a caller.
 */
export function maskError(error: unknown): Error {
  const original = error instanceof GraphQLError ? error.originalError : error;
  if (error instanceof GraphQLError && (!original || original instanceof GraphQLError)) return error;
  const timedOut = isDatabaseTimeout(original);
  log(timedOut ? "warn" : "error", timedOut ? "database time-out: the transaction was rolled back" : "unhandled error", describeError(original));
  const internal = timedOut ? databaseBusy() : internalError();
  return error instanceof GraphQLError
    ? new GraphQLError(internal.message, { nodes: error.nodes, path: error.path, originalError: internal })
    : internal;
}

/** Errors of the GraphQL request itself (syntax, validation, variables, transport) in the API's codes. */
const REQUEST_ERROR_CODES: Record<number, string> = {
  405: "method_not_allowed",
  406: "not_acceptable",
  413: "payload_too_large",
  415: "unsupported_media_type",
};

function isJsonSyntaxError(error: GraphQLError): boolean {
  const original = error.originalError ?? (error.extensions.originalError as Error | undefined);
  return original?.name === "SyntaxError" && /JSON/i.test(error.message);
}

function shape(error: GraphQLError, requestId: string | null, schema: GraphQLSchema | undefined): GraphQLError {
  const original = isApiError(error) ? error : error.originalError;
  if (isApiError(original)) {
    // A field error is data, not a transport failure: drop `http` so the response stays 200.
    const { http: _http, ...extensions } = original.extensions as Record<string, unknown>;
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      path: error.path,
      originalError: original,
      extensions: { ...extensions, request_id: requestId },
    });
  }
  // Yoga's own extensions: keep `http` (it sets the status), drop the parser's `originalError`.
  const { http, originalError: _internal, code: ownCode, ...rest } = error.extensions as Record<string, unknown>;
  const status = (http as { status?: number } | undefined)?.status;
  const invalidJson = isJsonSyntaxError(error);
  // A request error raised by one of our plugins (the GraphQL limits) already names its API code;
  // Yoga's and graphql-js's codes are upper case (GRAPHQL_VALIDATION_FAILED) and are replaced.
  const apiCode = typeof ownCode === "string" && /^[a-z]+(_[a-z]+)*$/.test(ownCode) ? ownCode : undefined;
  const code = invalidJson ? "invalid_json" : (apiCode ?? REQUEST_ERROR_CODES[status ?? 400] ?? "validation_failed");
  // A body that is not JSON is not a GraphQL request at all: 400 whatever the Accept header.
  const transport = invalidJson ? { http: { status: 400 } } : http ? { http } : {};
  return new GraphQLError(schema ? explainEnumError(error.message, schema) : error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: { ...rest, ...transport, code, type: "invalid_request_error", request_id: requestId },
  });
}

/** Every GraphQL error carries `code`, `type` and `request_id` in `extensions` (README "Errors"). */
export function useGraphQLErrorShape(): Plugin {
  let schema: GraphQLSchema | undefined;
  return {
    onSchemaChange({ schema: current }) {
      schema = current;
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || Symbol.asyncIterator in result || !result.errors?.length) return;
      const requestId = requestState()?.id ?? null;
      const errors = result.errors.map((error) => shape(error as GraphQLError, requestId, schema));
      noteErrorCode(String(errors[0]!.extensions.code));
      setResult({ ...result, errors });
    },
  };
}
