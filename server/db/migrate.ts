import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { projectPath } from "../runtime/project.ts";

export const MIGRATIONS_DIR = projectPath("schema/prisma/migrations/");

/** The little a migration run needs from a database connection. */
export interface SqlSession {
  /** Runs one or more statements without parameters. */
  exec(sql: string): Promise<void>;
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
}

interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(`${dir}/${name}/migration.sql`, "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

export class MigrationError extends Error {}

/**
 * Applies pending migrations in name order, each in its own transaction, and records them.
 * The caller holds whatever lock keeps two processes from migrating at once.
 * Returns the names applied.
 */
export async function applyMigrations(session: SqlSession, migrations = loadMigrations()): Promise<string[]> {
  await session.exec(`create table if not exists _kontor_migrations (
    name text primary key,
    checksum text not null,
    applied_at timestamptz not null default now()
  )`);
  const applied = new Map(
    (
      await session.query<{ name: string; checksum: string }>("select name, checksum from _kontor_migrations")
    ).map((row) => [row.name, row.checksum]),
  );
  for (const [name, checksum] of applied) {
    const known = migrations.find((m) => m.name === name);
    if (known && known.checksum !== checksum) {
      throw new MigrationError(
        `Migration ${name} was changed after it was applied; add a new migration instead.`,
      );
    }
  }
  const pending = migrations.filter((m) => !applied.has(m.name));
  for (const migration of pending) {
    await session.exec("begin");
    try {
      await session.exec(migration.sql);
      await session.query("insert into _kontor_migrations (name, checksum) values ($1, $2)", [
        migration.name,
        migration.checksum,
      ]);
      await session.exec("commit");
    } catch (error) {
      await session.exec("rollback");
      throw new MigrationError(`Migration ${migration.name} failed: ${(error as Error).message}`);
    }
  }
  return pending.map((m) => m.name);
}
