import { nextPoll } from "./claim-polling.js";
import { discoverAgentEndpoints } from "./discovery.js";
import { AgentAuthError } from "./errors.js";
import { abortableSleep, describe, postJson, scopeString } from "./http.js";
import type {
  AgentAuthOptions,
  AgentAuthState,
  AgentTokens,
  FetchLike,
  WaitForClaimOptions,
} from "./options.js";
import {
  type AgentClaim,
  type AgentDiscovery,
  type AgentRegistration,
  type AnonymousInput,
  type AnonymousRegistration,
  type AuthorizationServerMetadata,
  CLAIM_GRANT_TYPE,
  DEFAULT_POLL_INTERVAL_SECONDS,
  DEFAULT_REFRESH_MARGIN_SECONDS,
  JWT_BEARER_GRANT_TYPE,
  type ServiceAuthInput,
  type ServiceAuthRegistration,
  type StartedClaim,
} from "./protocol.js";
import { requestToken, revokeAt, type TokenAnswer } from "./token-endpoint.js";

/**
 * Runs the agent flow against one Kontor deployment and keeps its credentials:
 * `discover` → `register` → (hand the person `claim.verification_uri` and `claim.user_code`) →
 * `waitForClaim` → `accessToken()` whenever a token is needed (it re-exchanges the identity
 * assertion shortly before the token expires). `state` is what to store to resume later.
 *
 * @example
 * ```ts
 * const agent = new AgentAuth({ baseUrl: "https://kontor.example.com/v1" });
 * const { claim } = await agent.register({ type: "service_auth", loginHint: "owner@example.com", agentName: "Billing bot" });
 * console.log(`Open ${claim.verification_uri} and enter the code ${claim.user_code}`);
 * await agent.waitForClaim();
 * const kontor = new Kontor({ apiKey: await agent.accessToken() });
 * ```
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
  private token:
    | { value: string; expiresAt: number; lifetimeSeconds: number; scope: string | undefined }
    | undefined;
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
      this.token = {
        value: state.accessToken,
        expiresAt: state.accessTokenExpiresAt,
        lifetimeSeconds: Infinity,
        scope: state.scope,
      };
    }
  }

  /**
   * What to store to resume later with `new AgentAuth({ baseUrl, state })`. Holds secrets.
   *
   * @example
   * ```ts
   * await writeFile("agent.json", JSON.stringify(agent.state)); // keep it secret
   * const resumed = new AgentAuth({ baseUrl, state: JSON.parse(await readFile("agent.json", "utf8")) });
   * ```
   */
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
   * (`register` discovers by itself when needed.)
   *
   * @example
   * ```ts
   * const { authorizationServer } = await agent.discover();
   * console.log(authorizationServer.agent_auth.identity_types_supported); // ["service_auth", "anonymous", …]
   * ```
   */
  async discover(baseUrl: string | undefined = this.baseUrl): Promise<AgentDiscovery> {
    if (!baseUrl) throw new TypeError("AgentAuth.discover needs Kontor's URL (baseUrl).");
    this.discovery = await discoverAgentEndpoints(this.fetchImpl, baseUrl);
    return this.discovery;
  }

  /** The discovered endpoints (discovering first if needed). */
  private async endpoints(): Promise<AuthorizationServerMetadata> {
    if (this.discovery) return this.discovery.authorizationServer;
    this.discovering ??= this.discover().finally(() => (this.discovering = undefined));
    return (await this.discovering).authorizationServer;
  }

  // -- registration ------------------------------------------------------------------------------

  /**
   * Registers the agent (`POST {host}/agent/identity`).
   * - `service_auth`: the answer's `claim` (`verification_uri`, `user_code`) is what to show the
   *   person; then `waitForClaim()`.
   * - `anonymous`: the agent can work at once in a sandbox (`accessToken()`); `startClaim(email)`
   *   later hands the sandbox to a person.
   *
   * @example
   * ```ts
   * const { claim } = await agent.register({ type: "service_auth", loginHint: "owner@example.com", scope: ["leads.read"] });
   * console.log(`Open ${claim.verification_uri} and enter ${claim.user_code}`);
   * ```
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
    const registration = (await postJson(
      this.fetchImpl,
      agentAuth.register_uri ?? agentAuth.identity_endpoint,
      body,
    )) as unknown as AgentRegistration;
    if (typeof registration.registration_id !== "string" || typeof registration.claim_token !== "string") {
      throw new AgentAuthError(
        "invalid_response",
        "The registration answer has no registration_id or claim_token.",
        { body: registration as never },
      );
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
   *
   * @example
   * ```ts
   * await agent.register({ type: "anonymous" }); // works in a sandbox at once
   * const { claim } = await agent.startClaim("owner@example.com");
   * console.log(`Open ${claim.verification_uri} and enter ${claim.user_code}`);
   * await agent.waitForClaim();
   * ```
   */
  async startClaim(loginHint: string): Promise<StartedClaim> {
    if (!this.claimToken)
      throw new AgentAuthError(
        "not_registered",
        "No claim token: register first (or the claim was already redeemed).",
      );
    const { agent_auth: agentAuth } = await this.endpoints();
    const started = (await postJson(this.fetchImpl, agentAuth.claim_uri ?? agentAuth.claim_endpoint, {
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
   *
   * @example
   * ```ts
   * const tokens = await agent.waitForClaim({
   *   signal: AbortSignal.timeout(10 * 60_000),
   *   onPending: ({ reason, interval }) => console.log(`${reason}: next poll in ${interval} s`),
   * });
   * ```
   */
  async waitForClaim(options: WaitForClaimOptions = {}): Promise<AgentTokens> {
    const { signal } = options;
    const claimToken = this.claimToken;
    if (!claimToken)
      throw new AgentAuthError(
        "not_registered",
        "No claim token: register first (or the claim was already redeemed).",
      );
    if (!this.claimStarted) {
      throw new AgentAuthError(
        "no_claim_started",
        "No claim ceremony runs for this anonymous agent: call startClaim(email) and show the person its code first.",
      );
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
      const { reason, wait, pollInterval } = nextPoll(answer, this.pollInterval);
      this.pollInterval = pollInterval;
      await options.onPending?.({ reason, interval: wait, polls });
      await this.sleep(wait * 1000, signal);
    }
  }

  // -- the jwt-bearer grant ----------------------------------------------------------------------

  /**
   * Exchanges the identity assertion for a new access token (RFC 7523) and keeps it. `scope`
   * narrows the token to part of what the registration holds.
   *
   * @example
   * ```ts
   * const { access_token, expires_at } = await agent.exchange({ scope: "leads.read" });
   * ```
   */
  async exchange(options: { scope?: string | string[]; signal?: AbortSignal } = {}): Promise<AgentTokens> {
    const assertion = this.identityAssertion;
    if (!assertion) {
      throw new AgentAuthError(
        "no_identity_assertion",
        "No identity assertion: register (anonymous) or wait for the claim (service_auth) first.",
      );
    }
    const as = await this.endpoints();
    const parameters: Record<string, string> = { grant_type: JWT_BEARER_GRANT_TYPE, assertion };
    const scope = scopeString(options.scope);
    if (scope !== undefined) parameters.scope = scope;
    const answer = await this.tokenRequest(as, parameters, options.signal);
    if (!answer.ok)
      throw new AgentAuthError(
        answer.error,
        describe(answer.body, `The token endpoint answered ${answer.status}.`),
        answer,
      );
    return answer.tokens;
  }

  /**
   * A valid access token: the one held, or a new one exchanged for the identity assertion when the
   * held one expires within `refreshMarginSeconds` (60 s; at most half the token's lifetime).
   * Concurrent callers share one exchange.
   *
   * @example
   * ```ts
   * // Ask before each use: it is renewed only when it is about to expire.
   * const kontor = new Kontor({ apiKey: await agent.accessToken() });
   * ```
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

  /**
   * Revokes the access token held (RFC 7009); the identity assertion still gets new ones.
   *
   * @example
   * ```ts
   * await agent.revokeToken(); // the next accessToken() exchanges the assertion again
   * ```
   */
  async revokeToken(): Promise<void> {
    const token = this.token;
    if (!token) return;
    await revokeAt(this.fetchImpl, await this.endpoints(), token.value, "access_token");
    this.token = undefined;
  }

  /**
   * Revokes the whole registration: every token, and the identity assertion.
   *
   * @example
   * ```ts
   * await agent.revokeRegistration(); // the agent must register (and be claimed) again
   * ```
   */
  async revokeRegistration(): Promise<void> {
    const assertion = this.identityAssertion;
    if (!assertion)
      throw new AgentAuthError(
        "no_identity_assertion",
        "No identity assertion to revoke the registration with.",
      );
    await revokeAt(this.fetchImpl, await this.endpoints(), assertion);
    this.token = undefined;
    this.identityAssertion = undefined;
    this.assertionExpires = undefined;
  }

  /** One request to the token endpoint; a 200 keeps the token (and the assertion it may carry). */
  private async tokenRequest(
    as: AuthorizationServerMetadata,
    parameters: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<TokenAnswer> {
    const answer = await requestToken(this.fetchImpl, as, parameters, signal, this.now());
    if (answer.ok) {
      const { tokens } = answer;
      this.token = {
        value: tokens.access_token,
        expiresAt: tokens.expires_at,
        lifetimeSeconds: tokens.expires_in,
        scope: tokens.scope,
      };
      if (tokens.identity_assertion) {
        this.identityAssertion = tokens.identity_assertion;
        this.assertionExpires = tokens.assertion_expires;
      }
    }
    return answer;
  }
}
