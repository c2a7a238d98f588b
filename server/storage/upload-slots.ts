import type { Redis } from "ioredis";
import { describeError, log } from "../observability/log.ts";
import { type RedisScript, redisScript } from "../runtime/redis-script.ts";

/** Uploads of one workspace running at once (docs/api/limits.md): each takes a slot, and gives it back. */
export interface SlotStore {
  /** Takes one of `limit` slots of `workspaceId` for upload `id`; false when all are taken. */
  take(workspaceId: string, id: string, limit: number): Promise<boolean>;
  free(workspaceId: string, id: string): Promise<void>;
  /** Keeps the slots of uploads still running from expiring. */
  renew(held: ReadonlyArray<{ workspaceId: string; id: string }>): Promise<void>;
}

/** In-process slots: they live and die with the process, so they need no lease. */
export class MemorySlots implements SlotStore {
  private readonly running = new Map<string, Set<string>>();

  async take(workspaceId: string, id: string, limit: number): Promise<boolean> {
    const slots = this.running.get(workspaceId) ?? new Set<string>();
    if (slots.size >= limit) return false;
    slots.add(id);
    this.running.set(workspaceId, slots);
    return true;
  }

  async free(workspaceId: string, id: string): Promise<void> {
    const slots = this.running.get(workspaceId);
    slots?.delete(id);
    if (slots?.size === 0) this.running.delete(workspaceId);
  }

  async renew(): Promise<void> {}
}

// Drops slots whose lease ran out (their process died), then takes one if one is free: atomic across processes.
const TAKE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/**
 * Slots shared by every process of the deployment: a sorted set per workspace of upload ids scored
 * by their lease's end. The process running an upload renews its lease; one killed mid-upload
 * leaves a slot that the next take drops once its lease has run out.
 */
export class RedisSlots implements SlotStore {
  private readonly takeScript: RedisScript;

  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
    private readonly leaseMs: number,
  ) {
    this.takeScript = redisScript(redis, "kontorTakeSlot", TAKE);
  }

  private key(workspaceId: string): string {
    return `${this.namespace}uploads:${workspaceId}:running`;
  }

  async take(workspaceId: string, id: string, limit: number): Promise<boolean> {
    const now = Date.now();
    return (
      (await this.takeScript(
        [this.key(workspaceId)],
        [now, now + this.leaseMs, limit, id, 2 * this.leaseMs],
      )) === 1
    );
  }

  async free(workspaceId: string, id: string): Promise<void> {
    await this.redis.zrem(this.key(workspaceId), id);
  }

  async renew(held: ReadonlyArray<{ workspaceId: string; id: string }>): Promise<void> {
    if (held.length === 0) return;
    const until = Date.now() + this.leaseMs;
    const multi = this.redis.multi();
    // XX: a slot already dropped is not taken again behind the others' backs.
    for (const { workspaceId, id } of held)
      multi.zadd(this.key(workspaceId), "XX", until, id).pexpire(this.key(workspaceId), 2 * this.leaseMs);
    await multi.exec();
  }
}

/**
 * Redis slots, falling back to this process's own when Redis fails (as the rate limits do): an
 * outage of Redis loosens the cap to one per process rather than refusing uploads.
 */
export class SharedSlots implements SlotStore {
  private readonly local = new MemorySlots();
  /** Uploads whose slot was taken locally, so it is given back there. */
  private readonly inLocal = new Set<string>();

  constructor(private readonly shared: RedisSlots) {}

  async take(workspaceId: string, id: string, limit: number): Promise<boolean> {
    try {
      return await this.shared.take(workspaceId, id, limit);
    } catch (error) {
      log("warn", "Redis failed: upload slots are counted in this process", describeError(error));
      const taken = await this.local.take(workspaceId, id, limit);
      if (taken) this.inLocal.add(id);
      return taken;
    }
  }

  async free(workspaceId: string, id: string): Promise<void> {
    if (this.inLocal.delete(id)) return this.local.free(workspaceId, id);
    // A slot that cannot be freed now runs out with its lease.
    await this.shared
      .free(workspaceId, id)
      .catch((error: unknown) => log("warn", "could not free an upload slot in Redis", describeError(error)));
  }

  async renew(held: ReadonlyArray<{ workspaceId: string; id: string }>): Promise<void> {
    await this.shared.renew(held.filter(({ id }) => !this.inLocal.has(id)));
  }
}
