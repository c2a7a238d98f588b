import { AGENT_SCOPES } from "../../schema/lib/scopes.ts";
import { type AgentServices, agentRoutes } from "./plugin.ts";

export const CLAIM_GRANT_TYPE = "urn:kontor:agent-auth:grant-type:claim";
export const JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer";
export const ID_JAG_ASSERTION_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
/** The Security Event Token event `/agent/event/notify` acts on (what auth.md providers send). */
export const ASSERTION_REVOKED_EVENT =
  "https://schemas.workos.com/events/agent/auth/identity/assertion/revoked";
export const IDENTITY_TYPES = ["service_auth", "anonymous", "identity_assertion"] as const;
/** What `requested_credential_type` may ask a registration to answer with, besides the identity assertion. */
export const CREDENTIAL_TYPES = ["access_token"] as const;

/** Every path of the protocol, relative to `{host_url}`. */
export const AGENT_PATHS = {
  authorizationServer: "/.well-known/oauth-authorization-server",
  jwks: "/.well-known/jwks.json",
  guide: "/auth.md",
  identity: "/agent/identity",
  /** The auth.md reference's name for the identity endpoint (its `register_uri`). */
  register: "/agent/auth",
  claim: "/agent/identity/claim",
  claimPage: "/agent/claim",
  events: "/agent/event/notify",
  /** The auth.md reference's name for the events endpoint (its `revocation_uri`). */
  revokeAlias: "/agent/auth/revoke",
  token: "/oauth2/token",
  revoke: "/oauth2/revoke",
} as const;

/** RFC 8414 authorization-server metadata with the auth.md `agent_auth` block. */
export function authorizationServerMetadata({
  hostUrl,
  baseUrl,
}: Pick<AgentServices, "hostUrl" | "baseUrl">) {
  const at = (path: string) => `${hostUrl}${path}`;
  return {
    issuer: hostUrl,
    token_endpoint: at(AGENT_PATHS.token),
    revocation_endpoint: at(AGENT_PATHS.revoke),
    jwks_uri: at(AGENT_PATHS.jwks),
    grant_types_supported: [CLAIM_GRANT_TYPE, JWT_BEARER_GRANT_TYPE],
    response_types_supported: [],
    token_endpoint_auth_methods_supported: ["none"],
    revocation_endpoint_auth_methods_supported: ["none"],
    scopes_supported: AGENT_SCOPES,
    service_documentation: at(AGENT_PATHS.guide),
    // RFC 9728 §4: the resources this server issues tokens for.
    protected_resources: [baseUrl],
    // What an agent written against the auth.md reference reads here rather than in the
    // protected-resource document: the deployment, and how its tokens are sent.
    resource: hostUrl,
    authorization_servers: [hostUrl],
    bearer_methods_supported: ["header"],
    agent_auth: {
      skill: at(AGENT_PATHS.guide),
      identity_endpoint: at(AGENT_PATHS.identity),
      claim_endpoint: at(AGENT_PATHS.claim),
      events_endpoint: at(AGENT_PATHS.events),
      // The same endpoints under the auth.md reference client's names.
      register_uri: at(AGENT_PATHS.register),
      claim_uri: at(AGENT_PATHS.claim),
      revocation_uri: at(AGENT_PATHS.revokeAlias),
      identity_types_supported: [...IDENTITY_TYPES],
      // Each type can answer with an access token at once (`requested_credential_type`).
      identity_types: Object.fromEntries(
        IDENTITY_TYPES.map((type) => [type, { credential_types_supported: [...CREDENTIAL_TYPES] }]),
      ),
      identity_assertion: { assertion_types_supported: [ID_JAG_ASSERTION_TYPE] },
      claim_grant_type: CLAIM_GRANT_TYPE,
      events_supported: [ASSERTION_REVOKED_EVENT],
    },
  };
}

// Metadata changes only with a deploy; the key set changes on rotation, and a verifier meeting an
// unknown kid refetches it anyway.
const METADATA_CACHE = "public, max-age=3600";
const JWKS_CACHE = "public, max-age=300";

agentRoutes({
  [AGENT_PATHS.authorizationServer]: {
    GET: async (_request, services) =>
      Response.json(authorizationServerMetadata(services), { headers: { "Cache-Control": METADATA_CACHE } }),
  },
  [AGENT_PATHS.jwks]: {
    GET: async (_request, services) =>
      Response.json(await services.keys.jwks(), {
        headers: { "Content-Type": "application/jwk-set+json", "Cache-Control": JWKS_CACHE },
      }),
  },
});
