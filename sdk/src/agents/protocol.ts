/**
 * The agent protocol's constants and the shapes its endpoints answer with, as the server sends
 * them (snake_case): RFC 9728 and RFC 8414 metadata, registrations and claims.
 */

/** The claim grant type of the auth.md protocol (also read from the metadata's `agent_auth.claim_grant_type`). */
export const CLAIM_GRANT_TYPE = "urn:kontor:agent-auth:grant-type:claim";
/** RFC 7523: the identity assertion exchanged for an access token. */
export const JWT_BEARER_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/** RFC 8628 §3.5: what a `slow_down` adds to the polling interval. */
export const SLOW_DOWN_STEP_SECONDS = 5;
/** The polling interval when the server names none (RFC 8628 §3.2 default). */
export const DEFAULT_POLL_INTERVAL_SECONDS = 5;
/** An access token is renewed this long before it expires. */
export const DEFAULT_REFRESH_MARGIN_SECONDS = 60;

/** RFC 9728 protected-resource metadata. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  resource_name?: string;
  scopes_supported?: string[];
  bearer_methods_supported?: string[];
  resource_documentation?: string;
  resource_logo_uri?: string;
  [field: string]: unknown;
}

/** The auth.md `agent_auth` block of the authorization-server metadata. */
export interface AgentAuthMetadata {
  skill?: string;
  identity_endpoint: string;
  claim_endpoint: string;
  events_endpoint?: string;
  register_uri?: string;
  claim_uri?: string;
  revocation_uri?: string;
  identity_types_supported: string[];
  identity_assertion?: { assertion_types_supported: string[] };
  claim_grant_type: string;
  events_supported?: string[];
  [field: string]: unknown;
}

/** RFC 8414 authorization-server metadata with `agent_auth`. */
export interface AuthorizationServerMetadata {
  issuer: string;
  token_endpoint: string;
  revocation_endpoint?: string;
  jwks_uri?: string;
  grant_types_supported?: string[];
  scopes_supported?: string[];
  service_documentation?: string;
  protected_resources?: string[];
  agent_auth: AgentAuthMetadata;
  [field: string]: unknown;
}

export interface AgentDiscovery {
  /** Where the protected-resource metadata was read (from the 401's `resource_metadata`). */
  resourceMetadataUrl: string;
  resource: ProtectedResourceMetadata;
  authorizationServer: AuthorizationServerMetadata;
}

/** What the agent hands its person: open `verification_uri`, type `user_code`. */
export interface AgentClaim {
  /** 6 digits. */
  user_code: string;
  /** The claim page; it never holds the code. */
  verification_uri: string;
  /** Seconds the code and link live. */
  expires_in: number;
  /** Seconds between polls of the token endpoint. */
  interval: number;
}

export interface ServiceAuthRegistration {
  registration_id: string;
  registration_type: "service_auth";
  claim_url: string;
  claim_token: string;
  claim_token_expires: string;
  post_claim_scopes: string[];
  claim: AgentClaim;
}

export interface AnonymousRegistration {
  registration_id: string;
  registration_type: "anonymous";
  identity_assertion: string;
  assertion_expires: string;
  pre_claim_scopes: string[];
  claim_url: string;
  claim_token: string;
  claim_token_expires: string;
  post_claim_scopes: string[];
}

export type AgentRegistration = ServiceAuthRegistration | AnonymousRegistration;

/** `POST /agent/identity/claim`: a new code and link (earlier ones end). */
export interface StartedClaim {
  registration_id: string;
  registration_type: "service_auth" | "anonymous" | "identity_assertion";
  status: "initiated";
  expires_at: string;
  claim: AgentClaim;
  claim_attempt: AgentClaim;
}

export type ServiceAuthInput = {
  type: "service_auth";
  /** The e-mail address of the person the agent works for. */
  loginHint: string;
  /** Shown on the claim page (up to 100 characters). */
  agentName?: string;
  /** What the agent asks for (default: every scope an agent can hold). */
  scope?: string | string[];
};

export type AnonymousInput = {
  type: "anonymous";
  agentName?: string;
};
