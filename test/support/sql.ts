import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import type { TestServer } from "./server.ts";

/**
 * The SQL a server in this process sends, as its driver receives it (node-postgres on PostgreSQL,
 * PGlite on the embedded stack), and the plans PostgreSQL makes of it.
 */

export interface Statement {
  sql: string;
  values: unknown[];
  /** The embedded database it ran on (EXPLAIN runs there too). */
  pglite?: PGlite;
}

let recording: Statement[] | undefined;

const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const [config, values] = args;
  if (recording && typeof config === "string")
    recording.push({ sql: config, values: Array.isArray(values) ? values : [] });
  else if (recording && config && typeof (config as { text?: unknown }).text === "string") {
    const query = config as { text: string; values?: unknown[] };
    recording.push({ sql: query.text, values: query.values ?? (Array.isArray(values) ? values : []) });
  }
  return pgQuery.apply(this, args);
} as typeof pg.Client.prototype.query;

const pgliteQuery = PGlite.prototype.query;
PGlite.prototype.query = function (this: PGlite, sql: string, params?: unknown[], options?: unknown) {
  recording?.push({ sql, values: params ?? [], pglite: this });
  return pgliteQuery.call(this, sql, params as never, options as never);
} as typeof PGlite.prototype.query;

/** The statements sent while `during` ran. */
export async function recordSql(during: () => Promise<unknown>): Promise<Statement[]> {
  const statements: Statement[] = [];
  recording = statements;
  try {
    await during();
  } finally {
    recording = undefined;
  }
  return statements;
}

/** The root node of PostgreSQL's plan of a recorded statement: `EXPLAIN (<options>, FORMAT JSON)`, on the database it ran on. */
export async function explainPlan<Node>(
  server: TestServer,
  statement: Statement,
  options = "",
): Promise<Node> {
  const sql = `EXPLAIN (${options ? `${options}, ` : ""}FORMAT JSON) ${statement.sql}`;
  let rows: Record<string, unknown>[];
  if (statement.pglite) {
    rows = (await statement.pglite.query<Record<string, unknown>>(sql, statement.values)).rows;
  } else {
    const client = new pg.Client({ connectionString: server.config.databaseUrl });
    await client.connect();
    try {
      rows = (await client.query(sql, statement.values)).rows;
    } finally {
      await client.end();
    }
  }
  const value = rows[0]!["QUERY PLAN"];
  return ((typeof value === "string" ? JSON.parse(value) : value) as { Plan: Node }[])[0]!.Plan;
}
