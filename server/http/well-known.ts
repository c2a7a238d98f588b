import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import { errorResponse } from "./error-response.ts";

/** RFC 9728 protected resource metadata, at the location the README gives and at the RFC's own. */
export function protectedResourceMetadata(config: Config) {
  return {
    resource: baseUrl(config),
    resource_name: "Kontor API",
    authorization_servers: [config.publicUrl],
    scopes_supported: SCOPES,
    bearer_methods_supported: ["header"],
    resource_documentation: `${config.publicUrl}/auth.md`,
    resource_logo_uri: `${config.publicUrl}${LOGO_PATH}`,
  };
}

export const PROTECTED_RESOURCE_PATHS = [
  "/v1/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/v1",
];

export const HEALTH_PATH = "/health";

/** The logo RFC 9728's `resource_logo_uri` names: a consent screen may show it beside the resource name. */
export const LOGO_PATH = "/logo.svg";
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" role="img" aria-label="Kontor">
<rect width="64" height="64" rx="14" fill="#1f3a5f"/>
<path d="M20 14h8v15l13-15h10L36 31l16 19H42L28 33v17h-8z" fill="#fff"/>
</svg>
`;

/** The public documents at fixed paths: the protected-resource metadata, its logo, and the health check (200, empty). */
export function useWellKnown(config: Config): Plugin {
  const document = protectedResourceMetadata(config);
  return {
    onRequest({ url, request, endResponse }) {
      const health = url.pathname === HEALTH_PATH;
      const logo = url.pathname === LOGO_PATH;
      if (!health && !logo && !PROTECTED_RESOURCE_PATHS.includes(url.pathname)) return;
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
        return endResponse(errorResponse(error, url.pathname));
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
