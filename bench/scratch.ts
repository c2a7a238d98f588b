import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { SCOPES } from "../schema/lib/scopes.ts";
import { createWorkspace } from "../server/accounts/workspaces.ts";
import { createApiKey } from "../server/auth/api-keys.ts";
import { openDatabase } from "../server/db/open.ts";
import { redisNamespace } from "../server/runtime/redis.ts";
import { admin, databaseUrl, REDIS_URL } from "./support.ts";

export interface Scratch {
  /** DATABASE_URL, REDIS_URL and DATA_DIR for the servers. */
  env: { DATABASE_URL: string; REDIS_URL: string; DATA_DIR: string };
  workspaceId: string;
  /** Keys of the workspace with every scope, to rotate over (each is rate limited on its own). */
  keys: string[];
  /** Drops the database, the data directory and the Redis keys of this deployment. */
  drop(): Promise<void>;
}

/**
 * A scratch PostgreSQL database (migrated), a workspace on the max plan and `keyCount` keys of it.
 * Redis is shared: the servers namespace their keys by the database, and drop() removes them.
 */
export async function createScratch(keyCount: number): Promise<Scratch> {
  const name = `kontor_bench_${randomBytes(6).toString("hex")}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kontor-bench-"));
  await admin((c) => c.query(`create database ${name}`));
  const env = { DATABASE_URL: databaseUrl(name), REDIS_URL, DATA_DIR: dataDir };
  /** The deployment's Redis namespace, known once the database is open (its `deployment` row names it). */
  let namespace: string | undefined;
  const drop = async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    if (namespace === undefined) return;
    await dropRedisKeys(namespace).catch((error: unknown) =>
      console.error(`could not remove the bench's Redis keys: ${(error as Error).message}`),
    );
  };
  try {
    const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir });
    namespace = redisNamespace(database.deploymentId);
    try {
      const ws = await createWorkspace(database.prisma, {
        name: "Bench",
        plan: "max",
        ownerEmail: `bench-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      const keys: string[] = [];
      for (let i = 0; i < keyCount; i++)
        keys.push(
          (await createApiKey(database.prisma, { workspaceId: ws.workspace_id, scopes: [...SCOPES] })).key,
        );
      return { env, workspaceId: ws.workspace_id, keys, drop };
    } finally {
      await database.close();
    }
  } catch (error) {
    await drop();
    throw error;
  }
}

/** Idempotency records live 24 h: a bench that made thousands of them takes them along. */
async function dropRedisKeys(namespace: string): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${namespace}*`, "COUNT", 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}
