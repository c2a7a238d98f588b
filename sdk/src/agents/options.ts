/** What the `AgentAuth` helper takes, keeps and reports: its options, its saved state, its tokens. */

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
