import { createHash } from "node:crypto";
import { Redis } from "ioredis";

/**
 * The shared Redis connection of one server process (limits, idempotency, later the queue), or
 * undefined without REDIS_URL: then every policy keeps its state in process.
 */
export async function openRedis(url: string | undefined): Promise<Redis | undefined> {
  if (!url) return undefined;
  // Auto-pipelining sends the commands of one event-loop turn (the rate-limit counts of requests that
  // arrived together) in one write, and reads their replies in one go: fewer system calls under load.
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true, enableAutoPipelining: true });
  await redis.connect();
  return redis;
}

/**
 * The prefix of every Redis key of one deployment. Processes that share a database share their
 * limits and idempotency keys; two deployments (or two test databases) on one Redis never meet.
 */
export function redisNamespace(config: { databaseUrl: string | undefined; dataDir: string }): string {
  const identity = config.databaseUrl ?? config.dataDir;
  return `kontor:${createHash("sha256").update(identity).digest("hex").slice(0, 12)}:`;
}
