import { AgentAuthError, ClaimDeniedError, ClaimExpiredError } from "./errors.js";
import { describe } from "./http.js";
import type { PendingPoll } from "./options.js";
import { SLOW_DOWN_STEP_SECONDS } from "./protocol.js";
import type { TokenAnswer } from "./token-endpoint.js";

/**
 * What a claim poll that did not return tokens means (RFC 8628 §3.5): keep waiting, and how long,
 * or stop with the error that says why.
 *
 * @example
 * ```ts
 * const { wait, pollInterval } = nextPoll({ ok: false, error: "slow_down", status: 400, body: {}, retryAfter: undefined }, 5);
 * // wait === 10, pollInterval === 10
 * ```
 */
export function nextPoll(
  answer: Extract<TokenAnswer, { ok: false }>,
  pollInterval: number,
): { reason: PendingPoll["reason"]; wait: number; pollInterval: number } {
  const { error, body, status, retryAfter } = answer;
  const serverInterval = typeof body.interval === "number" && body.interval > 0 ? body.interval : undefined;
  if (error === "authorization_pending") {
    const interval =
      serverInterval !== undefined && serverInterval > pollInterval ? serverInterval : pollInterval;
    return { reason: "authorization_pending", wait: interval, pollInterval: interval };
  }
  if (error === "slow_down") {
    const interval = Math.max(pollInterval + SLOW_DOWN_STEP_SECONDS, serverInterval ?? 0);
    return { reason: "slow_down", wait: interval, pollInterval: interval };
  }
  // The per-address limit of requests without a credential: wait as told, then go on.
  if (status === 429)
    return { reason: "slow_down", wait: Math.max(pollInterval, retryAfter ?? 0), pollInterval };
  const message = describe(body, `The token endpoint answered ${status}.`);
  if (error === "access_denied") throw new ClaimDeniedError(error, message, { status, body });
  if (error === "expired_token") throw new ClaimExpiredError(error, message, { status, body });
  throw new AgentAuthError(error, message, { status, body });
}
