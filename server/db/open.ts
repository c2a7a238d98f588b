import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { log } from "../log.ts";
import { lockDataDir } from "./lock.ts";
import { applyMigrations, type SqlSession } from "./migrate.ts";

export interface Database {
  prisma: PrismaClient;
  kind: "embedded" | "postgres";
  /** Names of the migrations this open applied. */
  migrated: string[];
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
}

/**
 * Interactive transactions queue for a connection (PGlite has exactly one): under a burst the
 * default 2 s wait to start one is too short, so wait longer before giving up.
 */
const TRANSACTIONS = { maxWait: 15_000, timeout: 20_000 };

/** An arbitrary constant: the advisory lock that serializes migrations across server processes. */
const MIGRATION_LOCK = 7_202_611;

/** Opens PostgreSQL (DATABASE_URL) or the embedded PGlite in `$DATA_DIR/db`, migrated to the latest schema. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl) : openEmbedded(options.dataDir);
}

async function openPostgres(url: string): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle connection the server closed (restart, failover) must not crash the process: the
  // pool drops it and opens a new one on the next query.
  pool.on("error", (error) => log("warn", "idle database connection lost", { error: error.message }));
  let migrated: string[];
  try {
    const client = await pool.connect();
    try {
      const session: SqlSession = {
        exec: async (sql) => void (await client.query(sql)),
        query: async (sql, params) => (await client.query(sql, params)).rows,
      };
      await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
      try {
        migrated = await applyMigrations(session);
      } finally {
        await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]);
      }
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end();
    throw error;
  }
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions: TRANSACTIONS });
  return {
    prisma,
    kind: "postgres",
    migrated,
    close: async () => {
      await prisma.$disconnect();
      await pool.end().catch(() => {});
    },
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
  mkdirSync(dataDir, { recursive: true });
  const unlock = lockDataDir(join(dataDir, "db.lock"));
  let pglite: PGlite | undefined;
  try {
    pglite = await PGlite.create(join(dataDir, "db"));
    const db = pglite;
    const migrated = await applyMigrations({
      exec: async (sql) => void (await db.exec(sql)),
      query: async <T>(sql: string, params?: unknown[]) => (await db.query<T>(sql, params)).rows,
    });
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(db), transactionOptions: TRANSACTIONS });
    return {
      prisma,
      kind: "embedded",
      migrated,
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
