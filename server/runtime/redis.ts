import { Redis } from "ioredis";

/**
 * The shared Redis connection of one server process (limits, idempotency, later the queue), or
 * undefined without REDIS_URL: then every policy keeps its state in process.
 */
export async function openRedis(url: string | undefined): Promise<Redis | undefined> {
  if (!url) return undefined;
  // Auto-pipelining sends the commands of one event-loop turn (the rate-limit counts of requests that
  // arrived together) in one write, and reads their replies in one go: fewer system calls under load.
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    enableAutoPipelining: true,
  });
  await redis.connect();
  return redis;
}

/**
 * The prefix of every Redis key of one deployment: `kontor:{<deployment id>}:`, from the database's
 * own `deployment` row (Database.deploymentId), read once at start. Processes that open one
 * database share their limits, idempotency keys and webhook queue however their DATABASE_URL is
 * spelled; two deployments (or two test databases) on one Redis never meet. The braces are a Redis
 * Cluster hash tag: Redis Cluster hashes only the text between them, so every key of one
 * deployment lands in one slot and a command or script over several of them stays legal.
 */
export function redisNamespace(deploymentId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(deploymentId))
    throw new Error(`Not a deployment id: ${JSON.stringify(deploymentId)}.`);
  return `kontor:{${deploymentId}}:`;
}
