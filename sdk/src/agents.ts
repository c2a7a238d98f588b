/**
 * The agent flow (README "Agents", server/agents/auth.md): an AI agent that knows
 * only Kontor's URL discovers the endpoints from a 401, registers, hands its person a link and a
 * code, polls the token endpoint until the person approves, and then holds short-lived `ktr_agt_…`
 * access tokens that it renews with its identity assertion (RFC 7523) shortly before they expire.
 *
 * Self-contained and fetch-based (Node 20+ and browsers): no Node-only import, no dependency.
 *
 * ```ts
 * const agent = new AgentAuth({ baseUrl: "https://kontor.example.com/v1" });
 * const { claim } = await agent.register({ type: "service_auth", loginHint: "owner@example.com", agentName: "Billing bot" });
 * console.log(`Open ${claim.verification_uri} and enter the code ${claim.user_code}`);
 * await agent.waitForClaim();
 * const kontor = new Kontor({ apiKey: await agent.accessToken() });
 * ```
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

// ---------------------------------------------------------------------------------------------
// Shapes of the protocol (as the server sends them: snake_case)
// ---------------------------------------------------------------------------------------------

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

/** A token endpoint answer, with when the token expires on this helper's clock. */
export interface AgentTokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  /** Milliseconds since the epoch (the `now` clock), taken before the request was sent. */
  expires_at: number;
  /** Only from the claim grant. */
  identity_assertion?: string;
  assertion_expires?: string;
}

/** What to keep between runs (the identity assertion is good for 30 days). */
export interface AgentAuthState {
  registrationId?: string;
  claimToken?: string;
  /** Seconds between claim polls, slow_down increases included. */
  pollInterval?: number;
  identityAssertion?: string;
  assertionExpires?: string;
  accessToken?: string;
  /** Milliseconds since the epoch. */
  accessTokenExpiresAt?: number;
  scope?: string;
}

export interface PendingPoll {
  /** `authorization_pending`: the person has not decided yet; `slow_down`: the interval grew. */
  reason: "authorization_pending" | "slow_down";
  /** Seconds the helper waits before the next poll. */
  interval: number;
  /** Polls sent so far in this wait. */
  polls: number;
}

export interface WaitForClaimOptions {
  /** Called after every poll that means "keep waiting" (before the helper waits `interval`). */
  onPending?: (poll: PendingPoll) => void | Promise<void>;
  /** Aborts the wait (and a request in flight): the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export type FetchLike = (input: string, init?: RequestInit) => Promise<Response>;

export interface AgentAuthOptions {
  /** Kontor's API URL (`https://…/v1`) or its host URL. */
  baseUrl?: string;
  /** Default: the global `fetch`. */
  fetch?: FetchLike;
  /** The clock, in milliseconds since the epoch (default `Date.now`). */
  now?: () => number;
  /** How the helper waits between polls (default: a timer that the signal aborts). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Renew the access token this many seconds before it expires (default 60). */
  refreshMarginSeconds?: number;
  /** A state saved earlier (`agent.state`). */
  state?: AgentAuthState;
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/**
 * An OAuth error of the agent endpoints (`code` is the server's `error`: `invalid_grant`,
 * `agent_auth_disabled`, `invalid_login_hint`, …) or of this helper (`discovery_failed`,
 * `invalid_response`, `not_registered`, `no_claim_started`, `no_identity_assertion`, `revocation_failed`).
 */
export class AgentAuthError extends Error {
  override name = "AgentAuthError";
  readonly code: string;
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** The server's answer, parsed. */
  readonly body: Record<string, unknown> | undefined;

  constructor(code: string, message: string, details: { status?: number; body?: Record<string, unknown> } = {}) {
    super(message);
    this.code = code;
    this.status = details.status;
    this.body = details.body;
  }
}

/** The person denied the agent (`access_denied`): stop. */
export class ClaimDeniedError extends AgentAuthError {
  override name = "ClaimDeniedError";
}

/**
 * The claim ended without approval (`expired_token`: the code expired, or five wrong codes closed
 * it, or the claim token itself expired): start a new ceremony with `startClaim`, or register again.
 */
export class ClaimExpiredError extends AgentAuthError {
  override name = "ClaimExpiredError";
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The `resource_metadata` parameter of a `WWW-Authenticate: Bearer …` challenge (RFC 9728 §5.1). */
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

const scopeString = (scope: string | string[] | undefined) => (Array.isArray(scope) ? scope.join(" ") : scope);

function describe(body: Record<string, unknown> | undefined, fallback: string): string {
  const description = typeof body?.error_description === "string" ? body.error_description : undefined;
  const code = typeof body?.error === "string" ? body.error : undefined;
  return code ? `${code}: ${description ?? fallback}` : fallback;
}

// ---------------------------------------------------------------------------------------------
// The helper
// ---------------------------------------------------------------------------------------------

/**
 * Runs the agent flow against one Kontor deployment and keeps its credentials:
 * `discover` → `register` → (hand the person `claim.verification_uri` and `claim.user_code`) →
 * `waitForClaim` → `accessToken()` whenever a token is needed (it re-exchanges the identity
 * assertion shortly before the token expires). `state` is what to store to resume later.
 */
export class AgentAuth {
  private readonly baseUrl: string | undefined;
  private readonly fetchImpl: FetchLike;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly refreshMarginSeconds: number;

  private discovery: AgentDiscovery | undefined;
  private discovering: Promise<AgentDiscovery> | undefined;
  private registrationId: string | undefined;
  private claimToken: string | undefined;
  private pollInterval: number;
  private lastPollAt: number | undefined;
  /** A ceremony runs (service_auth registered, or startClaim called): polling can end. */
  private claimStarted: boolean;
  private identityAssertion: string | undefined;
  private assertionExpires: string | undefined;
  private token: { value: string; expiresAt: number; lifetimeSeconds: number; scope: string | undefined } | undefined;
  private exchanging: Promise<AgentTokens> | undefined;

  constructor(options: AgentAuthOptions = {}) {
    this.baseUrl = options.baseUrl?.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? abortableSleep;
    this.refreshMarginSeconds = options.refreshMarginSeconds ?? DEFAULT_REFRESH_MARGIN_SECONDS;
    const state = options.state ?? {};
    this.registrationId = state.registrationId;
    this.claimToken = state.claimToken;
    this.pollInterval = state.pollInterval ?? DEFAULT_POLL_INTERVAL_SECONDS;
    this.claimStarted = state.claimToken !== undefined;
    this.identityAssertion = state.identityAssertion;
    this.assertionExpires = state.assertionExpires;
    if (state.accessToken && state.accessTokenExpiresAt !== undefined) {
      this.token = { value: state.accessToken, expiresAt: state.accessTokenExpiresAt, lifetimeSeconds: Infinity, scope: state.scope };
    }
  }

  /** What to store to resume later with `new AgentAuth({ baseUrl, state })`. Holds secrets. */
  get state(): AgentAuthState {
    return {
      ...(this.registrationId !== undefined && { registrationId: this.registrationId }),
      ...(this.claimToken !== undefined && { claimToken: this.claimToken }),
      pollInterval: this.pollInterval,
      ...(this.identityAssertion !== undefined && { identityAssertion: this.identityAssertion }),
      ...(this.assertionExpires !== undefined && { assertionExpires: this.assertionExpires }),
      ...(this.token && { accessToken: this.token.value, accessTokenExpiresAt: this.token.expiresAt }),
      ...(this.token?.scope !== undefined && { scope: this.token.scope }),
    };
  }

  // -- discovery --------------------------------------------------------------------------------

  /**
   * Finds the endpoints from nothing but the API's URL: a request without a credential is answered
   * 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728), that document names the
   * authorization server, whose RFC 8414 metadata carries the endpoints and the `agent_auth` block.
   * Falls back to the RFC 9728 well-known location when no challenge names the metadata.
   */
  async discover(baseUrl: string | undefined = this.baseUrl): Promise<AgentDiscovery> {
    if (!baseUrl) throw new TypeError("AgentAuth.discover needs Kontor's URL (baseUrl).");
    const base = baseUrl.replace(/\/+$/, "");
    const origin = new URL(base).origin;
    const path = new URL(base).pathname.replace(/\/+$/, "");

    let metadataUrl = await this.challenge(base);
    if (!metadataUrl && path === "") metadataUrl = await this.challenge(`${origin}/v1`);
    const candidates = metadataUrl
      ? [metadataUrl]
      : [`${origin}/.well-known/oauth-protected-resource${path}`, `${base}/.well-known/oauth-protected-resource`];

    let resource: ProtectedResourceMetadata | undefined;
    let resourceMetadataUrl = candidates[0]!;
    for (const candidate of candidates) {
      const found = await this.getJson(candidate);
      if (found && Array.isArray(found.authorization_servers) && typeof found.authorization_servers[0] === "string") {
        resource = found as ProtectedResourceMetadata;
        resourceMetadataUrl = candidate;
        break;
      }
    }
    if (!resource) {
      throw new AgentAuthError("discovery_failed", `No protected-resource metadata found for ${base}: is it a Kontor API URL?`);
    }

    const issuer = resource.authorization_servers[0]!;
    const as = await this.getJson(authorizationServerMetadataUrl(issuer));
    if (!as) throw new AgentAuthError("discovery_failed", `The authorization server ${issuer} publishes no metadata.`);
    // RFC 8414 §3.3: the metadata must be the issuer's own.
    if (as.issuer !== issuer) throw new AgentAuthError("discovery_failed", `The metadata of ${issuer} names another issuer (${String(as.issuer)}).`);
    const agentAuth = as.agent_auth;
    if (typeof as.token_endpoint !== "string" || !isObject(agentAuth) || typeof agentAuth.identity_endpoint !== "string") {
      throw new AgentAuthError("discovery_failed", `${issuer} does not support agent registration (no agent_auth block).`);
    }
    this.discovery = { resourceMetadataUrl, resource, authorizationServer: as as AuthorizationServerMetadata };
    return this.discovery;
  }

  /** The discovered endpoints (discovering first if needed). */
  private async endpoints(): Promise<AuthorizationServerMetadata> {
    if (this.discovery) return this.discovery.authorizationServer;
    this.discovering ??= this.discover().finally(() => (this.discovering = undefined));
    return (await this.discovering).authorizationServer;
  }

  /** The `resource_metadata` of the 401 that `url` answers without a credential. */
  private async challenge(url: string): Promise<string | undefined> {
    let response: Response;
    try {
      response = await this.fetchImpl(url, { headers: { accept: "application/json" } });
    } catch (error) {
      throw new AgentAuthError("discovery_failed", `${url} could not be reached: ${(error as Error).message}`);
    }
    await response.body?.cancel().catch(() => {});
    if (response.status !== 401) return undefined;
    const found = resourceMetadataFromChallenge(response.headers.get("www-authenticate"));
    return found ? new URL(found, url).href : undefined;
  }

  private async getJson(url: string): Promise<Record<string, unknown> | undefined> {
    const response = await this.fetchImpl(url, { headers: { accept: "application/json" } });
    const text = await response.text();
    if (response.status !== 200) return undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      return isObject(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  // -- registration ------------------------------------------------------------------------------

  /**
   * Registers the agent (`POST {host}/agent/identity`).
   * - `service_auth`: the answer's `claim` (`verification_uri`, `user_code`) is what to show the
   *   person; then `waitForClaim()`.
   * - `anonymous`: the agent can work at once in a sandbox (`accessToken()`); `startClaim(email)`
   *   later hands the sandbox to a person.
   */
  register(input: ServiceAuthInput): Promise<ServiceAuthRegistration>;
  register(input: AnonymousInput): Promise<AnonymousRegistration>;
  register(input: ServiceAuthInput | AnonymousInput): Promise<AgentRegistration>;
  async register(input: ServiceAuthInput | AnonymousInput): Promise<AgentRegistration> {
    const { agent_auth: agentAuth } = await this.endpoints();
    const body: Record<string, unknown> = { type: input.type };
    if (input.agentName !== undefined) body.agent_name = input.agentName;
    if (input.type === "service_auth") {
      body.login_hint = input.loginHint;
      const scope = scopeString(input.scope);
      if (scope !== undefined) body.scope = scope;
    }
    const registration = (await this.postJson(agentAuth.register_uri ?? agentAuth.identity_endpoint, body)) as unknown as AgentRegistration;
    if (typeof registration.registration_id !== "string" || typeof registration.claim_token !== "string") {
      throw new AgentAuthError("invalid_response", "The registration answer has no registration_id or claim_token.", { body: registration as never });
    }
    this.registrationId = registration.registration_id;
    this.claimToken = registration.claim_token;
    this.lastPollAt = undefined;
    this.token = undefined;
    this.identityAssertion = undefined;
    this.assertionExpires = undefined;
    this.claimStarted = registration.registration_type === "service_auth";
    if (registration.registration_type === "service_auth") this.adoptClaim(registration.claim);
    else {
      this.identityAssertion = registration.identity_assertion;
      this.assertionExpires = registration.assertion_expires;
    }
    return registration;
  }

  /**
   * Starts a (new) claim ceremony for `loginHint` (`POST {host}/agent/identity/claim`): an anonymous
   * agent names its person here; a service_auth agent gets a new code after `ClaimExpiredError`.
   */
  async startClaim(loginHint: string): Promise<StartedClaim> {
    if (!this.claimToken) throw new AgentAuthError("not_registered", "No claim token: register first (or the claim was already redeemed).");
    const { agent_auth: agentAuth } = await this.endpoints();
    const started = (await this.postJson(agentAuth.claim_uri ?? agentAuth.claim_endpoint, {
      type: "login_hint",
      claim_token: this.claimToken,
      login_hint: loginHint,
    })) as unknown as StartedClaim;
    this.adoptClaim(started.claim ?? started.claim_attempt);
    this.claimStarted = true;
    return started;
  }

  private adoptClaim(claim: AgentClaim | undefined) {
    if (claim && typeof claim.interval === "number" && claim.interval > 0) this.pollInterval = claim.interval;
  }

  // -- the claim grant ------------------------------------------------------------------------

  /**
   * Polls the token endpoint with the claim grant until the person has approved, every `interval`
   * seconds (the first poll at once, or `interval` after this helper's previous one); a
   * `slow_down` adds 5 seconds to the interval for every later poll (RFC 8628 §3.5), or takes the
   * server's `interval` when that is longer. Resolves with the tokens (and keeps them, with the
   * identity assertion); rejects with `ClaimDeniedError`, `ClaimExpiredError`, another
   * `AgentAuthError`, or the signal's reason.
   */
  async waitForClaim(options: WaitForClaimOptions = {}): Promise<AgentTokens> {
    const { signal } = options;
    const claimToken = this.claimToken;
    if (!claimToken) throw new AgentAuthError("not_registered", "No claim token: register first (or the claim was already redeemed).");
    if (!this.claimStarted) {
      throw new AgentAuthError("no_claim_started", "No claim ceremony runs for this anonymous agent: call startClaim(email) and show the person its code first.");
    }
    const as = await this.endpoints();
    const grantType = as.agent_auth.claim_grant_type || CLAIM_GRANT_TYPE;

    if (this.lastPollAt !== undefined) {
      const wait = this.lastPollAt + this.pollInterval * 1000 - this.now();
      if (wait > 0) await this.sleep(wait, signal);
    }
    for (let polls = 1; ; polls++) {
      signal?.throwIfAborted();
      this.lastPollAt = this.now();
      const answer = await this.tokenRequest(as, { grant_type: grantType, claim_token: claimToken }, signal);
      if (answer.ok) {
        this.claimToken = undefined;
        return answer.tokens;
      }
      const { error, body, status, retryAfter } = answer;
      const serverInterval = typeof body.interval === "number" && body.interval > 0 ? body.interval : undefined;
      let wait: number;
      let reason: PendingPoll["reason"];
      if (error === "authorization_pending") {
        if (serverInterval !== undefined && serverInterval > this.pollInterval) this.pollInterval = serverInterval;
        wait = this.pollInterval;
        reason = "authorization_pending";
      } else if (error === "slow_down") {
        this.pollInterval = Math.max(this.pollInterval + SLOW_DOWN_STEP_SECONDS, serverInterval ?? 0);
        wait = this.pollInterval;
        reason = "slow_down";
      } else if (status === 429) {
        // The per-address limit of requests without a credential: wait as told, then go on.
        wait = Math.max(this.pollInterval, retryAfter ?? 0);
        reason = "slow_down";
      } else {
        const message = describe(body, `The token endpoint answered ${status}.`);
        if (error === "access_denied") throw new ClaimDeniedError(error, message, { status, body });
        if (error === "expired_token") throw new ClaimExpiredError(error, message, { status, body });
        throw new AgentAuthError(error, message, { status, body });
      }
      await options.onPending?.({ reason, interval: wait, polls });
      await this.sleep(wait * 1000, signal);
    }
  }

  // -- the jwt-bearer grant ----------------------------------------------------------------------

  /**
   * Exchanges the identity assertion for a new access token (RFC 7523) and keeps it. `scope`
   * narrows the token to part of what the registration holds.
   */
  async exchange(options: { scope?: string | string[]; signal?: AbortSignal } = {}): Promise<AgentTokens> {
    const assertion = this.identityAssertion;
    if (!assertion) {
      throw new AgentAuthError("no_identity_assertion", "No identity assertion: register (anonymous) or wait for the claim (service_auth) first.");
    }
    const as = await this.endpoints();
    const parameters: Record<string, string> = { grant_type: JWT_BEARER_GRANT_TYPE, assertion };
    const scope = scopeString(options.scope);
    if (scope !== undefined) parameters.scope = scope;
    const answer = await this.tokenRequest(as, parameters, options.signal);
    if (!answer.ok) throw new AgentAuthError(answer.error, describe(answer.body, `The token endpoint answered ${answer.status}.`), answer);
    return answer.tokens;
  }

  /**
   * A valid access token: the one held, or a new one exchanged for the identity assertion when the
   * held one expires within `refreshMarginSeconds` (60 s; at most half the token's lifetime).
   * Concurrent callers share one exchange.
   */
  async accessToken(): Promise<string> {
    const token = this.token;
    if (token) {
      const margin = Math.min(this.refreshMarginSeconds, token.lifetimeSeconds / 2) * 1000;
      if (this.now() < token.expiresAt - margin) return token.value;
    }
    this.exchanging ??= this.exchange().finally(() => (this.exchanging = undefined));
    return (await this.exchanging).access_token;
  }

  // -- revocation --------------------------------------------------------------------------------

  /** Revokes the access token held (RFC 7009); the identity assertion still gets new ones. */
  async revokeToken(): Promise<void> {
    const token = this.token;
    if (!token) return;
    await this.revoke(token.value, "access_token");
    this.token = undefined;
  }

  /** Revokes the whole registration: every token, and the identity assertion. */
  async revokeRegistration(): Promise<void> {
    const assertion = this.identityAssertion;
    if (!assertion) throw new AgentAuthError("no_identity_assertion", "No identity assertion to revoke the registration with.");
    await this.revoke(assertion);
    this.token = undefined;
    this.identityAssertion = undefined;
    this.assertionExpires = undefined;
  }

  private async revoke(token: string, hint?: string): Promise<void> {
    const as = await this.endpoints();
    const endpoint = as.revocation_endpoint;
    if (!endpoint) throw new AgentAuthError("discovery_failed", "The authorization server has no revocation_endpoint.");
    const form = new URLSearchParams({ token, ...(hint && { token_type_hint: hint }) });
    const response = await this.fetchImpl(endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: form.toString(),
    });
    const text = await response.text();
    if (response.status !== 200) {
      const body = this.parse(text);
      throw new AgentAuthError(typeof body?.error === "string" ? body.error : "revocation_failed", describe(body, `The revocation endpoint answered ${response.status}.`), {
        status: response.status,
        ...(body && { body }),
      });
    }
  }

  // -- HTTP --------------------------------------------------------------------------------------

  private parse(text: string): Record<string, unknown> | undefined {
    try {
      const parsed: unknown = JSON.parse(text);
      return isObject(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  private async postJson(url: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const response = await this.fetchImpl(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const parsed = this.parse(text);
    if (response.status !== 200 || !parsed) {
      const code = typeof parsed?.error === "string" ? parsed.error : "invalid_response";
      throw new AgentAuthError(code, describe(parsed, `${url} answered ${response.status}.`), { status: response.status, ...(parsed && { body: parsed }) });
    }
    return parsed;
  }

  /** One form-encoded request to the token endpoint; a 200 keeps the token (and the assertion it may carry). */
  private async tokenRequest(
    as: AuthorizationServerMetadata,
    parameters: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<
    | { ok: true; tokens: AgentTokens }
    | { ok: false; error: string; status: number; body: Record<string, unknown>; retryAfter: number | undefined }
  > {
    const sentAt = this.now();
    const response = await this.fetchImpl(as.token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams(parameters).toString(),
      ...(signal && { signal }),
    });
    const text = await response.text();
    const body = this.parse(text);
    if (response.status === 200 && body && typeof body.access_token === "string") {
      const expiresIn = typeof body.expires_in === "number" && body.expires_in > 0 ? body.expires_in : 3600;
      const tokens: AgentTokens = {
        access_token: body.access_token,
        token_type: typeof body.token_type === "string" ? body.token_type : "Bearer",
        expires_in: expiresIn,
        scope: typeof body.scope === "string" ? body.scope : "",
        expires_at: sentAt + expiresIn * 1000,
        ...(typeof body.identity_assertion === "string" && { identity_assertion: body.identity_assertion }),
        ...(typeof body.assertion_expires === "string" && { assertion_expires: body.assertion_expires }),
      };
      this.token = { value: tokens.access_token, expiresAt: tokens.expires_at, lifetimeSeconds: expiresIn, scope: tokens.scope };
      if (tokens.identity_assertion) {
        this.identityAssertion = tokens.identity_assertion;
        this.assertionExpires = tokens.assertion_expires;
      }
      return { ok: true, tokens };
    }
    if (!body || typeof body.error !== "string") {
      throw new AgentAuthError("invalid_response", `The token endpoint answered ${response.status} without an OAuth error.`, {
        status: response.status,
        ...(body && { body }),
      });
    }
    const retryAfterHeader = response.headers.get("retry-after");
    const retryAfter = retryAfterHeader && /^\d+$/.test(retryAfterHeader.trim()) ? Number(retryAfterHeader.trim()) : undefined;
    return { ok: false, error: body.error, status: response.status, body, retryAfter };
  }
}
