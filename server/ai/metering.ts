import type { Redis } from "ioredis";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";

const HOUR = 3_600_000;
const FIVE_HOURS = 5 * HOUR;
const WEEK = 7 * 24 * HOUR;
/** 1970-01-01 was a Thursday: weeks start on Monday 00:00 UTC, four days later. */
const MONDAY = 4 * 24 * HOUR;
/** A running request's slot is let go after this long even if its process died holding it. */
const SLOT_LEASE_MS = 15 * 60_000;

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

/** README "Limits": the four headers of every coding response. */
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

interface Store {
  used(keys: [string, string]): Promise<[number, number]>;
  add(keys: [string, string], tokens: number, ttlMs: [number, number]): Promise<void>;
  /** Takes a slot among `limit` for `id`; false when all are taken. */
  takeSlot(key: string, id: string, limit: number, now: number): Promise<boolean>;
  freeSlot(key: string, id: string): Promise<void>;
}

class MemoryStore implements Store {
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  private readonly slots = new Map<string, Map<string, number>>();

  constructor(private readonly clock: () => number) {}

  private read(key: string): number {
    const entry = this.counters.get(key);
    if (!entry || entry.expiresAt <= this.clock()) return 0;
    return entry.value;
  }

  /** Past windows go once there are many: the map holds at most a few per active workspace. */
  private prune(): void {
    if (this.counters.size < 10_000) return;
    const now = this.clock();
    for (const [key, entry] of this.counters) if (entry.expiresAt <= now) this.counters.delete(key);
  }

  async used(keys: [string, string]): Promise<[number, number]> {
    return [this.read(keys[0]), this.read(keys[1])];
  }

  async add(keys: [string, string], tokens: number, ttlMs: [number, number]): Promise<void> {
    this.prune();
    keys.forEach((key, i) => this.counters.set(key, { value: this.read(key) + tokens, expiresAt: this.clock() + ttlMs[i]! }));
  }

  async takeSlot(key: string, id: string, limit: number, now: number): Promise<boolean> {
    const running = this.slots.get(key) ?? new Map<string, number>();
    for (const [other, expiresAt] of running) if (expiresAt <= now) running.delete(other);
    if (running.size >= limit) return false;
    running.set(id, now + SLOT_LEASE_MS);
    this.slots.set(key, running);
    return true;
  }

  async freeSlot(key: string, id: string): Promise<void> {
    const running = this.slots.get(key);
    running?.delete(id);
    if (running?.size === 0) this.slots.delete(key);
  }
}

// Drops expired leases, then takes a slot if one is free: one round trip, atomic across processes.
const TAKE_SLOT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

class RedisStore implements Store {
  constructor(private readonly redis: Redis) {}

  async used(keys: [string, string]): Promise<[number, number]> {
    const values = await this.redis.mget(keys[0], keys[1]);
    return [Number(values[0] ?? 0), Number(values[1] ?? 0)];
  }

  async add(keys: [string, string], tokens: number, ttlMs: [number, number]): Promise<void> {
    const multi = this.redis.multi();
    keys.forEach((key, i) => multi.incrby(key, tokens).pexpire(key, ttlMs[i]!));
    await multi.exec();
  }

  async takeSlot(key: string, id: string, limit: number, now: number): Promise<boolean> {
    const taken = await this.redis.eval(TAKE_SLOT, 1, key, now, now + SLOT_LEASE_MS, limit, id, SLOT_LEASE_MS);
    return taken === 1;
  }

  async freeSlot(key: string, id: string): Promise<void> {
    await this.redis.zrem(key, id);
  }
}

/**
 * The coding plan (README "Limits"): tokens the provider reports, counted per workspace against a
 * 5-hour and a weekly pool, and a cap on requests running at once. Kept in Redis when there is
 * one, so every process shares them.
 */
export class CodingMeter {
  private readonly store: Store;

  constructor(
    redis: Redis | undefined,
    private readonly namespace: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.store = redis ? new RedisStore(redis) : new MemoryStore(clock);
  }

  private keys(workspaceId: string, now: number): [string, string] {
    const w = windows(now);
    return [`${this.namespace}coding:${workspaceId}:5h:${w.fiveHour.index}`, `${this.namespace}coding:${workspaceId}:week:${w.weekly.index}`];
  }

  async state(workspaceId: string, plan: PlanName): Promise<CodingState> {
    const now = this.clock();
    const [fiveHour, weekly] = await this.store.used(this.keys(workspaceId, now));
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
  async begin(workspaceId: string, plan: PlanName, requestId: string): Promise<{ state: CodingState; end: () => Promise<void> }> {
    const state = await this.state(workspaceId, plan);
    const now = this.clock();
    if (state.fiveHour.used >= state.fiveHour.limit || state.weekly.used >= state.weekly.limit) throw poolSpent(state, now);
    const limit = PLAN_LIMITS[plan].coding_concurrency;
    const slots = `${this.namespace}coding:${workspaceId}:running`;
    if (!(await this.store.takeSlot(slots, requestId, limit, now))) throw tooManyRunning(limit, state);
    let ended = false;
    return {
      state,
      end: async () => {
        if (ended) return;
        ended = true;
        await this.store.freeSlot(slots, requestId);
      },
    };
  }

  /** Counts tokens the provider reported against both pools. */
  async record(workspaceId: string, tokens: number): Promise<void> {
    if (!(tokens > 0)) return;
    const now = this.clock();
    const w = windows(now);
    const ttl: [number, number] = [w.fiveHour.resetsAt.getTime() - now + HOUR, w.weekly.resetsAt.getTime() - now + HOUR];
    await this.store.add(this.keys(workspaceId, now), Math.round(tokens), ttl);
  }
}
