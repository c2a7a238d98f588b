import { GraphQLError } from "graphql";
import type { Credential } from "../context.ts";

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "idempotency_error"
  | "rate_limit_error"
  | "api_error";

export interface ApiErrorOptions {
  param?: string;
  /** Extra fields copied into the error body (e.g. `required_scope`). */
  details?: Record<string, string>;
  headers?: Record<string, string>;
}

/**
 * The one error type of the API. REST renders it as `{"error": {...}}` with `status`;
 * GraphQL carries the same `code`, `type` and fields in `extensions`.
 */
export class ApiError extends GraphQLError {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string;
  readonly param: string | undefined;
  readonly details: Record<string, string>;
  readonly headers: Record<string, string>;

  constructor(status: number, type: ErrorType, code: string, message: string, options: ApiErrorOptions = {}) {
    super(message, {
      extensions: {
        code,
        type,
        ...(options.param !== undefined && { param: options.param }),
        ...options.details,
        http: { status, ...(options.headers && { headers: options.headers }) },
      },
    });
    this.name = "ApiError";
    this.status = status;
    this.type = type;
    this.code = code;
    this.param = options.param;
    this.details = options.details ?? {};
    this.headers = options.headers ?? {};
  }
}

export const validationFailed = (param: string, message: string) =>
  new ApiError(400, "invalid_request_error", "validation_failed", message, { param });

export const invalidState = (message: string) =>
  new ApiError(400, "invalid_request_error", "invalid_state", message);

export const notFound = (object: string, id: string, param = "id") =>
  new ApiError(404, "invalid_request_error", "not_found", `No ${object} with id '${id}'.`, { param });

export const insufficientScope = (scope: string) =>
  new ApiError(403, "permission_error", "insufficient_scope", `This credential lacks the '${scope}' scope.`, {
    details: { required_scope: scope },
  });

/** A dashboard-only field asked by an API key or an agent token. */
export const sessionRequired = () =>
  new ApiError(
    403,
    "permission_error",
    "session_required",
    "Only a user signed in to the dashboard may do this; API keys and agent tokens may not.",
  );

/** A workspace member asked for something only its owners may do (a change, or reading the audit log). */
export const ownerRequired = () =>
  new ApiError(403, "permission_error", "owner_required", "Only an owner of the workspace may do this.", {
    details: { required_role: "owner" },
  });

/** A scope the credential lacks: for a member signed in to the dashboard, the owner's role is what is missing. */
export const scopeRefused = (credential: Credential, scope: string) =>
  credential.kind === "session" && credential.role !== "owner" ? ownerRequired() : insufficientScope(scope);

export const internalError = () =>
  new ApiError(
    500,
    "api_error",
    "internal_error",
    "An unexpected error occurred. Quote the request id when reporting it.",
  );

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}
