import { AgentAuthError } from "./errors.js";
import { getJson, isObject } from "./http.js";
import type { FetchLike } from "./options.js";
import type { AgentDiscovery, AuthorizationServerMetadata, ProtectedResourceMetadata } from "./protocol.js";

/**
 * Discovery: from nothing but the API's URL to the agent endpoints, through the 401 challenge
 * (RFC 9728), the protected-resource metadata and the authorization server's metadata (RFC 8414).
 */

/**
 * The `resource_metadata` parameter of a `WWW-Authenticate: Bearer …` challenge (RFC 9728 §5.1).
 *
 * @example
 * ```ts
 * const response = await fetch("https://kontor.example.com/v1/leads");
 * const metadataUrl = resourceMetadataFromChallenge(response.headers.get("www-authenticate"));
 * // "https://kontor.example.com/.well-known/oauth-protected-resource/v1"
 * ```
 */
export function resourceMetadataFromChallenge(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i.exec(header);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : match[2];
}

/** RFC 8414 §3.1: the metadata of an issuer with a path is at `/.well-known/oauth-authorization-server{path}`. */
function authorizationServerMetadataUrl(issuer: string): string {
  const url = new URL(issuer);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "");
  return `${url.origin}/.well-known/oauth-authorization-server${path}`;
}

/** The `resource_metadata` of the 401 that `url` answers without a credential. */
async function challenge(fetchImpl: FetchLike, url: string): Promise<string | undefined> {
  let response: Response;
  try {
    response = await fetchImpl(url, { headers: { accept: "application/json" } });
  } catch (error) {
    throw new AgentAuthError("discovery_failed", `${url} could not be reached: ${(error as Error).message}`);
  }
  await response.body?.cancel().catch(() => {});
  if (response.status !== 401) return undefined;
  const found = resourceMetadataFromChallenge(response.headers.get("www-authenticate"));
  return found ? new URL(found, url).href : undefined;
}

/**
 * Finds the endpoints of the Kontor deployment at `baseUrl` (what `AgentAuth.discover` runs):
 * the challenge's `resource_metadata`, else the RFC 9728 well-known locations.
 *
 * @example
 * ```ts
 * const { authorizationServer } = await discoverAgentEndpoints(fetch, "https://kontor.example.com/v1");
 * console.log(authorizationServer.agent_auth.identity_endpoint);
 * ```
 */
export async function discoverAgentEndpoints(fetchImpl: FetchLike, baseUrl: string): Promise<AgentDiscovery> {
  const base = baseUrl.replace(/\/+$/, "");
  const origin = new URL(base).origin;
  const path = new URL(base).pathname.replace(/\/+$/, "");

  let metadataUrl = await challenge(fetchImpl, base);
  if (!metadataUrl && path === "") metadataUrl = await challenge(fetchImpl, `${origin}/v1`);
  const candidates = metadataUrl
    ? [metadataUrl]
    : [
        `${origin}/.well-known/oauth-protected-resource${path}`,
        `${base}/.well-known/oauth-protected-resource`,
      ];

  let resource: ProtectedResourceMetadata | undefined;
  let resourceMetadataUrl = candidates[0]!;
  for (const candidate of candidates) {
    const found = await getJson(fetchImpl, candidate);
    if (
      found &&
      Array.isArray(found.authorization_servers) &&
      typeof found.authorization_servers[0] === "string"
    ) {
      resource = found as ProtectedResourceMetadata;
      resourceMetadataUrl = candidate;
      break;
    }
  }
  if (!resource) {
    throw new AgentAuthError(
      "discovery_failed",
      `No protected-resource metadata found for ${base}: is it a Kontor API URL?`,
    );
  }

  const issuer = resource.authorization_servers[0]!;
  const as = await getJson(fetchImpl, authorizationServerMetadataUrl(issuer));
  if (!as)
    throw new AgentAuthError("discovery_failed", `The authorization server ${issuer} publishes no metadata.`);
  // RFC 8414 §3.3: the metadata must be the issuer's own.
  if (as.issuer !== issuer)
    throw new AgentAuthError(
      "discovery_failed",
      `The metadata of ${issuer} names another issuer (${String(as.issuer)}).`,
    );
  const agentAuth = as.agent_auth;
  if (
    typeof as.token_endpoint !== "string" ||
    !isObject(agentAuth) ||
    typeof agentAuth.identity_endpoint !== "string"
  ) {
    throw new AgentAuthError(
      "discovery_failed",
      `${issuer} does not support agent registration (no agent_auth block).`,
    );
  }
  return { resourceMetadataUrl, resource, authorizationServer: as as AuthorizationServerMetadata };
}
