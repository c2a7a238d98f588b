import type { Plugin } from "graphql-yoga";
import type { Credential } from "../../schema/context.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse, GRAPHQL_PATH } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { MCP_PATH, MCP_RESOURCE_METADATA_PATH } from "../mcp/path.ts";
import { baseUrl, type Config } from "../runtime/config.ts";

/** Turns a bearer token into a credential: API keys, agent tokens. */
export type CredentialResolver = (token: string) => Promise<Credential | null>;

/**
 * The dashboard's session cookie, for requests without an Authorization header: null when the
 * request is not a session's (no cookie, no X-CSRF-Token), else the credential or the error to
 * answer (`challenge` goes on a 401).
 */
export type SessionResolver = (
  request: Request,
  challenge: Record<string, string>,
) => Promise<Credential | ApiError | null>;

/** The protected resources: `/v1`, `/graphql` and `/mcp`. Anything else is public or a 404. */
const isProtected = (url: URL) =>
  url.pathname === GRAPHQL_PATH ||
  url.pathname === MCP_PATH ||
  url.pathname === "/v1" ||
  url.pathname.startsWith("/v1/");

/** Documents anyone may fetch: the OpenAPI description and GraphiQL's page. */
function isPublic(request: Request, url: URL): boolean {
  if (url.pathname === "/v1/openapi.json") return true;
  return (
    url.pathname === GRAPHQL_PATH &&
    request.method === "GET" &&
    !url.searchParams.has("query") &&
    (request.headers.get("accept") ?? "").includes("text/html")
  );
}

export function useAuthentication(
  config: Config,
  resolvers: CredentialResolver[],
  sessions?: SessionResolver,
): Plugin {
  const apiMetadata = `${baseUrl(config)}/.well-known/oauth-protected-resource`;
  // An MCP client follows its resource's own document (docs/api/mcp.md).
  const mcpMetadata = `${config.publicUrl}${MCP_RESOURCE_METADATA_PATH}`;
  const challenge = (state: RequestState, error?: string) => {
    const metadata = state.route === MCP_PATH ? mcpMetadata : apiMetadata;
    return `Bearer resource_metadata="${metadata}"${error ? `, error="${error}"` : ""}`;
  };

  const unauthenticated = (state: RequestState) =>
    new ApiError(
      401,
      "authentication_error",
      "unauthenticated",
      "Send an API key as 'Authorization: Bearer ktr_live_…'.",
      {
        headers: { "WWW-Authenticate": challenge(state) },
      },
    );
  const invalidToken = (state: RequestState) =>
    new ApiError(
      401,
      "authentication_error",
      "invalid_token",
      "The bearer token is not valid, or it was revoked.",
      {
        headers: { "WWW-Authenticate": challenge(state, "invalid_token") },
      },
    );
  // RFC 6750 §3.1: another scheme (Basic…) is an unsupported method, so no error code in the challenge.
  // The scheme is not echoed: a key sent without "Bearer " would be.
  const wrongScheme = (state: RequestState) =>
    new ApiError(
      401,
      "authentication_error",
      "invalid_token",
      "The Authorization scheme must be Bearer: send 'Authorization: Bearer ktr_live_…'.",
      {
        headers: { "WWW-Authenticate": challenge(state) },
      },
    );

  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const state = stateOf(serverContext);
      if (url.pathname === GRAPHQL_PATH) state.route = GRAPHQL_PATH;
      if (request.method === "OPTIONS" || !isProtected(url) || isPublic(request, url)) return;
      const header = request.headers.get("authorization");
      // A Bearer credential wins over a session cookie sent along with it.
      if (!header) {
        // /mcp takes API keys and agent tokens only: a dashboard cookie never drives tools.
        const session =
          sessions && url.pathname !== MCP_PATH
            ? await sessions(request, { "WWW-Authenticate": challenge(state) })
            : null;
        if (session instanceof ApiError) return endResponse(errorResponse(session, url.pathname, state));
        if (!session) return endResponse(errorResponse(unauthenticated(state), url.pathname, state));
        state.credential = session;
        return;
      }
      if (!/^bearer(\s|$)/i.test(header))
        return endResponse(errorResponse(wrongScheme(state), url.pathname, state));
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      let credential: Credential | null = null;
      for (const resolve of match ? resolvers : []) {
        credential = await resolve(match![1]!);
        if (credential) break;
      }
      if (!credential) return endResponse(errorResponse(invalidToken(state), url.pathname, state));
      state.credential = credential;
    },
  };
}
