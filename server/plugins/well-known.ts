import type { Plugin } from "graphql-yoga";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { baseUrl, type Config } from "../config.ts";
import { errorResponse } from "../error-response.ts";

/** RFC 9728 protected resource metadata, at the api-spec.md location and at the RFC's own. */
export function protectedResourceMetadata(config: Config) {
  return {
    resource: baseUrl(config),
    resource_name: "Kontor API",
    authorization_servers: [config.publicUrl],
    scopes_supported: SCOPES,
    bearer_methods_supported: ["header"],
    resource_documentation: `${config.publicUrl}/auth.md`,
  };
}

export const PROTECTED_RESOURCE_PATHS = ["/v1/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/v1"];

export const HEALTH_PATH = "/health";

/** The public documents at fixed paths: the protected-resource metadata, and the health check (200, empty). */
export function useWellKnown(config: Config): Plugin {
  const document = protectedResourceMetadata(config);
  return {
    onRequest({ url, request, endResponse }) {
      const health = url.pathname === HEALTH_PATH;
      if (!health && !PROTECTED_RESOURCE_PATHS.includes(url.pathname)) return;
      if (request.method !== "GET" && request.method !== "HEAD") {
        const error = new ApiError(405, "invalid_request_error", "method_not_allowed", `${request.method} is not allowed here.`, {
          headers: { Allow: "GET, HEAD" },
        });
        return endResponse(errorResponse(error, url.pathname));
      }
      if (health) return endResponse(new Response(null, { status: 200, headers: { "Cache-Control": "no-store" } }));
      endResponse(Response.json(document, { headers: { "Cache-Control": "public, max-age=3600" } }));
    },
  };
}
