import { Redis } from "ioredis";

/**
 * The shared Redis connection of one server process (limits, idempotency, later the queue), or
 * undefined without REDIS_URL: then every policy keeps its state in process.
 */
export async function openRedis(url: string | undefined): Promise<Redis | undefined> {
  if (!url) return undefined;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true });
  await redis.connect();
  return redis;
}
