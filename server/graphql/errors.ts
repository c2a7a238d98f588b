import { GraphQLError, type GraphQLSchema } from "graphql";
import type { Plugin } from "graphql-yoga";
import { ApiError, internalError, isApiError } from "../../schema/lib/errors.ts";
import { isRecordNotFound } from "../../schema/lib/records.ts";
import { noteErrorCode } from "../http/error-response.ts";
import { stateOf } from "../http/request-state.ts";
import { describeError, log } from "../observability/log.ts";
import { explainEnumError } from "./enum-message.ts";

/**
 * Prisma gave up on a transaction past its time-out (P2028), PostgreSQL cancelled a statement past
 * statement_timeout (57014), or no connection came free in time (P2024): whatever ran was rolled
 * back, and the same request may succeed a moment later.
 */
function isDatabaseTimeout(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    code === "P2028" ||
    code === "P2024" ||
    (typeof message === "string" && /Code: `57014`|statement timeout/.test(message))
  );
}

const databaseBusy = () =>
  new ApiError(
    503,
    "api_error",
    "service_unavailable",
    "The request took too long and was rolled back: nothing was written. Retry it.",
    {
      headers: { "Retry-After": "1" },
    },
  );

/**
 * Prisma found no row to update or delete (P2025): a request running at the same time deleted it
 * between this one's read and its write. Routes check for that themselves (owned(), lockOwned());
 * this is the net under any write that does not, so a row that vanished is a 404, never a 500.
 */
function vanished(error: unknown): ApiError {
  const model = (error as { meta?: { modelName?: unknown } }).meta?.modelName;
  const object =
    typeof model === "string" ? model.replace(/(?<=[a-z])([A-Z])/g, "_$1").toLowerCase() : "record";
  return new ApiError(
    404,
    "invalid_request_error",
    "not_found",
    `No such ${object}: it does not exist, or was deleted at the same time.`,
  );
}

/** The log lines of masked errors not written yet, by the ApiError that replaced each cause. */
const unreported = new WeakMap<Error, (requestId: string | null) => void>();

/** An exception that is not an ApiError, masked, with the log line of its cause still to write. */
function mask(error: unknown): {
  masked: Error;
  internal?: ApiError;
  report?: (requestId: string | null) => void;
} {
  const original = error instanceof GraphQLError ? error.originalError : error;
  if (error instanceof GraphQLError && (!original || original instanceof GraphQLError))
    return { masked: error };
  const timedOut = isDatabaseTimeout(original);
  const missing = !timedOut && isRecordNotFound(original);
  const report = (requestId: string | null) => {
    const fields = { request_id: requestId, ...describeError(original) };
    if (missing) log("warn", "a row was gone when written: answered not_found", fields);
    else if (timedOut) log("warn", "database time-out: the transaction was rolled back", fields);
    else log("error", "unhandled error", fields);
  };
  const internal = timedOut ? databaseBusy() : missing ? vanished(original) : internalError();
  const masked =
    error instanceof GraphQLError
      ? new GraphQLError(internal.message, { nodes: error.nodes, path: error.path, originalError: internal })
      : internal;
  return { masked, internal, report };
}

/**
 * An exception that is not an ApiError is logged under the request's id and replaced by
 * `internal_error` (503 `service_unavailable` for a database time-out, 404 for a row a concurrent
 * request deleted), so no stack trace, SQL or driver message reaches a caller.
 *
 * @example return errorResponse(isApiError(error) ? error : (maskError(error, state.id) as ApiError), pathname, state);
 */
export function maskError(error: unknown, requestId: string | null): Error {
  const { masked, report } = mask(error);
  report?.(requestId);
  return masked;
}

/**
 * Yoga's masking hook (`maskedErrors.maskError`), which runs without the request at hand: masks as
 * maskError does, and leaves the log line to whoever renders the result for the request
 * (reportMaskedErrors: the GraphQL error shape, the REST facade).
 */
export function maskErrorForYoga(error: unknown): Error {
  const { masked, internal, report } = mask(error);
  if (internal && report) unreported.set(internal, report);
  return masked;
}

/** Writes, under `requestId`, the log lines of the errors among `errors` that Yoga's hook masked. */
export function reportMaskedErrors(errors: readonly Error[], requestId: string | null): void {
  for (const error of errors) {
    // The ApiError itself (a request error), or the one a field's error wraps.
    const internal = unreported.has(error) ? error : (error as GraphQLError).originalError;
    const report = internal && unreported.get(internal);
    if (!report) continue;
    unreported.delete(internal);
    report(requestId);
  }
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

/**
 * `requestError`: the result has no `data`, the request failed before execution (GraphQL over HTTP's
 * "request error"). Under `Accept: application/graphql-response+json` that is a 4xx (or a 5xx of
 * ours); under `application/json` Yoga answers the `spec` ones 200, as the legacy type allows.
 */
function shape(
  error: GraphQLError,
  requestId: string | null,
  schema: GraphQLSchema | undefined,
  requestError: boolean,
): GraphQLError {
  const original = isApiError(error) ? error : error.originalError;
  if (isApiError(original)) {
    // A field error is data, not a transport failure: drop `http` so the response stays 200. An
    // error of the request itself (a malformed parameter, a fault of ours) keeps its status.
    const { http, ...extensions } = original.extensions as Record<string, unknown>;
    if (requestError) extensions.http = http;
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      path: error.path,
      originalError: original,
      extensions: { ...extensions, request_id: requestId },
    });
  }
  // Yoga's own extensions: keep `http` (it sets the status), drop the parser's `originalError`.
  const {
    http,
    originalError: _internal,
    code: ownCode,
    ...rest
  } = error.extensions as Record<string, unknown>;
  const status = (http as { status?: number } | undefined)?.status;
  const invalidJson = isJsonSyntaxError(error);
  // A request error raised by one of our plugins (the GraphQL limits) already names its API code;
  // Yoga's and graphql-js's codes are upper case (GRAPHQL_VALIDATION_FAILED) and are replaced.
  const apiCode = typeof ownCode === "string" && /^[a-z]+(_[a-z]+)*$/.test(ownCode) ? ownCode : undefined;
  const code = invalidJson
    ? "invalid_json"
    : (apiCode ?? REQUEST_ERROR_CODES[status ?? 400] ?? "validation_failed");
  // A body that is not JSON is not a GraphQL request at all: 400 whatever the Accept header.
  // Any other request error without a status of its own (an operation the schema cannot run, such
  // as a subscription) is a `spec` 400.
  const transport = invalidJson
    ? { http: { status: 400 } }
    : http
      ? { http }
      : requestError
        ? { http: { status: 400, spec: true } }
        : {};
  return new GraphQLError(schema ? explainEnumError(error.message, schema) : error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    extensions: { ...rest, ...transport, code, type: "invalid_request_error", request_id: requestId },
  });
}

/** Every GraphQL error carries `code`, `type` and `request_id` in `extensions` (docs/api/conventions-and-errors.md#errors). */
export function useGraphQLErrorShape(): Plugin {
  let schema: GraphQLSchema | undefined;
  return {
    onSchemaChange({ schema: current }) {
      schema = current;
    },
    onResultProcess({ result, setResult, serverContext }) {
      if (Array.isArray(result) || Symbol.asyncIterator in result || !result.errors?.length) return;
      const state = stateOf(serverContext);
      const requestId = state.id;
      reportMaskedErrors(result.errors, requestId);
      const requestError = !("data" in result);
      const errors = result.errors.map((error) =>
        shape(error as GraphQLError, requestId, schema, requestError),
      );
      noteErrorCode(state, String(errors[0]!.extensions.code));
      setResult({ ...result, errors });
    },
  };
}
