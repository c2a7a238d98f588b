import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { projectPath } from "../runtime/project.ts";

/** The dashboard's build (`npm run build:dashboard`, run by npm install, start and test). */
export const DASHBOARD_DIST = projectPath("dashboard/dist/");

export const DASHBOARD_PATH = "/dashboard";
const ASSETS_PREFIX = `${DASHBOARD_PATH}/assets/`;
const API_PREFIX = `${DASHBOARD_PATH}/api`;

/** Vite's output names: `index-D-H7cuXL.js`; no directories, no dot files. */
const ASSET_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json",
};

/**
 * The app's page: scripts and styles from this origin only (Vite emits no inline script), no
 * framing, no form posts elsewhere, no referrer (an invitation link holds its token in the fragment,
 * which is never sent, but the path is nobody's business either).
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Cache-Control": "no-cache",
  "Content-Security-Policy": CSP,
  "X-Content-Type-Options": "nosniff",
  "X-Frame-Options": "DENY",
  "Referrer-Policy": "no-referrer",
};

const PAGE_ROUTE = DASHBOARD_PATH;
const ASSET_ROUTE = `${ASSETS_PREFIX}{file}`;

/** Whether the request was answered as the dashboard's page or one of its files (the rate limit leaves these alone). */
export const isDashboardFile = (state: RequestState) =>
  state.route === PAGE_ROUTE || state.route === ASSET_ROUTE;

const isDashboardPath = (pathname: string) =>
  pathname === DASHBOARD_PATH || pathname.startsWith(`${DASHBOARD_PATH}/`);
const isApiPath = (pathname: string) => pathname === API_PREFIX || pathname.startsWith(`${API_PREFIX}/`);

const methodNotAllowed = (method: string) =>
  new ApiError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `${method.slice(0, 16)} is not allowed here.`,
    { headers: { Allow: "GET, HEAD" } },
  );
const assetNotFound = () =>
  new ApiError(404, "invalid_request_error", "not_found", "No such dashboard asset.");
const notBuilt = () =>
  new ApiError(
    503,
    "api_error",
    "service_unavailable",
    "The dashboard is not built: run `npm run build:dashboard` (npm install and npm start do).",
    {
      headers: { "Retry-After": "5" },
    },
  );

/**
 * Serves the dashboard's build (dashboard contract §4): `/dashboard` and every path under it but
 * `/dashboard/api/*` is the app's index.html (no-cache, strict CSP), and the app routes in the page;
 * `/dashboard/assets/<hashed name>` is cached for a year; an unknown asset is a 404.
 */
export function useDashboardStatic(dist = DASHBOARD_DIST): Plugin {
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const { pathname } = url;
      if (!isDashboardPath(pathname) || isApiPath(pathname)) return;
      const asset = pathname.startsWith(ASSETS_PREFIX);
      const state = stateOf(serverContext);
      state.route = asset ? ASSET_ROUTE : PAGE_ROUTE;
      if (request.method !== "GET" && request.method !== "HEAD")
        return endResponse(errorResponse(methodNotAllowed(request.method), pathname, state));
      const head = request.method === "HEAD";

      if (asset) {
        const name = pathname.slice(ASSETS_PREFIX.length);
        const type = TYPES[extname(name)];
        const body =
          type && ASSET_NAME.test(name) ? await readFile(`${dist}assets/${name}`).catch(() => null) : null;
        if (!type || !body) return endResponse(errorResponse(assetNotFound(), pathname, state));
        return endResponse(
          new Response(head ? null : body, {
            headers: {
              "Content-Type": type,
              "Content-Length": String(body.byteLength),
              "Cache-Control": "public, max-age=31536000, immutable",
              "X-Content-Type-Options": "nosniff",
            },
          }),
        );
      }

      const page = await readFile(`${dist}index.html`).catch(() => null);
      if (!page) return endResponse(errorResponse(notBuilt(), pathname, state));
      const etag = `"${createHash("sha256").update(page).digest("base64url").slice(0, 27)}"`;
      if (request.headers.get("if-none-match") === etag)
        return endResponse(new Response(null, { status: 304, headers: { ...PAGE_HEADERS, ETag: etag } }));
      endResponse(
        new Response(head ? null : page, {
          headers: { ...PAGE_HEADERS, ETag: etag, "Content-Length": String(page.byteLength) },
        }),
      );
    },
  };
}
