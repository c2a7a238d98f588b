import type { Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterRes } from "rate-limiter-flexible";
import { type RedisScript, redisScript } from "../runtime/redis-script.ts";

/**
 * Takes up to `want` points of a key's window at once: the count grows by what is granted, never
 * past the limit (what could not be granted is handed back in the same script). Returns
 * [granted, count after, ms until the window ends].
 */
const LEASE_SCRIPT = `
local want = tonumber(ARGV[1])
local limit = tonumber(ARGV[3])
local count = redis.call('INCRBY', KEYS[1], want)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
local granted = want
if count > limit then
  local over = math.min(count - limit, want)
  granted = want - over
  count = redis.call('DECRBY', KEYS[1], over)
end
return {granted, count, ttl}`;

interface Lease {
  /** Points this process took from Redis and has not used yet. */
  left: number;
  /** The key's count in Redis when the lease was granted (every process's points, this one's unused included). */
  count: number;
  /** When the window ends (ms since the epoch): the lease ends with it. */
  resetAt: number;
  /** The size of the next lease: doubled on every lease of the window, up to the cap. */
  next: number;
  /** A lease being fetched: requests of the key wait for it rather than ask again. */
  pending?: Promise<void>;
}

export interface LeasedLimiterOptions {
  redis: Redis;
  /** The Redis key of a counter is `${keyPrefix}:${key}`, as rate-limiter-flexible names its own. */
  keyPrefix: string;
  /** Requests per window. */
  points: number;
  /** The window, in seconds. */
  duration: number;
  /** Counts in this process instead while Redis is unreachable. */
  insuranceLimiter: RateLimiterAbstract;
  /** Keys whose leases are remembered at most (default 10 000); past it, the ones whose window ended go first. */
  maxKeys?: number;
}

/**
 * A per-key limit per window shared by every server process through Redis, asking Redis once per
 * batch of requests rather than once per request (docs/api/limits.md#traffic-policies).
 * A process leases points of a key's window — 1 the first time in a window, then twice the last
 * lease, up to 2 % of the limit (at most 64) — and spends them locally. Redis never grants more than
 * the limit in sum, so no key gets more than its limit across all processes; a process may hold
 * points it has not spent when another is refused, so with N processes a key can be refused up to
 * N × 2 % early, never late. With one process, limit and remaining are exact.
 *
 * Resolves and rejects like rate-limiter-flexible's `consume`: a RateLimiterRes either way.
 *
 * @example
 * const limiter = new LeasedLimiter({ redis, keyPrefix: "ratelimit:free", points: 120, duration: 60, insuranceLimiter });
 * const res = await limiter.consume("credential:key_…"); // throws a RateLimiterRes past the limit
 */
export class LeasedLimiter {
  private readonly leases = new Map<string, Lease>();
  private readonly leaseScript: RedisScript;
  private readonly cap: number;
  private readonly maxKeys: number;

  constructor(private readonly options: LeasedLimiterOptions) {
    this.leaseScript = redisScript(options.redis, "kontorLease", LEASE_SCRIPT);
    this.cap = Math.max(1, Math.min(64, Math.floor(options.points / 50)));
    this.maxKeys = options.maxKeys ?? 10_000;
  }

  async consume(key: string): Promise<RateLimiterRes> {
    const { redis, insuranceLimiter } = this.options;
    // While Redis is away, count in this process at once: a request must not queue behind its reconnect.
    if (redis.status !== "ready") return insuranceLimiter.consume(key);
    for (;;) {
      const now = Date.now();
      let lease = this.leases.get(key);
      if (lease && lease.resetAt <= now && !lease.pending) {
        this.leases.delete(key);
        lease = undefined;
      }
      if (lease?.pending) {
        // A lease that failed is forgotten: the next turn asks again, or counts in process.
        await lease.pending.catch(() => {});
        continue;
      }
      if (lease && lease.left > 0) {
        lease.left--;
        return this.result(lease, now);
      }
      if (!lease) lease = this.remember(key, now);
      else if (lease.count >= this.options.points) throw this.result(lease, now, true);
      const taking = lease;
      taking.pending = this.lease(key, taking).then(
        () => {
          taking.pending = undefined;
        },
        (error: unknown) => {
          taking.pending = undefined;
          this.leases.delete(key);
          throw error;
        },
      );
      try {
        await taking.pending;
      } catch {
        return insuranceLimiter.consume(key);
      }
      if (taking.left === 0) throw this.result(taking, Date.now(), true);
    }
  }

  private async lease(key: string, lease: Lease): Promise<void> {
    const { keyPrefix, points, duration } = this.options;
    const [granted, count, ttl] = (await this.leaseScript(
      [`${keyPrefix}:${key}`],
      [lease.next, duration * 1000, points],
    )) as [number, number, number];
    const now = Date.now();
    // The key's window in Redis began after this lease's (it was deleted): sizes start again.
    if (now + ttl > lease.resetAt + 1_000) lease.next = 1;
    lease.left += granted;
    lease.count = count;
    lease.resetAt = now + ttl;
    lease.next = Math.min(this.cap, lease.next * 2);
  }

  private remember(key: string, now: number): Lease {
    if (this.leases.size >= this.maxKeys) {
      for (const [name, lease] of this.leases)
        if (lease.resetAt <= now && !lease.pending) this.leases.delete(name);
      // Still full: the oldest go (Map keeps insertion order); their unspent points are forfeited.
      for (const [name, lease] of this.leases) {
        if (this.leases.size < this.maxKeys) break;
        if (!lease.pending) this.leases.delete(name);
      }
    }
    const lease: Lease = { left: 0, count: 0, resetAt: now, next: 1 };
    this.leases.set(key, lease);
    return lease;
  }

  private result(lease: Lease, now: number, exceeded = false): RateLimiterRes {
    const { points } = this.options;
    const remaining = exceeded ? 0 : Math.max(0, points - lease.count + lease.left);
    return new RateLimiterRes(remaining, Math.max(0, lease.resetAt - now), points - remaining, false);
  }
}
