import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { stateOf } from "../http/request-state.ts";
import type { Config } from "../runtime/config.ts";

/** The rendered API reference: a page, no credential, no CORS header (server/http/cors.ts). */
export const API_REFERENCE_PATH = "/docs";

// The package exports neither its package.json nor its browser build: found from its main entry
// (dist/index.js).
const PACKAGE_DIR = dirname(dirname(createRequire(import.meta.url).resolve("@scalar/api-reference")));
/** Scalar's self-contained browser build (styles inlined, no chunk loaded at run time). */
const BUNDLE_FILE = join(PACKAGE_DIR, "dist", "browser", "standalone.js");
/** In the bundle's URL, so a browser's cached copy ends with an upgrade. */
const BUNDLE_VERSION = (
  JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")) as { version: string }
).version;
const BUNDLE_PATH = `${API_REFERENCE_PATH}/standalone.js`;

/**
 * Scalar's options that would reach outside this server are off: its fonts (fonts.scalar.com),
 * telemetry, the agent chat, the MCP helper and the developer toolbar (Scalar's registry and
 * dashboard). No `proxyUrl`: "Test request" calls the API directly, which answers any origin.
 */
const SCALAR_CONFIGURATION = {
  url: "/v1/openapi.json",
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  persistAuth: false,
};

/**
 * What the page may load: its own bundle and the API, nothing from another host, so a future option
 * of the bundle that phones out is refused by the browser (and logged). "Test request" calls the
 * document's server, `{host_url}/v1`, which may be another origin than the one browsed (127.0.0.1
 * for localhost). Scalar injects its stylesheet at run time, hence inline styles.
 */
const csp = (nonce: string, apiOrigin: string) =>
  [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self' ${apiOrigin}`,
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");

/** The links bar above Scalar's layout (Scalar reserves `--scalar-custom-header-height` for it). */
const STYLE = `
:root { --scalar-custom-header-height: 40px; }
body { margin: 0; }
.kontor-links { position: sticky; top: 0; z-index: 100; height: 40px; box-sizing: border-box; display: flex;
  align-items: center; gap: 18px; padding: 0 16px; font: 14px/1 system-ui, sans-serif;
  background: #111827; color: #e5e7eb; }
.kontor-links a { color: #93c5fd; text-decoration: none; }
.kontor-links a:hover { text-decoration: underline; }
.kontor-links strong { color: #fff; margin-right: auto; }
.kontor-links code { font: 13px ui-monospace, monospace; }`;

/** The page: the links to the API's other faces, then Scalar mounted on `#reference`. */
function page(nonce: string): string {
  // `<` is escaped so the JSON cannot close the script element.
  const configuration = JSON.stringify(SCALAR_CONFIGURATION).replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta property="csp-nonce" content="${nonce}">
<title>Kontor API reference</title>
<style nonce="${nonce}">${STYLE}</style>
</head>
<body>
<nav class="kontor-links" aria-label="Kontor API">
<strong>Kontor API reference</strong>
<a href="/v1/openapi.json">OpenAPI document</a>
<a href="/graphql">GraphQL (GraphiQL)</a>
<span>SDK: <code>npm install @kontor/sdk</code></span>
<span>MCP: <code>POST /mcp</code></span>
<a href="/dashboard">Dashboard</a>
</nav>
<div id="reference"></div>
<script src="${BUNDLE_PATH}?v=${BUNDLE_VERSION}"></script>
<script nonce="${nonce}">Scalar.createApiReference("#reference", ${configuration});</script>
</body>
</html>
`;
}

const methodNotAllowed = (method: string) =>
  new ApiError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `${method.slice(0, 16)} is not allowed here.`,
    {
      headers: { Allow: "GET, HEAD" },
    },
  );

let bundle: Promise<Uint8Array<ArrayBuffer>> | undefined;

/**
 * Serves the API reference: `GET /docs` is the page (Scalar's standalone bundle rendering
 * `/v1/openapi.json`), `GET /docs/standalone.js` the bundle from the installed
 * `@scalar/api-reference` package. Nothing is fetched from a CDN; no credential is needed.
 *
 * @example
 * createYoga({ plugins: [useApiReference(config)] }); // then open {host_url}/docs
 */
export function useApiReference(config: Pick<Config, "publicUrl">): Plugin {
  const apiOrigin = new URL(config.publicUrl).origin;
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const { pathname } = url;
      const isPage = pathname === API_REFERENCE_PATH || pathname === `${API_REFERENCE_PATH}/`;
      if (!isPage && pathname !== BUNDLE_PATH) return;
      const state = stateOf(serverContext);
      state.route = isPage ? API_REFERENCE_PATH : BUNDLE_PATH;
      if (request.method !== "GET" && request.method !== "HEAD") {
        return endResponse(errorResponse(methodNotAllowed(request.method), pathname, state));
      }
      if (isPage) {
        const nonce = randomBytes(16).toString("base64");
        return endResponse(
          new Response(page(nonce), {
            headers: {
              "Content-Type": "text/html; charset=utf-8",
              "Cache-Control": "no-cache",
              "Content-Security-Policy": csp(nonce, apiOrigin),
              "X-Content-Type-Options": "nosniff",
              "X-Frame-Options": "DENY",
              "Referrer-Policy": "no-referrer",
            },
          }),
        );
      }
      // Read once, kept: 4.8 MB the page asks for on every visit without a warm cache.
      bundle ??= readFile(BUNDLE_FILE).then(
        (bytes) => new Uint8Array(bytes),
        (error: unknown) => {
          bundle = undefined; // read again next time (a package being reinstalled)
          throw error;
        },
      );
      endResponse(
        new Response(await bundle, {
          headers: {
            "Content-Type": "text/javascript; charset=utf-8",
            "Cache-Control": "public, max-age=86400",
            "X-Content-Type-Options": "nosniff",
          },
        }),
      );
    },
  };
}
