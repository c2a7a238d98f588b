import { ApiError } from "../../schema/lib/errors.ts";
import type { Config } from "../runtime/config.ts";

/**
 * The one rule for requests a browser makes with the session cookie (docs/security.md
 * "Cross-origin requests"): they are served only from the dashboard's own origin. Applied to
 * `/graphql` and `/v1` with the cookie, to every `/dashboard/api/*` request and to the claim page's
 * forms, on top of their CSRF token.
 */

/** The deployment's own origin: that of `{host_url}` (`https://kontor.example.com`). */
export const ownOrigin = (config: Pick<Config, "publicUrl">) => new URL(config.publicUrl).origin;

/** 403 for a cookie request sent by a page of another origin (or site). */
export const crossOriginRequest = (config: Pick<Config, "publicUrl">) =>
  new ApiError(
    403,
    "permission_error",
    "cross_origin_request",
    `A request made with the dashboard's session may only come from ${ownOrigin(config)}: a page of another origin must call the API with an API key, never with the session.`,
  );

/**
 * Null when the request may be served with the session cookie, else the 403 to answer:
 *
 * - `Origin`, when sent, must be the deployment's own origin. `Origin: null` says nothing (Chromium
 *   sends it for a form posted from a page with `Referrer-Policy: no-referrer`, like the claim
 *   page): `Sec-Fetch-Site` then decides and must be there.
 * - `Sec-Fetch-Site`, when there is no usable `Origin`, must be `same-origin` (`same-site` is
 *   refused too: another port or subdomain is another origin).
 * - A request with neither header (curl, a server) is served: no browser sent it on a page's
 *   behalf, and it still needs the CSRF token.
 */
export function crossOriginRefusal(config: Pick<Config, "publicUrl">, request: Request): ApiError | null {
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== "null")
    return origin === ownOrigin(config) ? null : crossOriginRequest(config);
  const site = request.headers.get("sec-fetch-site");
  if (site === null) return origin === null ? null : crossOriginRequest(config);
  return site === "same-origin" ? null : crossOriginRequest(config);
}
