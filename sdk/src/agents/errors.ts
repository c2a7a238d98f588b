/** The errors of the agent flow: the server's OAuth errors and this helper's own. */

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

  constructor(
    code: string,
    message: string,
    details: { status?: number; body?: Record<string, unknown> } = {},
  ) {
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
