/** An error of the Kontor API, in the shape every interface answers (`{type, code, message, param?}`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly requestId?: string,
    /** Seconds, from Retry-After on a 429. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

interface ErrorFields {
  type?: unknown;
  code?: unknown;
  message?: unknown;
  param?: unknown;
  request_id?: unknown;
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);

export function apiError(status: number, fields: ErrorFields, response?: Response): ApiError {
  const retry = Number(response?.headers.get("retry-after"));
  return new ApiError(
    status,
    text(fields.type) ?? "api_error",
    text(fields.code) ?? "unknown_error",
    text(fields.message) ?? `The server answered ${status}.`,
    text(fields.param),
    text(fields.request_id) ?? response?.headers.get("x-request-id") ?? undefined,
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

/** The fetch failed before any answer: offline, or the server is down. */
export const networkError = () =>
  new ApiError(
    0,
    "api_error",
    "network_error",
    "The server could not be reached. Check the connection and try again.",
  );

/** A response body that is not what the API sends (a proxy's page, a truncated answer). */
export const unexpectedAnswer = (status: number) =>
  new ApiError(
    status,
    "api_error",
    "unexpected_response",
    `The server answered ${status} with a body the dashboard does not understand.`,
  );

/** What a person should read for an error: the API's own message, with a hint for the common codes. */
export function describe(error: unknown): string {
  if (!(error instanceof ApiError)) return error instanceof Error ? error.message : String(error);
  // The API's own "Retry after N seconds." gives way to the wait in words: said once.
  if (error.status === 429 && error.retryAfter)
    return `${error.message.replace(/\s*Retry after \d+ seconds?\.?/i, "")} Try again in ${waitText(error.retryAfter)}.`;
  return error.message;
}

export function waitText(seconds: number): string {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minutes`;
}
