import pg from "pg";

/**
 * Every end-to-end suite runs on both stacks: the embedded default (PGlite, in-process stores)
 * and PostgreSQL + Redis. KONTOR_TEST_STACKS=embedded (or postgres) narrows it while developing.
 */
export type Stack = "embedded" | "postgres";

export const ALL_STACKS: Stack[] = ["embedded", "postgres"];

export function stacks(): Stack[] {
  const wanted = process.env.KONTOR_TEST_STACKS?.split(",").map((s) => s.trim()) ?? ALL_STACKS;
  return ALL_STACKS.filter((s) => wanted.includes(s));
}

export const POSTGRES_ADMIN_URL =
  process.env.KONTOR_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.KONTOR_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export function databaseUrl(name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs one statement as PostgreSQL's admin user, on a connection of its own (making and dropping databases). */
export async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
