import type { Redis } from "ioredis";
import { MAX_IDEMPOTENCY_MEMORY_BYTES } from "../schema/lib/limits.ts";

/** A response kept for replay; the body is base64 so any bytes survive JSON. */
export interface StoredResponse {
  status: number;
  headers: [string, string][];
  body: string;
  /** The error code the first response carried, so a replay's request log names it too. */
  errorCode?: string;
  /** The body was over MAX_IDEMPOTENT_RESPONSE_BYTES and was not kept: repeats are refused, never run again. */
  notKept?: { bytes: number };
}

/** One idempotency key: claimed by `owner` while its request runs, then holding the response. */
export interface IdempotencyRecord {
  fingerprint: string;
  owner: string;
  response?: StoredResponse;
  /** The credential that made the first request: only it may see the replay. */
  credentialId?: string;
}

export interface IdempotencyStore {
  /** Claims `key` for `record` unless it is taken; returns the record that holds it, or null when claimed. */
  claim(key: string, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null>;
  /** Replaces the claim with the finished record, if `record.owner` still holds it. */
  complete(key: string, record: IdempotencyRecord, ttlMs: number): Promise<void>;
  /** Frees the key so a retry runs, if `owner` still holds it. */
  release(key: string, owner: string): Promise<void>;
}

export const idempotencyRedisKey = (namespace: string, key: string) => `${namespace}idem:${key}`;

// A claim that expired under a slow request may have been taken by a retry: never overwrite it.
const COMPLETE_IF_OWNER = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).owner == ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return nil`;
const RELEASE_IF_OWNER = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).owner == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
  ) {}

  async claim(key: string, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    const redisKey = idempotencyRedisKey(this.namespace, key);
    for (;;) {
      if (await this.redis.set(redisKey, JSON.stringify(record), "PX", ttlMs, "NX")) return null;
      const current = await this.redis.get(redisKey);
      // Expired between SET and GET: try to claim again.
      if (current !== null) return JSON.parse(current) as IdempotencyRecord;
    }
  }

  async complete(key: string, record: IdempotencyRecord, ttlMs: number): Promise<void> {
    await this.redis.eval(COMPLETE_IF_OWNER, 1, idempotencyRedisKey(this.namespace, key), record.owner, JSON.stringify(record), ttlMs);
  }

  async release(key: string, owner: string): Promise<void> {
    await this.redis.eval(RELEASE_IF_OWNER, 1, idempotencyRedisKey(this.namespace, key), owner);
  }
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * The single-process store (no Redis): a map in insertion order, so the oldest records go first
 * once the records together pass `maxBytes` (a finished record is moved to the end). Claims still
 * running are never dropped: a retry must not run the request twice.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, { record: IdempotencyRecord; expires: number; bytes: number }>();
  private bytes = 0;
  private lastSweep = 0;

  constructor(
    private readonly now: () => number = Date.now,
    private readonly maxBytes = MAX_IDEMPOTENCY_MEMORY_BYTES,
  ) {}

  /** What the records hold now, in bytes (their JSON and keys). */
  get size(): number {
    return this.bytes;
  }

  async claim(key: string, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    const now = this.now();
    this.sweep(now);
    const current = this.entries.get(key);
    if (current && current.expires > now) return current.record;
    this.put(key, record, now + ttlMs);
    return null;
  }

  async complete(key: string, record: IdempotencyRecord, ttlMs: number): Promise<void> {
    if (this.held(key, record.owner)) this.put(key, record, this.now() + ttlMs);
  }

  async release(key: string, owner: string): Promise<void> {
    if (this.held(key, owner)) this.remove(key);
  }

  private held(key: string, owner: string): boolean {
    const current = this.entries.get(key);
    return current !== undefined && current.expires > this.now() && current.record.owner === owner;
  }

  private put(key: string, record: IdempotencyRecord, expires: number): void {
    this.remove(key);
    const bytes = key.length + JSON.stringify(record).length;
    this.entries.set(key, { record, expires, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (entry.record.response) this.remove(oldest);
    }
  }

  private remove(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  /** Keys nobody asks for again would otherwise stay for the life of the process. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    for (const [key, entry] of this.entries) if (entry.expires <= now) this.remove(key);
  }
}
