import type { Plugin } from "graphql-yoga";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { Database } from "../db/open.ts";
import { databaseAnswered, refusedValue, sqlState } from "../db/sql-state.ts";
import { clientAddress } from "../http/client-address.ts";
import { stateOf } from "../http/request-state.ts";
import { HEALTH_PATH } from "../http/well-known.ts";
import { RouteTemplates } from "../rest/route-template.ts";
import type { Config } from "../runtime/config.ts";
import { describeError, log } from "./log.ts";
import { storableRow } from "./request-log-row.ts";

/** How long request logs are kept. */
export const RETENTION_DAYS = 30;
const DAY_MS = 86_400_000;

export interface RequestLogOptions {
  /** Flush at least this often (ms). */
  flushIntervalMs: number;
  /** Rows per createMany; a full batch is flushed at once, without waiting for the interval. */
  batchSize: number;
  /** Rows kept in memory at most while the database is failing: beyond it the oldest are dropped. */
  maxBuffered: number;
  /**
   * A failed batch is retried (with exponential backoff, see `retryBackoffMs`) this many times; its
   * last attempt is split into smaller statements, so only rows failing alone are dropped. A batch
   * the database refuses for a value (a data exception, a constraint) is split at once.
   */
  maxAttempts: number;
  /** After a failed flush the background flush waits this long, doubling per failure up to 30 s. */
  retryBackoffMs: number;
  /** Retention cleanup: first run this long after start, then every `retentionEveryMs`. */
  retentionFirstMs: number;
  retentionEveryMs: number;
}

export const DEFAULT_REQUEST_LOG_OPTIONS: RequestLogOptions = {
  flushIntervalMs: 250,
  batchSize: 200,
  maxBuffered: 20_000,
  maxAttempts: 8,
  retryBackoffMs: 500,
  retentionFirstMs: 30_000,
  retentionEveryMs: 3_600_000,
};

export interface RequestLogRow {
  id: string;
  workspaceId: string | null;
  credentialId: string | null;
  method: string;
  route: string | null;
  status: number;
  latencyMs: number;
  errorCode: string | null;
  clientIp: string | null;
  userAgent: string | null;
  model?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  tool?: string | null;
  createdAt: Date;
}

interface Pending {
  row: RequestLogRow;
  attempts: number;
}

/** Rows a statement did not write, and its error. */
interface Failure {
  rows: Pending[];
  error: unknown;
}

/**
 * Deletes request logs older than the retention period, in slices so no single statement holds
 * locks on a large table for long. Returns how many rows went.
 */
export async function deleteExpiredRequestLogs(
  prisma: PrismaClient,
  now: Date = new Date(),
): Promise<number> {
  const cutoff = new Date(now.getTime() - RETENTION_DAYS * DAY_MS);
  let total = 0;
  for (;;) {
    const deleted = await prisma.$executeRaw`
      delete from request_logs where id in (select id from request_logs where created_at < ${cutoff} limit 5000)`;
    total += deleted;
    if (deleted < 5000) return total;
  }
}

const column = <K extends keyof RequestLogRow>(rows: RequestLogRow[], key: K) => rows.map((row) => row[key]);

/**
 * One statement per batch, its columns as arrays: Prisma's createMany compiles a new plan for
 * every batch size, which cost a few percent of the server's CPU under load.
 * `on conflict do nothing`: a retried batch whose first attempt did commit must not fail forever.
 */
async function insertRows(prisma: PrismaClient, rows: RequestLogRow[]): Promise<void> {
  await prisma.$executeRaw`
    insert into request_logs
      (id, workspace_id, credential_id, method, route, status, latency_ms, error_code, client_ip, user_agent, model, input_tokens, output_tokens, tool, created_at)
    select * from unnest(
      ${column(rows, "id")}::text[], ${column(rows, "workspaceId")}::text[], ${column(rows, "credentialId")}::text[],
      ${column(rows, "method")}::text[], ${column(rows, "route")}::text[], ${column(rows, "status")}::int[],
      ${column(rows, "latencyMs")}::int[], ${column(rows, "errorCode")}::text[], ${column(rows, "clientIp")}::text[],
      ${column(rows, "userAgent")}::text[], ${rows.map((row) => row.model ?? null)}::text[], ${rows.map((row) => row.inputTokens ?? null)}::int[],
      ${rows.map((row) => row.outputTokens ?? null)}::int[], ${rows.map((row) => row.tool ?? null)}::text[],
      ${rows.map((row) => row.createdAt.toISOString())}::timestamptz[])
    on conflict (id) do nothing`;
}

/**
 * The in-memory buffer between the request path and the database. `push` never waits; rows are
 * written by a background flush (every `flushIntervalMs`, or at once when a batch is full), and
 * `close` writes whatever is left.
 */
export class RequestLogWriter {
  private buffer: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private dropped = 0;
  private closed = false;
  private readonly timers: NodeJS.Timeout[] = [];
  /** While set, only `flush()` and `close()` write (tests use it to observe the buffer). */
  private paused = false;
  /** Consecutive failed flushes, and when the background flush may try again. */
  private failures = 0;
  private retryAt = 0;
  private readonly kick: () => void;
  private readonly cleanup: () => void;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly options: RequestLogOptions = DEFAULT_REQUEST_LOG_OPTIONS,
  ) {
    this.kick = () => {
      if (!this.paused && Date.now() >= this.retryAt) void this.flush();
    };
    this.cleanup = () => void this.runRetention();
    const every = setInterval(this.kick, options.flushIntervalMs);
    const first = setTimeout(this.cleanup, options.retentionFirstMs);
    const hourly = setInterval(this.cleanup, options.retentionEveryMs);
    for (const timer of [every, first, hourly]) {
      timer.unref();
      this.timers.push(timer);
    }
  }

  /** Rows waiting to be written. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Stops the background flush until the returned function is called. For tests and diagnostics. */
  pauseBackgroundFlush(): () => void {
    this.paused = true;
    return () => {
      this.paused = false;
    };
  }

  push(row: RequestLogRow): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.buffer.shift();
      if (this.dropped++ % 1000 === 0)
        log("warn", "request log buffer full: dropping the oldest rows", { dropped: this.dropped });
    }
    // Clamped and cleaned here: one value the table refuses would fail its whole batch's statement.
    this.buffer.push({ row: storableRow(row), attempts: 0 });
    if (this.buffer.length >= this.options.batchSize && !this.flushing) setImmediate(this.kick);
  }

  /**
   * Writes everything buffered now (one flush at a time; a call during a flush waits for it and
   * then writes what is left). A failure is logged, never thrown: its rows stay buffered for a
   * later attempt until `maxAttempts`, but for rows the database refused alone, which are dropped
   * (and logged) while the rest of their batch is written.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.buffer.length === 0) return;
    this.flushing = this.drain().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async drain(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.options.batchSize);
      const failed = await this.insert(batch);
      if (!failed) {
        this.failures = 0;
        this.retryAt = 0;
        continue;
      }
      const state = sqlState(failed.error);
      // Closing, or the last attempt of some of its rows: no later attempt will come for them.
      const last = this.closed || batch.some((p) => p.attempts + 1 >= this.options.maxAttempts);
      // A refused value fails the same way every time: the batch is split at once, so that only the
      // rows refused alone are lost. Another error of the database's (a trigger…) is retried whole,
      // and split on its last attempt; an unreachable database is only retried.
      const split = refusedValue(state) || (last && databaseAnswered(state));
      const failures = split ? await this.split(batch, failed.error) : [{ rows: batch, error: failed.error }];
      const retry = failures.flatMap((failure) => this.settle(failure));
      const kept = retry.slice(0, Math.max(0, this.options.maxBuffered - this.buffer.length));
      const unwritten = failures.reduce((n, failure) => n + failure.rows.length, 0);
      const waiting = !this.closed && (kept.length > 0 || !databaseAnswered(state));
      let backoff: number | undefined;
      if (waiting) {
        this.failures++;
        backoff = Math.min(30_000, this.options.retryBackoffMs * 2 ** (this.failures - 1));
        this.retryAt = Date.now() + backoff;
      }
      log("error", "request log flush failed", {
        ...describeError(failed.error),
        rows: batch.length,
        written: batch.length - unwritten,
        dropped: unwritten - kept.length,
        ...(backoff !== undefined && { retry_in_ms: backoff }),
      });
      if (!waiting) continue;
      this.buffer.unshift(...kept);
      return;
    }
  }

  /** One statement for `rows`: resolves with its error, or undefined once they are written. */
  private async insert(rows: Pending[]): Promise<Failure | undefined> {
    try {
      await insertRows(
        this.prisma,
        rows.map((p) => p.row),
      );
      return undefined;
    } catch (error) {
      return { rows, error };
    }
  }

  /**
   * After a statement of `rows` failed with `error`: writes them in halves, recursively, and
   * resolves with what is left, the rows the database refused alone (each with its error). Once
   * the database is out of reach the rest is not tried; it comes back with that error.
   */
  private async split(rows: Pending[], error: unknown): Promise<Failure[]> {
    if (rows.length === 1 || !databaseAnswered(sqlState(error))) return [{ rows, error }];
    const half = Math.ceil(rows.length / 2);
    const failures: Failure[] = [];
    for (const part of [rows.slice(0, half), rows.slice(half)]) {
      const unreachable = failures.find((failure) => !databaseAnswered(sqlState(failure.error)));
      if (unreachable) {
        failures.push({ rows: part, error: unreachable.error });
        continue;
      }
      const failed = await this.insert(part);
      if (failed) failures.push(...(await this.split(part, failed.error)));
    }
    return failures;
  }

  /**
   * The rows of a failed statement to try again: none of a refused value (it would fail again),
   * none once closing or out of attempts. A row dropped after failing alone is logged with its id.
   */
  private settle(failure: Failure): Pending[] {
    const again = !this.closed && !refusedValue(sqlState(failure.error));
    const retry = failure.rows.filter((p) => again && ++p.attempts < this.options.maxAttempts);
    if (failure.rows.length === 1 && retry.length === 0) {
      log("error", "request log row dropped", {
        ...describeError(failure.error),
        request_log_id: failure.rows[0]!.row.id,
      });
    }
    return retry;
  }

  private async runRetention(): Promise<void> {
    try {
      const deleted = await deleteExpiredRequestLogs(this.prisma);
      if (deleted > 0)
        log("info", "request logs past retention deleted", { deleted, retention_days: RETENTION_DAYS });
    } catch (error) {
      log("error", "request log retention failed", describeError(error));
    }
  }

  /** Stops the timers and writes what is buffered (a failing database gets one last attempt per row). */
  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.closed = true;
    await this.flush();
  }
}

/** The writer of each open database, so tests and the CLI can flush or inspect it. */
const writers = new WeakMap<PrismaClient, RequestLogWriter>();

export function requestLogWriter(db: Pick<Database, "prisma">): RequestLogWriter | undefined {
  return writers.get(db.prisma);
}

/** Writes the buffered request logs of this database now (a no-op when request logs are off). */
export async function flushRequestLogs(db: Pick<Database, "prisma">): Promise<void> {
  await writers.get(db.prisma)?.flush();
}

const text = (value: string | null | undefined, max: number) => (value ? value.slice(0, max) : null);

/**
 * docs/api/conventions-and-errors.md#errors: every request (authenticated or not) becomes one request_logs row keyed by its
 * request id, but for the dashboard's own requests (a session credential): logs are per key and
 * agent, and the dashboard reading them must not fill them; and for the liveness check, which
 * costs the database nothing however often it is probed; nor for a request the per-address limit
 * refused before anything else (`unlogged`), so a flood costs it nothing either. Register it last: every onResponse runs whichever plugin ended the request (401,
 * 404, 429…), and the last one sees the response the others settled on.
 */
export function useRequestLog(
  config: Config,
  db: Database,
  options: Partial<RequestLogOptions> = {},
): Plugin {
  const writer = new RequestLogWriter(db.prisma, { ...DEFAULT_REQUEST_LOG_OPTIONS, ...options });
  writers.set(db.prisma, writer);
  const routes = new RouteTemplates();

  return {
    onSchemaChange({ schema }) {
      routes.setSchema(schema);
    },
    onResponse({ request, response, serverContext }) {
      const state = stateOf(serverContext);
      if (state.unlogged || state.credential?.kind === "session") return;
      const latency = performance.now() - state.startedAt;
      const route = routes.of(request, state);
      if (route === HEALTH_PATH) return;
      const row: RequestLogRow = {
        id: state.id,
        workspaceId: state.credential?.workspaceId ?? null,
        credentialId: state.credential?.id ?? null,
        method: request.method.slice(0, 16),
        route,
        status: response.status,
        latencyMs: Math.max(0, Math.round(latency)),
        errorCode: state.errorCode ?? null,
        clientIp: clientAddress(serverContext, config) ?? null,
        userAgent: text(request.headers.get("user-agent"), 512),
        tool: state.tool ?? null,
        // The request's arrival (wall clock), like the time in its id, so id order and created_at agree.
        createdAt: new Date(Date.now() - latency),
      };
      // An AI answer's tokens are known once its body (a stream, perhaps) has ended: the row waits for them.
      if (!state.aiUsage) return writer.push(row);
      void state.aiUsage.then(
        (usage) =>
          writer.push({
            ...row,
            model: usage?.model ?? null,
            inputTokens: usage?.input_tokens ?? null,
            outputTokens: usage?.output_tokens ?? null,
          }),
        () => writer.push(row),
      );
    },
    onDispose: async () => {
      writers.delete(db.prisma);
      await writer.close();
    },
  };
}
