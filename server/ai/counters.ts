import type { Redis } from "ioredis";
import { type RedisScript, redisScript } from "../runtime/redis-script.ts";

/**
 * The store behind the AI meters (the coding plan's pools and slots, general AI's daily budget):
 * counters that expire, and sets of leases (a running request's slot, a reservation of tokens)
 * that lapse on their own if their holder dies. In Redis when there is one, so every server
 * process shares them; else in this process.
 *
 * A lease has a weight (1 for a slot, the tokens reserved for a reservation) and is stored as the
 * member `${weight}:${id}`, so the weights held are summed from the set alone, in one round trip.
 */

/** A lease taken by `hold`: given back with `release`. */
export interface Lease {
  set: string;
  member: string;
}

/** What a set holds (the live leases' weights) and what its counter has counted. */
export interface Level {
  held: number;
  counted: number;
}

export interface Counters {
  /** The counters' values: 0 for a missing or expired one. */
  read(keys: string[]): Promise<number[]>;
  /** Adds `amount` to each counter; counter i then expires `ttlMs[i]` from now. */
  add(keys: string[], amount: number, ttlMs: number[]): Promise<void>;
  /**
   * Takes a lease of `weight` for `id` in `set` if what `counter` counts (0 without one) plus the
   * weights already held is below `limit`; the lease lapses after `leaseMs`. Atomic across processes.
   */
  hold(
    set: string,
    id: string,
    weight: number,
    options: { limit: number; now: number; leaseMs: number; counter?: string },
  ): Promise<Level & { lease?: Lease }>;
  /** What `set` holds and `counter` counts, as `hold` sees them. */
  level(set: string, counter: string | undefined, now: number): Promise<Level>;
  /** Gives `lease` back; with `count`, adds its amount to its counter in the same step (0 adds nothing). */
  release(lease: Lease, count?: { key: string; amount: number; ttlMs: number }): Promise<void>;
}

const memberOf = (id: string, weight: number) => `${Math.max(0, Math.round(weight))}:${id}`;
const weightOf = (member: string) => Number(member.slice(0, member.indexOf(":"))) || 0;

class MemoryCounters implements Counters {
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  private readonly sets = new Map<string, Map<string, number>>();

  constructor(private readonly clock: () => number) {}

  private value(key: string): number {
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

  private live(set: string, now: number): Map<string, number> {
    const leases = this.sets.get(set) ?? new Map<string, number>();
    for (const [member, expiresAt] of leases) if (expiresAt <= now) leases.delete(member);
    return leases;
  }

  private heldIn(leases: Map<string, number>): number {
    let held = 0;
    for (const member of leases.keys()) held += weightOf(member);
    return held;
  }

  async read(keys: string[]): Promise<number[]> {
    return keys.map((key) => this.value(key));
  }

  async add(keys: string[], amount: number, ttlMs: number[]): Promise<void> {
    this.prune();
    for (const [i, key] of keys.entries()) {
      this.counters.set(key, { value: this.value(key) + amount, expiresAt: this.clock() + ttlMs[i]! });
    }
  }

  async hold(
    set: string,
    id: string,
    weight: number,
    options: { limit: number; now: number; leaseMs: number; counter?: string },
  ) {
    const leases = this.live(set, options.now);
    const held = this.heldIn(leases);
    const counted = options.counter ? this.value(options.counter) : 0;
    if (counted + held >= options.limit) {
      if (leases.size === 0) this.sets.delete(set);
      return { held, counted };
    }
    const member = memberOf(id, weight);
    leases.set(member, options.now + options.leaseMs);
    this.sets.set(set, leases);
    return { held: held + weightOf(member), counted, lease: { set, member } };
  }

  async level(set: string, counter: string | undefined, now: number): Promise<Level> {
    return { held: this.heldIn(this.live(set, now)), counted: counter ? this.value(counter) : 0 };
  }

  async release(lease: Lease, count?: { key: string; amount: number; ttlMs: number }): Promise<void> {
    const leases = this.sets.get(lease.set);
    leases?.delete(lease.member);
    if (leases?.size === 0) this.sets.delete(lease.set);
    if (count && count.amount > 0) await this.add([count.key], count.amount, [count.ttlMs]);
  }
}

// Drops lapsed leases, sums the weights held, reads the counter (KEYS[2], if given), then (unless
// ARGV[6] is "peek") takes the lease if there is room: one round trip, atomic across processes.
// ARGV: now, lease expiry, limit, member, lease ms, mode. Returns {taken, held, counted}.
const HOLD = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local held = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  held = held + (tonumber(string.match(member, '^(%d+):')) or 0)
end
local counted = 0
if #KEYS > 1 then counted = tonumber(redis.call('GET', KEYS[2]) or '0') or 0 end
if ARGV[6] == 'peek' or counted + held >= tonumber(ARGV[3]) then return {0, held, counted} end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, held + (tonumber(string.match(ARGV[4], '^(%d+):')) or 0), counted}`;

class RedisCounters implements Counters {
  private readonly holdScript: RedisScript;

  constructor(private readonly redis: Redis) {
    this.holdScript = redisScript(redis, "kontorHold", HOLD);
  }

  async read(keys: string[]): Promise<number[]> {
    const values = await this.redis.mget(...keys);
    return values.map((value) => Number(value ?? 0));
  }

  async add(keys: string[], amount: number, ttlMs: number[]): Promise<void> {
    const multi = this.redis.multi();
    for (const [i, key] of keys.entries()) multi.incrby(key, amount).pexpire(key, ttlMs[i]!);
    await multi.exec();
  }

  private async run(
    set: string,
    counter: string | undefined,
    args: (string | number)[],
  ): Promise<[number, number, number]> {
    const keys = counter ? [set, counter] : [set];
    return (await this.holdScript(keys, args)) as [number, number, number];
  }

  async hold(
    set: string,
    id: string,
    weight: number,
    options: { limit: number; now: number; leaseMs: number; counter?: string },
  ) {
    const member = memberOf(id, weight);
    const { now, leaseMs, limit, counter } = options;
    const [taken, held, counted] = await this.run(set, counter, [
      now,
      now + leaseMs,
      limit,
      member,
      leaseMs,
      "take",
    ]);
    return { held, counted, ...(taken === 1 && { lease: { set, member } }) };
  }

  async level(set: string, counter: string | undefined, now: number): Promise<Level> {
    const [, held, counted] = await this.run(set, counter, [now, now, 0, "0:peek", 0, "peek"]);
    return { held, counted };
  }

  async release(lease: Lease, count?: { key: string; amount: number; ttlMs: number }): Promise<void> {
    const multi = this.redis.multi().zrem(lease.set, lease.member);
    if (count && count.amount > 0)
      multi.incrby(count.key, Math.round(count.amount)).pexpire(count.key, count.ttlMs);
    await multi.exec();
  }
}

/** The store: Redis when there is one (shared by every process), else this process's memory. */
export function openCounters(redis: Redis | undefined, clock: () => number): Counters {
  return redis ? new RedisCounters(redis) : new MemoryCounters(clock);
}
