import type { Redis } from "ioredis";
import { MAX_IDEMPOTENCY_MEMORY_BYTES } from "../../schema/lib/limits.ts";
import { type RedisScript, redisScript } from "../runtime/redis-script.ts";

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

/** An Idempotency-Key as stored: the client's key within its workspace. */
export interface RecordKey {
  workspaceId: string;
  key: string;
}

/**
 * Where idempotency records live. A workspace's finished records hold at most the bytes its plan
 * allows (docs/api/limits.md): past them its oldest finished records are dropped first, never a
 * claim still running, and never another workspace's.
 */
export interface IdempotencyStore {
  /** Claims `key` for `record` unless it is taken; returns the record that holds it, or null when claimed. */
  claim(key: RecordKey, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null>;
  /**
   * Replaces the claim with the finished record, if `record.owner` still holds it, then drops the
   * workspace's oldest finished records until they hold at most `workspaceMaxBytes`.
   */
  complete(
    key: RecordKey,
    record: IdempotencyRecord,
    ttlMs: number,
    workspaceMaxBytes: number,
  ): Promise<void>;
  /** Frees the key so a retry runs, if `owner` still holds it. */
  release(key: RecordKey, owner: string): Promise<void>;
  /** What the workspace's finished records hold now, in bytes (counted in its data quota). */
  workspaceBytes(workspaceId: string): Promise<number>;
}

/** Bytes a finished record is counted for: its key and its JSON. */
const recordBytes = (key: string, json: string) => Buffer.byteLength(key) + Buffer.byteLength(json);

export const idempotencyRedisKey = (namespace: string, key: string) => `${namespace}idem:${key}`;
const storedKey = ({ workspaceId, key }: RecordKey) => `${workspaceId}:${key}`;
/** A workspace's book of finished records: a hash of their sizes, a sorted set of when they finished, their total. */
const bookKeys = (namespace: string, workspaceId: string) =>
  [
    `${namespace}idem-sizes:${workspaceId}`,
    `${namespace}idem-order:${workspaceId}`,
    `${namespace}idem-total:${workspaceId}`,
  ] as const;

// Every key of one deployment shares the hash tag of its namespace (server/runtime/redis.ts), so a script
// may touch the records it drops (KEYS[1] is any record key of the namespace, for its prefix).
const FORGET_EXPIRED = `
local function forget(sizes, order, total, before)
  local gone = redis.call('ZRANGEBYSCORE', order, '-inf', before)
  for _, member in ipairs(gone) do
    local size = tonumber(redis.call('HGET', sizes, member) or '0')
    redis.call('HDEL', sizes, member)
    redis.call('ZREM', order, member)
    redis.call('DECRBY', total, size)
  end
end`;

// A claim that expired under a slow request may have been taken by a retry: never overwrite it.
const COMPLETE_IF_OWNER = `${FORGET_EXPIRED}
local current = redis.call('GET', KEYS[1])
if not current or cjson.decode(current).owner ~= ARGV[1] then return nil end
local ttl, now, max, member, prefix = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], ARGV[7]
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
forget(KEYS[2], KEYS[3], KEYS[4], now - ttl)
local size = tonumber(ARGV[8])
local before = tonumber(redis.call('HGET', KEYS[2], member) or '0')
redis.call('HSET', KEYS[2], member, size)
redis.call('ZADD', KEYS[3], now, member)
local total = redis.call('INCRBY', KEYS[4], size - before)
while total > max do
  local oldest = redis.call('ZPOPMIN', KEYS[3])
  if #oldest == 0 then break end
  local dropped = tonumber(redis.call('HGET', KEYS[2], oldest[1]) or '0')
  redis.call('HDEL', KEYS[2], oldest[1])
  redis.call('DEL', prefix .. oldest[1])
  total = redis.call('DECRBY', KEYS[4], dropped)
end
for i = 2, 4 do redis.call('PEXPIRE', KEYS[i], ttl) end
return total`;

const RELEASE_IF_OWNER = `
local current = redis.call('GET', KEYS[1])
if current and cjson.decode(current).owner == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const WORKSPACE_BYTES = `${FORGET_EXPIRED}
forget(KEYS[1], KEYS[2], KEYS[3], tonumber(ARGV[1]))
return tonumber(redis.call('GET', KEYS[3]) or '0')`;

/** Records in Redis, each with its TTL; every workspace's finished records are also booked, to bound them. */
export class RedisIdempotencyStore implements IdempotencyStore {
  private readonly completeIfOwner: RedisScript;
  private readonly releaseIfOwner: RedisScript;
  private readonly bookedBytes: RedisScript;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.completeIfOwner = redisScript(redis, "kontorIdempotencyComplete", COMPLETE_IF_OWNER);
    this.releaseIfOwner = redisScript(redis, "kontorIdempotencyRelease", RELEASE_IF_OWNER);
    this.bookedBytes = redisScript(redis, "kontorIdempotencyBytes", WORKSPACE_BYTES);
  }

  async claim(key: RecordKey, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    const redisKey = idempotencyRedisKey(this.namespace, storedKey(key));
    for (;;) {
      if (await this.redis.set(redisKey, JSON.stringify(record), "PX", ttlMs, "NX")) return null;
      const current = await this.redis.get(redisKey);
      // Expired between SET and GET: try to claim again.
      if (current !== null) return JSON.parse(current) as IdempotencyRecord;
    }
  }

  async complete(
    key: RecordKey,
    record: IdempotencyRecord,
    ttlMs: number,
    workspaceMaxBytes: number,
  ): Promise<void> {
    const member = storedKey(key);
    const json = JSON.stringify(record);
    const keys = [idempotencyRedisKey(this.namespace, member), ...bookKeys(this.namespace, key.workspaceId)];
    const args = [
      record.owner,
      json,
      ttlMs,
      this.now(),
      workspaceMaxBytes,
      member,
      idempotencyRedisKey(this.namespace, ""),
      recordBytes(member, json),
    ];
    await this.completeIfOwner(keys, args);
  }

  async release(key: RecordKey, owner: string): Promise<void> {
    await this.releaseIfOwner([idempotencyRedisKey(this.namespace, storedKey(key))], [owner]);
  }

  async workspaceBytes(workspaceId: string): Promise<number> {
    const keys = bookKeys(this.namespace, workspaceId);
    return Number(await this.bookedBytes(keys, [this.now() - this.ttlMs]));
  }
}

const SWEEP_INTERVAL_MS = 60_000;

interface MemoryEntry {
  record: IdempotencyRecord;
  expires: number;
  bytes: number;
  workspaceId: string;
}

/**
 * The single-process store (no Redis): maps in insertion order, so the oldest records go first,
 * once a workspace's records pass its bound or all of them together pass `maxBytes` (a finished
 * record is moved to the end). Claims still running are never dropped: a retry must not run the
 * request twice.
 */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, MemoryEntry>();
  /** Each workspace's finished records (their stored keys, oldest first) and what they hold. */
  private readonly workspaces = new Map<string, { keys: Set<string>; bytes: number }>();
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

  async claim(key: RecordKey, record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    const now = this.now();
    this.sweep(now);
    const id = storedKey(key);
    const current = this.entries.get(id);
    if (current && current.expires > now) return current.record;
    this.put(id, key.workspaceId, record, now + ttlMs);
    return null;
  }

  async complete(
    key: RecordKey,
    record: IdempotencyRecord,
    ttlMs: number,
    workspaceMaxBytes: number,
  ): Promise<void> {
    const id = storedKey(key);
    if (!this.held(id, record.owner)) return;
    this.put(id, key.workspaceId, record, this.now() + ttlMs);
    const book = this.workspaces.get(key.workspaceId);
    for (const oldest of book?.keys ?? []) {
      if (book!.bytes <= workspaceMaxBytes) break;
      this.remove(oldest);
    }
  }

  async release(key: RecordKey, owner: string): Promise<void> {
    const id = storedKey(key);
    if (this.held(id, owner)) this.remove(id);
  }

  async workspaceBytes(workspaceId: string): Promise<number> {
    this.sweep(this.now());
    return this.workspaces.get(workspaceId)?.bytes ?? 0;
  }

  private held(id: string, owner: string): boolean {
    const current = this.entries.get(id);
    return current !== undefined && current.expires > this.now() && current.record.owner === owner;
  }

  private put(id: string, workspaceId: string, record: IdempotencyRecord, expires: number): void {
    this.remove(id);
    const bytes = recordBytes(id, JSON.stringify(record));
    this.entries.set(id, { record, expires, bytes, workspaceId });
    this.bytes += bytes;
    if (record.response) {
      const book = this.workspaces.get(workspaceId) ?? { keys: new Set<string>(), bytes: 0 };
      this.workspaces.set(workspaceId, book);
      book.keys.add(id);
      book.bytes += bytes;
    }
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      if (entry.record.response) this.remove(oldest);
    }
  }

  private remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    this.bytes -= entry.bytes;
    const book = this.workspaces.get(entry.workspaceId);
    if (book?.keys.delete(id)) {
      book.bytes -= entry.bytes;
      if (book.keys.size === 0) this.workspaces.delete(entry.workspaceId);
    }
  }

  /** Keys nobody asks for again would otherwise stay for the life of the process. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return;
    this.lastSweep = now;
    for (const [id, entry] of this.entries) if (entry.expires <= now) this.remove(id);
  }
}
