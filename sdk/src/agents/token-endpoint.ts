import { AgentAuthError } from "./errors.js";
import { describe, parseObject } from "./http.js";
import type { AgentTokens, FetchLike } from "./options.js";
import type { AuthorizationServerMetadata } from "./protocol.js";

/** The token and revocation endpoints: form-encoded OAuth requests (RFC 6749, RFC 7009). */

/** A token endpoint's answer: the tokens, or the OAuth error that says what to do next. */
export type TokenAnswer =
  | { ok: true; tokens: AgentTokens }
  | {
      ok: false;
      error: string;
      status: number;
      body: Record<string, unknown>;
      retryAfter: number | undefined;
    };

/**
 * One form-encoded request to the token endpoint. `sentAt` (the helper's clock, before sending)
 * dates the token's expiry; an answer that is neither tokens nor an OAuth error throws.
 *
 * @example
 * ```ts
 * const answer = await requestToken(fetch, as, { grant_type: JWT_BEARER_GRANT_TYPE, assertion }, undefined, Date.now());
 * if (answer.ok) console.log(answer.tokens.access_token);
 * ```
 */
export async function requestToken(
  fetchImpl: FetchLike,
  as: AuthorizationServerMetadata,
  parameters: Record<string, string>,
  signal: AbortSignal | undefined,
  sentAt: number,
): Promise<TokenAnswer> {
  const response = await fetchImpl(as.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(parameters).toString(),
    ...(signal && { signal }),
  });
  const text = await response.text();
  const body = parseObject(text);
  if (response.status === 200 && body && typeof body.access_token === "string") {
    const expiresIn = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 3600;
    const tokens: AgentTokens = {
      access_token: body.access_token,
      token_type: typeof body.token_type === "string" ? body.token_type : "Bearer",
      expires_in: expiresIn,
      scope: typeof body.scope === "string" ? body.scope : "",
      expires_at: sentAt + expiresIn * 1000,
      ...(typeof body.identity_assertion === "string" && { identity_assertion: body.identity_assertion }),
      ...(typeof body.assertion_expires === "string" && { assertion_expires: body.assertion_expires }),
    };
    return { ok: true, tokens };
  }
  if (!body || typeof body.error !== "string") {
    throw new AgentAuthError(
      "invalid_response",
      `The token endpoint answered ${response.status} without an OAuth error.`,
      {
        status: response.status,
        ...(body && { body }),
      },
    );
  }
  const retryAfterHeader = response.headers.get("retry-after");
  const retryAfter =
    retryAfterHeader && /^\d+$/.test(retryAfterHeader.trim()) ? Number(retryAfterHeader.trim()) : undefined;
  return { ok: false, error: body.error, status: response.status, body, retryAfter };
}

/**
 * Revokes a token at the revocation endpoint (RFC 7009); any answer but 200 throws.
 *
 * @example
 * ```ts
 * await revokeAt(fetch, as, accessToken, "access_token");
 * ```
 */
export async function revokeAt(
  fetchImpl: FetchLike,
  as: AuthorizationServerMetadata,
  token: string,
  hint?: string,
): Promise<void> {
  const endpoint = as.revocation_endpoint;
  if (!endpoint)
    throw new AgentAuthError("discovery_failed", "The authorization server has no revocation_endpoint.");
  const form = new URLSearchParams({ token, ...(hint && { token_type_hint: hint }) });
  const response = await fetchImpl(endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: form.toString(),
  });
  const text = await response.text();
  if (response.status !== 200) {
    const body = parseObject(text);
    throw new AgentAuthError(
      typeof body?.error === "string" ? body.error : "revocation_failed",
      describe(body, `The revocation endpoint answered ${response.status}.`),
      {
        status: response.status,
        ...(body && { body }),
      },
    );
  }
}
