import type { Redis } from "ioredis";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { type Counters, openCounters } from "./counters.ts";

const HOUR = 3_600_000;
const FIVE_HOURS = 5 * HOUR;
const WEEK = 7 * 24 * HOUR;
/** 1970-01-01 was a Thursday: weeks start on Monday 00:00 UTC, four days later. */
const MONDAY = 4 * 24 * HOUR;
/** A running request's slot (or reservation) is let go after this long even if its process died holding it. */
export const SLOT_LEASE_MS = 15 * 60_000;

export interface Pool {
  used: number;
  limit: number;
  resetsAt: Date;
}

export interface CodingState {
  fiveHour: Pool;
  weekly: Pool;
}

/** The two windows a moment falls in: fixed 5-hour windows from the epoch, and weeks from Monday (UTC). */
export function windows(now: number) {
  const fiveHour = Math.floor(now / FIVE_HOURS);
  const week = Math.floor((now - MONDAY) / WEEK);
  return {
    fiveHour: { index: fiveHour, resetsAt: new Date((fiveHour + 1) * FIVE_HOURS) },
    weekly: { index: week, resetsAt: new Date((week + 1) * WEEK + MONDAY) },
  };
}

const percent = (pool: Pool) => Math.min(100, Math.round((pool.used / pool.limit) * 10_000) / 100);

/** docs/api/limits.md: the four headers of every coding response. */
export function codingHeaders(state: CodingState): Record<string, string> {
  return {
    "x-codingplan-5h-used-percent": String(percent(state.fiveHour)),
    "x-codingplan-5h-reset": state.fiveHour.resetsAt.toISOString(),
    "x-codingplan-weekly-used-percent": String(percent(state.weekly)),
    "x-codingplan-weekly-reset": state.weekly.resetsAt.toISOString(),
  };
}

const poolSpent = (state: CodingState, now: number) => {
  const spent = state.weekly.used >= state.weekly.limit ? state.weekly : state.fiveHour;
  const which = spent === state.weekly ? "weekly" : "5-hour";
  const retryAfter = Math.max(1, Math.ceil((spent.resetsAt.getTime() - now) / 1000));
  return new ApiError(
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
    `The coding plan's ${which} pool of ${spent.limit} tokens is used up; it refills at ${spent.resetsAt.toISOString()}.`,
    { headers: { "Retry-After": String(retryAfter), ...codingHeaders(state) } },
  );
};

const tooManyRunning = (limit: number, state: CodingState) =>
  new ApiError(
    429,
    "rate_limit_error",
    "concurrency_limit_exceeded",
    `The plan runs ${limit} coding request${limit === 1 ? "" : "s"} at once; wait for one to finish.`,
    { headers: { "Retry-After": "1", ...codingHeaders(state) } },
  );

/**
 * The coding plan (docs/api/limits.md): tokens the provider reports, counted per workspace against a
 * 5-hour and a weekly pool, and a cap on requests running at once. Kept in Redis when there is
 * one, so every process shares them.
 */
export class CodingMeter {
  private readonly store: Counters;

  constructor(
    redis: Redis | undefined,
    private readonly namespace: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.store = openCounters(redis, clock);
  }

  private keys(workspaceId: string, now: number): [string, string] {
    const w = windows(now);
    return [
      `${this.namespace}coding:${workspaceId}:5h:${w.fiveHour.index}`,
      `${this.namespace}coding:${workspaceId}:week:${w.weekly.index}`,
    ];
  }

  async state(workspaceId: string, plan: PlanName): Promise<CodingState> {
    const now = this.clock();
    const [fiveHour = 0, weekly = 0] = await this.store.read(this.keys(workspaceId, now));
    const w = windows(now);
    const limits = PLAN_LIMITS[plan];
    return {
      fiveHour: { used: fiveHour, limit: limits.coding_tokens_5h, resetsAt: w.fiveHour.resetsAt },
      weekly: { used: weekly, limit: limits.coding_tokens_weekly, resetsAt: w.weekly.resetsAt },
    };
  }

  /**
   * Before anything reaches the provider: 429 when a pool is spent or every slot is taken.
   * Resolves with the state for the headers and the function that gives the slot back.
   */
  async begin(
    workspaceId: string,
    plan: PlanName,
    requestId: string,
  ): Promise<{ state: CodingState; end: () => Promise<void> }> {
    const state = await this.state(workspaceId, plan);
    const now = this.clock();
    if (state.fiveHour.used >= state.fiveHour.limit || state.weekly.used >= state.weekly.limit)
      throw poolSpent(state, now);
    const limit = PLAN_LIMITS[plan].coding_concurrency;
    const slots = `${this.namespace}coding:${workspaceId}:running`;
    const { lease } = await this.store.hold(slots, requestId, 1, { limit, now, leaseMs: SLOT_LEASE_MS });
    if (!lease) throw tooManyRunning(limit, state);
    let ended = false;
    return {
      state,
      end: async () => {
        if (ended) return;
        ended = true;
        await this.store.release(lease);
      },
    };
  }

  /** Counts tokens the provider reported against both pools. */
  async record(workspaceId: string, tokens: number): Promise<void> {
    if (!(tokens > 0)) return;
    const now = this.clock();
    const w = windows(now);
    const ttl: [number, number] = [
      w.fiveHour.resetsAt.getTime() - now + HOUR,
      w.weekly.resetsAt.getTime() - now + HOUR,
    ];
    await this.store.add(this.keys(workspaceId, now), Math.round(tokens), ttl);
  }
}
