/**
 * The errors the SDK throws: one class per kind of answer, each carrying the API's `code`,
 * the HTTP `status`, the `requestId` (quote it when reporting a problem) and the response `headers`.
 *
 * | class | when |
 * |---|---|
 * | `ValidationError` | 400: a bad parameter (`param` names it), or an action the object's state does not allow |
 * | `AuthenticationError` | 401: no credential, or an unknown, expired or revoked one |
 * | `PermissionError` | 403: the credential lacks `requiredScope`, or a quota is used up |
 * | `NotFoundError` | 404: no such object in the workspace |
 * | `ConflictError` | 409: a unique value is taken (`sku_taken`, `bucket_name_taken`) |
 * | `IdempotencyError` | 409 `idempotency_*`: the `Idempotency-Key` was used for another request, or is still running |
 * | `RateLimitError` | 429: over the plan's rate or the coding plan's pools; `retryAfter` says when to come back |
 * | `InternalServerError` | 5xx: a fault on the server's side (an `APIError`) |
 * | `APIError` | the base class, and any other status |
 * | `APIConnectionError` | no answer: the network failed (`APITimeoutError`: the time-out passed) |
 */

import { type CodingPlanInfo, codingPlanInfo, type RateLimitInfo, rateLimitInfo } from "./headers.js";

/** The `error` object of a REST error body, or the `extensions` of a GraphQL error. */
export interface ErrorBody {
  type?: string;
  code?: string;
  message?: string;
  param?: string;
  required_scope?: string;
  request_id?: string;
  [key: string]: unknown;
}

/** One entry of a GraphQL answer's `errors`. */
export interface GraphQLErrorEntry {
  message: string;
  path?: ReadonlyArray<string | number>;
  locations?: ReadonlyArray<{ line: number; column: number }>;
  extensions?: ErrorBody;
}

/** Every error the SDK throws is a KontorError. */
export class KontorError extends Error {
  override name = "KontorError";
}

export class APIError extends KontorError {
  override name = "APIError";
  /** The HTTP status; undefined when no answer arrived. */
  readonly status: number | undefined;
  /** The API's error code (`validation_failed`, `not_found`, …); branch on it, not on the message. */
  readonly code: string | undefined;
  /** The API's error type (`invalid_request_error`, `permission_error`, …). */
  readonly type: string | undefined;
  /** The parameter the error is about, when there is one (`address.city`, `items[2].quantity`). */
  readonly param: string | undefined;
  /** The request id (`req_…`), from the body or the `X-Request-Id` header. */
  readonly requestId: string | null;
  /** The response headers (empty when no answer arrived). */
  readonly headers: Headers;
  /** The error as the API sent it. */
  readonly error: ErrorBody | undefined;
  /** A GraphQL answer's errors, when the error came from `kontor.graphql(...)`. */
  readonly graphqlErrors: ReadonlyArray<GraphQLErrorEntry> | undefined;
  /** A GraphQL answer's partial `data`, when there was some beside the errors. */
  readonly data: unknown;

  constructor(
    status: number | undefined,
    error: ErrorBody | undefined,
    message: string | undefined,
    headers: Headers | undefined,
    extra: { graphqlErrors?: ReadonlyArray<GraphQLErrorEntry>; data?: unknown; cause?: unknown } = {},
  ) {
    super(
      APIError.describe(status, error, message),
      extra.cause === undefined ? undefined : { cause: extra.cause },
    );
    this.status = status;
    this.error = error;
    this.code = typeof error?.code === "string" ? error.code : undefined;
    this.type = typeof error?.type === "string" ? error.type : undefined;
    this.param = typeof error?.param === "string" ? error.param : undefined;
    this.headers = headers ?? new Headers();
    this.requestId =
      (typeof error?.request_id === "string" ? error.request_id : null) ?? this.headers.get("x-request-id");
    this.graphqlErrors = extra.graphqlErrors;
    this.data = extra.data;
  }

  private static describe(
    status: number | undefined,
    error: ErrorBody | undefined,
    message: string | undefined,
  ): string {
    const text = typeof error?.message === "string" ? error.message : message;
    const code = typeof error?.code === "string" ? error.code : undefined;
    const head = [status, code].filter((part) => part !== undefined).join(" ");
    if (head && text) return `${head}: ${text}`;
    return head || text || "Unknown error";
  }

  /**
   * The class for an answer: by status, then by code.
   *
   * @example
   * ```ts
   * const error = APIError.generate(404, { code: "not_found", message: "No such lead." });
   * error instanceof NotFoundError; // true
   * ```
   */
  static generate(
    status: number,
    error: ErrorBody | undefined,
    message: string | undefined,
    headers: Headers,
    extra: { graphqlErrors?: ReadonlyArray<GraphQLErrorEntry>; data?: unknown } = {},
  ): APIError {
    const code = error?.code ?? "";
    if (status === 400) return new ValidationError(status, error, message, headers, extra);
    if (status === 401) return new AuthenticationError(status, error, message, headers, extra);
    if (status === 403) return new PermissionError(status, error, message, headers, extra);
    if (status === 404) return new NotFoundError(status, error, message, headers, extra);
    if (status === 409) {
      if (code.startsWith("idempotency_") || error?.type === "idempotency_error")
        return new IdempotencyError(status, error, message, headers, extra);
      return new ConflictError(status, error, message, headers, extra);
    }
    if (status === 429) return new RateLimitError(status, error, message, headers, extra);
    if (status >= 500) return new InternalServerError(status, error, message, headers, extra);
    return new APIError(status, error, message, headers, extra);
  }
}

/** 400: a parameter is invalid (`param` names it), or the action is not allowed in the object's state (`invalid_state`). */
export class ValidationError extends APIError {
  override name = "ValidationError";
}

/** 401: no credential, or one that is unknown, expired or revoked. */
export class AuthenticationError extends APIError {
  override name = "AuthenticationError";
}

/** 403: the credential lacks a scope (`requiredScope`), or the workspace's quota does not allow it. */
export class PermissionError extends APIError {
  override name = "PermissionError";
  /**
   * The scope the credential lacks (`insufficient_scope`).
   *
   * @example
   * ```ts
   * try {
   *   await kontor.auditEvents.list();
   * } catch (error) {
   *   if (error instanceof PermissionError) console.log(`needs ${error.requiredScope}`); // "audit.read"
   * }
   * ```
   */
  get requiredScope(): string | undefined {
    const scope = this.error?.required_scope;
    return typeof scope === "string" ? scope : undefined;
  }
}

/** 404: no such object in the caller's workspace. */
export class NotFoundError extends APIError {
  override name = "NotFoundError";
}

/** 409: the request conflicts with the current state (a unique value in use). */
export class ConflictError extends APIError {
  override name = "ConflictError";
}

/** 409 `idempotency_conflict`, `idempotency_in_progress` or `idempotency_not_replayable`. */
export class IdempotencyError extends ConflictError {
  override name = "IdempotencyError";
}

/** 429: over a rate limit or a coding-plan pool. */
export class RateLimitError extends APIError {
  override name = "RateLimitError";
  /**
   * Seconds to wait before trying again (`Retry-After`), when the answer said.
   *
   * @example
   * ```ts
   * catch (error) {
   *   if (error instanceof RateLimitError) await sleep((error.retryAfter ?? 1) * 1000);
   * }
   * ```
   */
  get retryAfter(): number | null {
    const value = this.headers.get("retry-after");
    if (value === null) return null;
    const seconds = Number(value);
    if (Number.isFinite(seconds)) return seconds;
    const date = Date.parse(value);
    return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
  }
  /**
   * The `X-RateLimit-*` headers of the answer.
   *
   * @example
   * ```ts
   * if (error instanceof RateLimitError) console.log(error.rateLimit?.limit, error.rateLimit?.plan);
   * ```
   */
  get rateLimit(): RateLimitInfo | null {
    return rateLimitInfo(this.headers);
  }
  /**
   * The coding plan's `x-codingplan-*` headers, on AI routes metered by it.
   *
   * @example
   * ```ts
   * if (error instanceof RateLimitError) console.log(error.codingPlan?.fiveHourReset);
   * ```
   */
  get codingPlan(): CodingPlanInfo | null {
    return codingPlanInfo(this.headers);
  }
}

/** 5xx: a fault on the server's side (retried by the SDK). */
export class InternalServerError extends APIError {
  override name = "InternalServerError";
}

/** No answer arrived: the connection failed or was cut (retried by the SDK). */
export class APIConnectionError extends APIError {
  override name = "APIConnectionError";
  constructor(options: { message?: string; cause?: unknown; code?: string } = {}) {
    super(
      undefined,
      { code: options.code ?? "connection_error", message: options.message ?? "Connection error." },
      undefined,
      undefined,
      {
        cause: options.cause,
      },
    );
  }
}

/** The request's time-out passed before the answer (retried by the SDK). */
export class APITimeoutError extends APIConnectionError {
  override name = "APITimeoutError";
  constructor(timeoutMs: number) {
    super({ code: "timeout", message: `The request timed out after ${timeoutMs} ms.` });
  }
}

/** The caller's own `signal` aborted the request. */
export class APIUserAbortError extends APIError {
  override name = "APIUserAbortError";
  constructor() {
    super(undefined, { code: "aborted", message: "The request was aborted." }, undefined, undefined);
  }
}

/**
 * The HTTP status a GraphQL error stands for, from its `type` and `code` (field errors answer 200).
 *
 * @example
 * ```ts
 * statusOfGraphQLError({ code: "insufficient_scope", message: "…" }); // 403
 * ```
 */
export function statusOfGraphQLError(error: ErrorBody | undefined): number {
  const http = (error as { http?: { status?: unknown } } | undefined)?.http?.status;
  if (typeof http === "number") return http;
  switch (error?.type) {
    case "authentication_error":
      return 401;
    case "permission_error":
      return 403;
    case "idempotency_error":
      return 409;
    case "rate_limit_error":
      return 429;
    case "api_error":
      return error.code === "service_unavailable" ? 503 : 500;
  }
  if (error?.code === "not_found") return 404;
  if (typeof error?.code === "string" && error.code.endsWith("_taken")) return 409;
  return 400;
}
