/**
 * The SQLSTATE of a failed statement (`22P02`, `23514`…), as Prisma's driver adapters (node-postgres
 * and PGlite alike) report it in `meta.driverAdapterError.cause`; undefined when the database gave
 * none (the connection failed, the pool timed out).
 */
export function sqlState(error: unknown): string | undefined {
  const cause = (
    error as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; code?: unknown } } } } | null
  )?.meta?.driverAdapterError?.cause;
  const code = cause?.originalCode ?? cause?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * The database refused a value of the statement's rows: a data exception (class 22: a number out
 * of range, invalid text), a constraint (23) or a limit such as an index entry's size (54). The
 * same rows will fail again; other rows need not.
 */
export function refusedValue(state: string | undefined): boolean {
  return state !== undefined && /^(22|23|54)/.test(state);
}

/**
 * The database answered the statement with an error of its own, rather than being out of reach:
 * not a connection error (08), a lack of resources (53), a shutdown (57) or a system error (58).
 */
export function databaseAnswered(state: string | undefined): boolean {
  return state !== undefined && !/^(08|53|57|58)/.test(state);
}
