import { findUnicodeProblem, textProblem } from "../../schema/lib/limits.ts";
import { formEntries, MalformedFormError } from "../http/utf8.ts";
import { BODY_LIMITS } from "../policies/body-limits.ts";

/** RFC 6749 §5.2 error codes Kontor answers, and those of docs/api/agents.md for /agent/identity. */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unsupported_grant_type"
  | "invalid_scope"
  | "authorization_pending"
  | "slow_down"
  | "expired_token"
  | "access_denied"
  | "invalid_login_hint"
  | "service_auth_not_enabled"
  | "anonymous_not_enabled"
  | "issuer_not_enabled"
  | "invalid_signature"
  | "replay_detected"
  | "audience_mismatch"
  | "credential_expired"
  | "agent_auth_disabled"
  | "plan_limit_reached"
  | "login_required"
  | "interaction_required"
  | "method_not_allowed"
  | "rate_limit_exceeded"
  | "server_error";

/** An error of the OAuth endpoints, answered `{"error", "error_description"}` (not the /v1 envelope). */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: OAuthErrorCode,
    description: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

/** Every answer of the OAuth endpoints: JSON, never cached (RFC 6749 §5.1). */
export function oauthJson(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return Response.json(body, {
    status,
    headers: { "Cache-Control": "no-store", Pragma: "no-cache", ...headers },
  });
}

export function oauthErrorResponse(error: OAuthError, requestId: string | undefined): Response {
  return oauthJson(
    {
      error: error.code,
      error_description: error.message,
      ...error.extra,
      ...(requestId && { request_id: requestId }),
    },
    error.status,
    error.headers,
  );
}

/** The most a form or JSON body of these endpoints may hold (an ID-JAG is a few KB): docs/api/limits.md, server/policies/body-limits.ts. */
export const MAX_OAUTH_BODY_BYTES = BODY_LIMITS.protocol;

function mediaType(request: Request): string {
  return (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
}

async function bodyText(request: Request): Promise<string> {
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_OAUTH_BODY_BYTES)
    throw new OAuthError(400, "invalid_request", `The body exceeds ${MAX_OAUTH_BODY_BYTES} bytes.`);
  return text;
}

/** An `application/x-www-form-urlencoded` body (RFC 6749 §4.1.3); a repeated parameter is refused (§3.1). */
export async function readForm(request: Request): Promise<Map<string, string>> {
  if (mediaType(request) !== "application/x-www-form-urlencoded") {
    throw new OAuthError(
      400,
      "invalid_request",
      "Send the parameters form-encoded, with Content-Type: application/x-www-form-urlencoded.",
    );
  }
  let params: [string, string][];
  try {
    params = formEntries(await bodyText(request));
  } catch (error) {
    if (error instanceof MalformedFormError) throw invalidField(error.param, error.message);
    throw error;
  }
  const form = new Map<string, string>();
  for (const [name, value] of params) {
    if (form.has(name))
      throw new OAuthError(400, "invalid_request", `The parameter '${name}' was sent more than once.`);
    form.set(name, value);
  }
  return form;
}

/** A JSON object body (the /agent/identity endpoints). */
export async function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  if (mediaType(request) !== "application/json")
    throw new OAuthError(400, "invalid_request", "Send a JSON object with Content-Type: application/json.");
  let body: unknown;
  try {
    body = JSON.parse(await bodyText(request));
  } catch (error) {
    if (error instanceof OAuthError) throw error;
    throw new OAuthError(400, "invalid_request", "The body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new OAuthError(400, "invalid_request", "The body must be a JSON object.");
  const malformed = findUnicodeProblem(body);
  if (malformed) throw invalidField(malformed.param, `${malformed.param} ${malformed.problem}.`);
  return body as Record<string, unknown>;
}

/**
 * A malformed field: RFC 6749's `invalid_request` (these endpoints speak OAuth's error shape, not
 * the API's `validation_failed`), with `param` naming the field as the API's errors do.
 */
export function invalidField(name: string, message: string): OAuthError {
  return new OAuthError(400, "invalid_request", message, /^[\w.[\]-]+$/.test(name) ? { param: name } : {});
}

/**
 * A required string field or parameter, bounded in characters (code points) by the API's one text
 * rule (schema/lib/limits.ts: no lone surrogates); no control characters at all. `invalid_request` otherwise.
 */
export function requiredString(value: unknown, name: string, maxLength = 4096): string {
  if (typeof value !== "string" || value.trim() === "") throw invalidField(name, `${name} is required.`);
  if (/[\u0000-\u001f]/.test(value)) throw invalidField(name, `${name} must not contain control characters.`);
  const problem = textProblem(value, maxLength);
  if (problem) throw invalidField(name, `${name} ${problem}.`);
  return value;
}
