import type { Redis } from "ioredis";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { type Counters, openCounters } from "./counters.ts";
import { SLOT_LEASE_MS } from "./metering.ts";
import { MAX_TOKENS } from "./tokens.ts";

/**
 * General AI's daily token budget (docs/api/ai.md and "Limits"): `/v1/responses` used with
 * ai.responses counts the tokens the provider reports against PLAN_LIMITS[plan].ai_tokens_daily
 * per workspace and UTC day. What a request costs is known only once the provider has answered,
 * so each request first reserves an estimate (reservationOf) and is let in only while the day's
 * tokens plus the reservations of requests still running are below the budget; its answer then
 * settles the reservation with what the provider reported. A burst of concurrent requests thus
 * passes the budget by at most one request's reservation (plus whatever requests use beyond
 * their reservations), however many are sent at once.
 */

const DAY = 24 * 3_600_000;
const HOUR = 3_600_000;

/** Bytes of request body counted as one token of input in a reservation. */
export const BYTES_PER_TOKEN = 4;
/** The output a reservation counts when the request sets no `max_output_tokens`. */
export const DEFAULT_OUTPUT_RESERVATION = 4_096;

/** The UTC day a moment falls in, and when the next one starts. */
export function utcDay(now: number): { index: number; resetsAt: Date } {
  const index = Math.floor(now / DAY);
  return { index, resetsAt: new Date((index + 1) * DAY) };
}

/**
 * What a request reserves: its JSON body's bytes / BYTES_PER_TOKEN (rounded up) as input, plus
 * `max_output_tokens` (DEFAULT_OUTPUT_RESERVATION without it); at least 1, at most `limit`.
 */
export function reservationOf(bodyBytes: number, maxOutputTokens: unknown, limit: number): number {
  const output =
    typeof maxOutputTokens === "number" && Number.isSafeInteger(maxOutputTokens) && maxOutputTokens > 0
      ? maxOutputTokens
      : DEFAULT_OUTPUT_RESERVATION;
  return Math.max(1, Math.min(limit, MAX_TOKENS, Math.ceil(bodyBytes / BYTES_PER_TOKEN) + output));
}

/** Where a workspace's day stands. */
export interface DailyState {
  limit: number;
  /** Tokens settled today. */
  used: number;
  /** Tokens reserved by requests still running. */
  reserved: number;
  resetsAt: Date;
}

/** docs/api/ai.md: the three headers of every general-AI answer. */
export function dailyHeaders(state: DailyState): Record<string, string> {
  return {
    "x-ai-daily-tokens-limit": String(state.limit),
    "x-ai-daily-tokens-remaining": String(Math.max(0, state.limit - state.used - state.reserved)),
    "x-ai-daily-reset": state.resetsAt.toISOString(),
  };
}

const budgetSpent = (state: DailyState, now: number) => {
  // Used up by settled tokens: until the next UTC day. Taken by running requests' reservations: until they settle.
  const spent = state.used >= state.limit;
  const retryAfter = spent ? Math.max(1, Math.ceil((state.resetsAt.getTime() - now) / 1000)) : 1;
  const message = spent
    ? `The workspace's general AI budget of ${state.limit} tokens a day is used up; it refills at ${state.resetsAt.toISOString()}.`
    : `The workspace's general AI budget of ${state.limit} tokens a day is taken: ${state.reserved} of them are reserved by requests still running. Retry when they end.`;
  return new ApiError(429, "rate_limit_error", "rate_limit_exceeded", message, {
    headers: { "Retry-After": String(retryAfter), ...dailyHeaders(state) },
  });
};

/** A request's reservation, settled once (later calls do nothing). */
export interface Reservation {
  /** Tokens reserved. */
  tokens: number;
  /** The day's state with this reservation taken. */
  state: DailyState;
  /** Counts `tokens` (what the request cost; 0 releases the reservation) and gives the reservation back, in one step. */
  settle(tokens: number): Promise<void>;
}

/** General AI's daily budget per workspace (see above), in Redis when there is one so every process shares it. */
export class GeneralBudget {
  private readonly store: Counters;
  private readonly clock: () => number;

  /** `cap` (KONTOR_AI_TOKENS_DAILY_CAP, never in production) lowers every plan's budget to it. */
  constructor(
    redis: Redis | undefined,
    private readonly namespace: string,
    private readonly options: { cap?: number | undefined; clock?: () => number } = {},
  ) {
    this.clock = options.clock ?? Date.now;
    this.store = openCounters(redis, this.clock);
  }

  /** The daily budget of a plan, in tokens. */
  limit(plan: PlanName): number {
    const budget = PLAN_LIMITS[plan].ai_tokens_daily;
    return this.options.cap === undefined ? budget : Math.min(budget, this.options.cap);
  }

  private keys(workspaceId: string, now: number) {
    return {
      counter: `${this.namespace}ai:${workspaceId}:day:${utcDay(now).index}`,
      set: `${this.namespace}ai:${workspaceId}:reserved`,
    };
  }

  async state(workspaceId: string, plan: PlanName): Promise<DailyState> {
    const now = this.clock();
    const { counter, set } = this.keys(workspaceId, now);
    const level = await this.store.level(set, counter, now);
    return {
      limit: this.limit(plan),
      used: level.counted,
      reserved: level.held,
      resetsAt: utcDay(now).resetsAt,
    };
  }

  /**
   * Reserves `tokens` before anything reaches the provider: 429 rate_limit_exceeded (with
   * Retry-After and the daily headers) when the day's tokens and the running reservations already
   * reach the budget. A reservation a dead process never settled lapses after 15 minutes.
   */
  async reserve(
    workspaceId: string,
    plan: PlanName,
    requestId: string,
    tokens: number,
  ): Promise<Reservation> {
    const now = this.clock();
    const { counter, set } = this.keys(workspaceId, now);
    const limit = this.limit(plan);
    const weight = Math.max(1, Math.min(MAX_TOKENS, Math.round(tokens)));
    const taken = await this.store.hold(set, requestId, weight, {
      limit,
      now,
      leaseMs: SLOT_LEASE_MS,
      counter,
    });
    const state = { limit, used: taken.counted, reserved: taken.held, resetsAt: utcDay(now).resetsAt };
    if (!taken.lease) throw budgetSpent(state, now);
    const lease = taken.lease;
    let settled = false;
    return {
      tokens: weight,
      state,
      settle: async (spent: number) => {
        if (settled) return;
        settled = true;
        // Counted on the day the request ends.
        const at = this.clock();
        const amount = Math.max(0, Math.min(MAX_TOKENS, Math.round(spent)));
        const ttlMs = utcDay(at).resetsAt.getTime() - at + HOUR;
        await this.store.release(lease, { key: this.keys(workspaceId, at).counter, amount, ttlMs });
      },
    };
  }
}
