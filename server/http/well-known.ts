import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { MCP_PATH, MCP_RESOURCE_METADATA_PATH } from "../mcp/path.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import { errorResponse } from "./error-response.ts";
import { stateOf } from "./request-state.ts";

/** RFC 9728 protected resource metadata of `resource` (the API at `/v1`, the MCP server, or the deployment itself). */
function resourceMetadata(config: Config, resource: string, name: string) {
  return {
    resource,
    resource_name: name,
    authorization_servers: [config.publicUrl],
    scopes_supported: SCOPES,
    bearer_methods_supported: ["header"],
    resource_documentation: `${config.publicUrl}/auth.md`,
    resource_logo_uri: `${config.publicUrl}${LOGO_PATH}`,
  };
}

/** RFC 9728 protected resource metadata of the API, at the location its 401 names and at the RFC's own. */
export function protectedResourceMetadata(config: Config) {
  return resourceMetadata(config, baseUrl(config), "Kontor API");
}

export const PROTECTED_RESOURCE_PATHS = [
  "/v1/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/v1",
];

/** The documents of the MCP server (named by its 401) and of the deployment as a whole (the root, which agents written against the auth.md reference read first). */
const OTHER_RESOURCE_PATHS = {
  [MCP_RESOURCE_METADATA_PATH]: (config: Config) =>
    resourceMetadata(config, `${config.publicUrl}${MCP_PATH}`, "Kontor MCP server"),
  "/.well-known/oauth-protected-resource": (config: Config) =>
    resourceMetadata(config, config.publicUrl, "Kontor"),
} as const;

export const HEALTH_PATH = "/health";

/** The logo RFC 9728's `resource_logo_uri` names: a consent screen may show it beside the resource name. */
export const LOGO_PATH = "/logo.svg";
export const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img" aria-label="Kontor">
<rect width="64" height="64" rx="14" fill="#1f3a5f"/>
<path d="M20 14h8v15l13-15h10L36 31l16 19H42L28 33v17h-8z" fill="#fff"/>
</svg>
`;

/** The public documents at fixed paths: the protected-resource metadata, its logo, and the health check (200, empty). */
export function useWellKnown(config: Config): Plugin {
  const documents = new Map<string, unknown>([
    ...PROTECTED_RESOURCE_PATHS.map((path) => [path, protectedResourceMetadata(config)] as const),
    ...Object.entries(OTHER_RESOURCE_PATHS).map(([path, make]) => [path, make(config)] as const),
  ]);
  return {
    onRequest({ url, request, serverContext, endResponse }) {
      const health = url.pathname === HEALTH_PATH;
      const logo = url.pathname === LOGO_PATH;
      const document = documents.get(url.pathname);
      if (!health && !logo && !document) return;
      if (request.method !== "GET" && request.method !== "HEAD") {
        const error = new ApiError(
          405,
          "invalid_request_error",
          "method_not_allowed",
          `${request.method} is not allowed here.`,
          {
            headers: { Allow: "GET, HEAD" },
          },
        );
        return endResponse(errorResponse(error, url.pathname, stateOf(serverContext)));
      }
      if (health)
        return endResponse(new Response(null, { status: 200, headers: { "Cache-Control": "no-store" } }));
      if (logo)
        return endResponse(
          new Response(LOGO, {
            headers: {
              "Content-Type": "image/svg+xml; charset=utf-8",
              "Cache-Control": "public, max-age=86400",
            },
          }),
        );
      endResponse(Response.json(document, { headers: { "Cache-Control": "public, max-age=3600" } }));
    },
  };
}
