import type { Plugin } from "graphql-yoga";
import { GRAPHQL_PATH } from "./error-response.ts";

/**
 * Cross-origin rules (docs/security.md "Cross-origin requests"), Yoga's own CORS being off:
 *
 * - The API (`/v1`, `/graphql`) and the agents' protocol (`/.well-known/*`, `/auth.md`, `/oauth2/*`,
 *   `/agent/*` but the claim page) answer any origin without credentials: `Access-Control-Allow-Origin: *`
 *   and never `Access-Control-Allow-Credentials`, so a browser never sends or exposes a cookie
 *   across origins. A page elsewhere calls them with an API key or an agent token.
 * - Everything else, the dashboard (`/dashboard/*`, its API included) and the claim page
 *   (`/agent/claim`) first, sends no CORS header at all: a preflight there is not approved.
 */

/**
 * The request headers a key-holding client sends: the SDK's, a GraphQL client's, ranged downloads',
 * and those of the official OpenAI client (`/v1/chat/completions`, `/v1/responses`). The session's own
 * headers (`X-CSRF-Token`, `Kontor-Workspace`) are not among them: no page of another origin may use them.
 */
export const CORS_ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "Accept",
  "Idempotency-Key",
  "Range",
  "If-Range",
  "If-None-Match",
  "User-Agent",
  "OpenAI-Organization",
  "OpenAI-Project",
  "X-Stainless-Arch",
  "X-Stainless-Helper-Method",
  "X-Stainless-Lang",
  "X-Stainless-OS",
  "X-Stainless-Package-Version",
  "X-Stainless-Retry-Count",
  "X-Stainless-Runtime",
  "X-Stainless-Runtime-Version",
  "X-Stainless-Timeout",
] as const;

/** The response headers a client reads, beyond those CORS always exposes. */
export const CORS_EXPOSED_HEADERS = [
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "X-RateLimit-Plan",
  "Retry-After",
  "Idempotent-Replay",
  "Idempotent-Replayable",
  "WWW-Authenticate",
  "x-codingplan-5h-used-percent",
  "x-codingplan-5h-reset",
  "x-codingplan-weekly-used-percent",
  "x-codingplan-weekly-reset",
  "x-ai-daily-tokens-limit",
  "x-ai-daily-tokens-remaining",
  "x-ai-daily-reset",
  "ETag",
  "Accept-Ranges",
  "Content-Range",
  "Content-Disposition",
] as const;

export const CORS_ALLOWED_METHODS = ["GET", "HEAD", "POST", "PATCH", "PUT", "DELETE"] as const;

/** How long a browser may keep a preflight's answer (Chromium keeps at most 2 hours). */
export const CORS_MAX_AGE_SECONDS = 7200;

const CLAIM_PAGE = "/agent/claim";

const under = (pathname: string, prefix: string) => pathname === prefix || pathname.startsWith(`${prefix}/`);

/** Whether `pathname` answers any origin (without credentials); every other path sends no CORS header. */
export function isAnyOriginPath(pathname: string): boolean {
  if (under(pathname, "/v1") || pathname === GRAPHQL_PATH) return true;
  if (pathname === CLAIM_PAGE || pathname.startsWith(`${CLAIM_PAGE}/`)) return false;
  return (
    under(pathname, "/.well-known") ||
    pathname === "/auth.md" ||
    under(pathname, "/oauth2") ||
    under(pathname, "/agent")
  );
}

const PREFLIGHT_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": CORS_ALLOWED_METHODS.join(", "),
  "Access-Control-Allow-Headers": CORS_ALLOWED_HEADERS.join(", "),
  "Access-Control-Max-Age": String(CORS_MAX_AGE_SECONDS),
  // Safari waits for a body on a 204 without it.
  "Content-Length": "0",
};

const EXPOSED = CORS_EXPOSED_HEADERS.join(", ");

/**
 * The one CORS policy: answers the preflights (`OPTIONS`) of the any-origin paths with 204, and
 * sets `Access-Control-Allow-Origin: *` with the exposed headers on their responses. Runs early, so
 * a preflight meets no authentication, limit or body check.
 */
export function useCors(): Plugin {
  return {
    onRequest({ request, url, endResponse }) {
      if (request.method === "OPTIONS" && isAnyOriginPath(url.pathname))
        endResponse(new Response(null, { status: 204, headers: PREFLIGHT_HEADERS }));
    },
    onResponse({ request, response }) {
      const { headers } = response;
      // Whatever a handler set, a credentialed cross-origin read is never approved.
      headers.delete("Access-Control-Allow-Credentials");
      if (!isAnyOriginPath(new URL(request.url).pathname)) {
        for (const name of [...headers.keys()]) if (name.startsWith("access-control-")) headers.delete(name);
        return;
      }
      headers.set("Access-Control-Allow-Origin", "*");
      if (request.method !== "OPTIONS") headers.set("Access-Control-Expose-Headers", EXPOSED);
    },
  };
}
