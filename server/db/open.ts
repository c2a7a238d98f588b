import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type pg from "pg";
import { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { log } from "../observability/log.ts";
import { readDeploymentId } from "./deployment.ts";
import { seedFromTemplate } from "./embedded-template.ts";
import { lockDataDir } from "./lock.ts";
import { applyMigrations, type SqlSession } from "./migrate.ts";

export interface Database {
  prisma: PrismaClient;
  kind: "embedded" | "postgres";
  /** Names of the migrations this open applied. */
  migrated: string[];
  /** The `deployment` row's id, read once at open: it names the deployment's Redis keys (server/runtime/redis.ts). */
  deploymentId: string;
  /** node-postgres's pool on PostgreSQL (its counts are exposed as metrics); none on the embedded database. */
  pool?: pg.Pool;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  /** Default 15 s. */
  transactionTimeoutMs?: number;
}

const DEFAULT_TRANSACTION_TIMEOUT_MS = 15_000;

/**
 * Interactive transactions queue for a connection (PGlite has exactly one): under a burst the
 * default 2 s wait to start one is too short, so wait longer before giving up. A transaction that
 * runs past `timeout` is rolled back.
 */
const transactions = (options: DatabaseOptions) => ({
  maxWait: 15_000,
  timeout: options.transactionTimeoutMs ?? DEFAULT_TRANSACTION_TIMEOUT_MS,
});

/**
 * Prisma's "colorless" and "pretty" formats capture a stack trace (`new Error()`) on every query,
 * to point at the calling line should the query fail: about 2 % of the server's CPU under load.
 * Errors never reach callers (they are logged with their own stack), so the minimal format does.
 */
const ERROR_FORMAT = "minimal" as const;

/**
 * PGlite's PostgreSQL keeps its shared memory inside the WebAssembly instance, zeroed (so resident)
 * from the start, and a WebAssembly memory never shrinks: the default shared_buffers (128 MB) made
 * 140 MB of an embedded server's memory. 16 MB caches a small deployment's hot pages; the rest are
 * read through the file system, whose cache the OS keeps (docs/performance.md#memory).
 */
const EMBEDDED_SETTINGS = ["-c", "shared_buffers=16MB"];

/** An arbitrary constant: the advisory lock that serializes migrations across server processes. */
const MIGRATION_LOCK = 7_202_611;

/** Thrown when a transaction's callback finishes after its time-out: Prisma's code for it, so it is answered as one. */
export class TransactionDeadlineError extends Error {
  readonly code = "P2028";
  constructor(timeoutMs: number) {
    super(`The transaction ran past its time-out of ${timeoutMs} ms and was rolled back.`);
  }
}

/**
 * Prisma rolls a transaction back when its timer fires, but on PGlite a statement runs on this
 * thread and the timer cannot fire until the callback has carried on to its commit. Checking the
 * clock before the commit makes both databases agree: a transaction that outlived its time-out
 * never commits.
 */
function withDeadline(prisma: PrismaClient, timeoutMs: number): PrismaClient {
  const transaction = prisma.$transaction.bind(prisma) as (
    arg: unknown,
    options?: unknown,
  ) => Promise<unknown>;
  const guarded = (arg: unknown, options?: { timeout?: number }) => {
    if (typeof arg !== "function") return transaction(arg, options);
    const limit = options?.timeout ?? timeoutMs;
    return transaction(async (tx: unknown) => {
      const started = performance.now();
      const result = await (arg as (tx: unknown) => Promise<unknown>)(tx);
      if (performance.now() - started > limit) throw new TransactionDeadlineError(limit);
      return result;
    }, options);
  };
  Object.defineProperty(prisma, "$transaction", { value: guarded, configurable: true, writable: true });
  return prisma;
}

/** Opens PostgreSQL (DATABASE_URL) or the embedded PGlite in `$DATA_DIR/db`, migrated to the latest schema. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options)
    : openEmbedded(options.dataDir, options);
}

/**
 * Each stack's driver is imported when it is opened, so a process holds one: PGlite (its module and
 * the Prisma adapter) is never loaded beside PostgreSQL, nor pg beside PGlite.
 */
async function openPostgres(url: string, options: DatabaseOptions): Promise<Database> {
  const [{ default: pg }, { PrismaPg }] = await Promise.all([import("pg"), import("@prisma/adapter-pg")]);
  const timeoutMs = options.transactionTimeoutMs ?? DEFAULT_TRANSACTION_TIMEOUT_MS;
  // The server stops what Prisma gave up on: no statement outlives its transaction's timeout, and a
  // connection left idle inside a transaction is closed, so nothing keeps running or holding locks.
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    statement_timeout: timeoutMs,
    idle_in_transaction_session_timeout: timeoutMs + 5_000,
  });
  // An idle connection the server closed (restart, failover) must not crash the process: the
  // pool drops it and opens a new one on the next query.
  pool.on("error", (error) => log("warn", "idle database connection lost", { error: error.message }));
  let migrated: string[];
  let deploymentId: string;
  try {
    const client = await pool.connect();
    // A session the server ends while this client is checked out (the idle-in-transaction time-out)
    // fails the next statement; without a listener the client's 'error' event would end the process.
    const ignore = () => {};
    client.on("error", ignore);
    try {
      const session: SqlSession = {
        exec: async (sql) => void (await client.query(sql)),
        query: async (sql, params) => (await client.query(sql, params)).rows,
      };
      await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
      try {
        migrated = await applyMigrations(session);
        deploymentId = await readDeploymentId(session);
      } finally {
        await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]);
      }
    } finally {
      client.off("error", ignore);
      client.release();
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  const prisma = withDeadline(
    new PrismaClient({
      adapter: new PrismaPg(pool),
      transactionOptions: transactions(options),
      errorFormat: ERROR_FORMAT,
    }),
    timeoutMs,
  );
  return {
    prisma,
    kind: "postgres",
    migrated,
    deploymentId,
    pool,
    close: async () => {
      await prisma.$disconnect();
      await pool.end().catch(() => {});
    },
  };
}

async function openEmbedded(dataDir: string, options: DatabaseOptions): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const [{ PGlite }, { pg_trgm }, { PrismaPGlite }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
    import("pglite-prisma-adapter"),
  ]);
  const unlock = lockDataDir(join(dataDir, "db.lock"));
  let pglite: PGlite | undefined;
  try {
    // A first start copies the migrated template `npm run build` made, when there is one: its
    // migrations count as applied by this open, as they would have been without it.
    const seeded = seedFromTemplate(join(dataDir, "db"));
    // The extensions the migrations create (pg_trgm: the lists' `search` indexes).
    pglite = await PGlite.create(join(dataDir, "db"), {
      extensions: { pg_trgm },
      startParams: [...PGlite.defaultStartParams, ...EMBEDDED_SETTINGS],
    });
    const db = pglite;
    const session: SqlSession = {
      exec: async (sql) => void (await db.exec(sql)),
      query: async <T>(sql: string, params?: unknown[]) => (await db.query<T>(sql, params)).rows,
    };
    const migrated = [...seeded, ...(await applyMigrations(session))];
    const deploymentId = await readDeploymentId(session);
    const prisma = withDeadline(
      new PrismaClient({
        adapter: new PrismaPGlite(db),
        transactionOptions: transactions(options),
        errorFormat: ERROR_FORMAT,
      }),
      transactions(options).timeout,
    );
    return {
      prisma,
      kind: "embedded",
      migrated,
      deploymentId,
      close: async () => {
        await prisma.$disconnect();
        await db.close();
        unlock();
      },
    };
  } catch (error) {
    await pglite?.close().catch(() => {});
    unlock();
    throw error;
  }
}
