import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { ApiError } from "../../schema/lib/errors.ts";
import type { Database } from "../db/open.ts";
import { fromThisMachine } from "../http/client-address.ts";
import { errorResponse } from "../http/error-response.ts";
import { newRequestState, type RequestState, stateOf } from "../http/request-state.ts";
import { RouteTemplates } from "../rest/route-template.ts";
import type { Config } from "../runtime/config.ts";
import { describeError, log } from "./log.ts";
import { aggregatedByPrimary, askPrimary, shareWithPrimary } from "./metrics-cluster.ts";
import { requestLogWriter } from "./request-log.ts";

export const METRICS_PATH = "/metrics";

/** Seconds; from under a millisecond (a cached read) to a long AI answer or download. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const WEBHOOK_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** The database gauges count at most this many rows: a scrape stays cheap during a huge backlog. */
const COUNT_CAP = 100_000;
/** Scrapes within this long reuse one database count (several scrapers, HA Prometheus pairs). */
const DATABASE_GAUGES_TTL_MS = 5_000;

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const IDEMPOTENCY_CODES: Record<string, string> = {
  idempotency_conflict: "conflict",
  idempotency_in_progress: "in_progress",
  idempotency_not_replayable: "not_replayable",
};
const RATE_LIMIT_CODES = new Set(["rate_limit_exceeded", "concurrency_limit_exceeded"]);
const PLANS = new Set(["free", "plus", "pro", "max"]);

let processRegistry: Registry | undefined;

/** RSS, heap, event-loop lag, GC, CPU, file descriptors: once per process, whatever the number of servers in it. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

const digest = (value: string) => createHash("sha256").update(value).digest();

interface DatabaseGauges {
  outbox_events: number;
  outbox_oldest_seconds: number | null;
  due: number;
  scheduled: number;
  held: number;
}

/**
 * The Prometheus metrics of one server (GET /metrics). Request metrics are recorded by the Yoga
 * plugin `observe()` returns; the scrape itself is answered by `serveScrape` before the request
 * reaches Yoga, so it passes no API policy: it is not rate limited, not logged, not counted, and
 * not part of the OpenAPI document.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  private readonly token: Buffer | undefined;
  /** KONTOR_TRUST_PROXY: who may vouch that a forwarded scrape came from this machine. */
  private readonly proxies: Pick<Config, "trustProxy">;
  private readonly requests: Counter<"method" | "route" | "status_class">;
  private readonly duration: Histogram<"method" | "route" | "status_class">;
  private readonly inFlight: Gauge;
  private readonly refusals: Counter<"code" | "plan">;
  private readonly idempotency: Counter<"outcome">;
  private readonly webhookAttempts: Counter<"outcome">;
  private readonly webhookDuration: Histogram;
  /** Label children by `method route class`: prom-client hashes labels on every call otherwise. */
  private readonly children = new Map<
    string,
    { count: Counter.Internal; time: Histogram.Internal<string> }
  >();
  private databaseGauges: { at: number; value: Promise<DatabaseGauges> } | undefined;

  constructor(
    config: Pick<Config, "metricsToken" | "trustProxy">,
    private readonly db: Database,
    private readonly redis: Redis | undefined,
  ) {
    this.token = config.metricsToken === undefined ? undefined : digest(config.metricsToken);
    this.proxies = { trustProxy: config.trustProxy };
    const registers = [this.registry];
    this.requests = new Counter({
      name: "kontor_http_requests_total",
      help: 'HTTP requests answered, by method, route template (never the raw path; unmatched paths are route="unmatched") and status class.',
      labelNames: ["method", "route", "status_class"],
      registers,
    });
    this.duration = new Histogram({
      name: "kontor_http_request_duration_seconds",
      help: "From a request's arrival until its response was sent in full (a stream or a download: its whole transfer).",
      labelNames: ["method", "route", "status_class"],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({
      name: "kontor_http_requests_in_flight",
      help: "Requests arrived and not yet answered in full.",
      registers,
    });
    this.refusals = new Counter({
      name: "kontor_rate_limit_refusals_total",
      help: "429 answers, by error code (rate_limit_exceeded, concurrency_limit_exceeded) and the caller's plan (none: a limit outside the plans, such as sign-in).",
      labelNames: ["code", "plan"],
      registers,
    });
    this.idempotency = new Counter({
      name: "kontor_idempotency_requests_total",
      help: "Requests with an Idempotency-Key answered without running: replayed, conflict, in_progress, not_replayable.",
      labelNames: ["outcome"],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: "kontor_webhook_attempts_total",
      help: "Webhook delivery attempts this process made, by what they came to: succeeded, retrying, failed, or lease_lost (not recorded: the delivery may be sent again).",
      labelNames: ["outcome"],
      registers,
    });
    this.webhookDuration = new Histogram({
      name: "kontor_webhook_attempt_duration_seconds",
      help: "How long a webhook delivery attempt took, until the receiver's answer or the error.",
      buckets: WEBHOOK_BUCKETS,
      registers,
    });
    for (const outcome of ["succeeded", "retrying", "failed", "lease_lost"])
      this.webhookAttempts.labels({ outcome }).inc(0);
    for (const outcome of ["replayed", "conflict", "in_progress", "not_replayable"])
      this.idempotency.labels({ outcome }).inc(0);
    for (const plan of PLANS) this.refusals.labels({ code: "rate_limit_exceeded", plan }).inc(0);
    this.databaseMetrics(registers);
    this.poolMetrics(registers);
    this.processLocalMetrics(registers);
    if (aggregatedByPrimary()) shareWithPrimary([processMetrics(), this.registry]);
  }

  /**
   * Gauges read from the database at scrape time: the outbox and the deliveries waiting. Each
   * collect awaits the same cached statement, so a scrape costs one query, its counts capped. When
   * it fails, kontor_database_up is 0 and the others are NaN (never a reassuring 0).
   */
  private databaseMetrics(registers: Registry[]): void {
    const read = () =>
      this.readDatabaseGauges().catch((error: unknown) => {
        log("warn", "metrics: the database gauges could not be read", describeError(error));
        return undefined;
      });
    new Gauge({
      name: "kontor_database_up",
      help: "1 when the scrape's database query succeeded, 0 when it failed.",
      aggregator: "min",
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
      registers,
    });
    new Gauge({
      name: "kontor_webhook_outbox_events",
      help: `Committed events not yet fanned out into deliveries (counted up to ${COUNT_CAP}).`,
      aggregator: "max",
      async collect() {
        this.set((await read())?.outbox_events ?? Number.NaN);
      },
      registers,
    });
    new Gauge({
      name: "kontor_webhook_outbox_oldest_seconds",
      help: "Age of the oldest event not yet fanned out (0 when there is none).",
      aggregator: "max",
      async collect() {
        const value = await read();
        this.set(value ? (value.outbox_oldest_seconds ?? 0) : Number.NaN);
      },
      registers,
    });
    new Gauge({
      name: "kontor_webhook_deliveries_waiting",
      help: `Deliveries pending or retrying, by state: due (to be sent now), scheduled (a retry later), held (endpoint paused); counted up to ${COUNT_CAP} in all.`,
      labelNames: ["state"],
      aggregator: "max",
      async collect() {
        const value = await read();
        for (const state of ["due", "scheduled", "held"] as const)
          this.set({ state }, value ? value[state] : Number.NaN);
      },
      registers,
    });
  }

  private readDatabaseGauges(): Promise<DatabaseGauges> {
    const now = Date.now();
    if (this.databaseGauges && now - this.databaseGauges.at < DATABASE_GAUGES_TTL_MS)
      return this.databaseGauges.value;
    const value = this.db.prisma.$queryRaw<DatabaseGauges[]>`
      select
        (select count(*)::int from (select 1 from events where dispatched_at is null limit ${COUNT_CAP}::int) o) as outbox_events,
        (select extract(epoch from now() - min(created_at))::float8
           from (select created_at from events where dispatched_at is null order by id limit 1) f) as outbox_oldest_seconds,
        (count(*) filter (where next_attempt_at <= now()))::int as due,
        (count(*) filter (where next_attempt_at > now()))::int as scheduled,
        (count(*) filter (where next_attempt_at is null))::int as held
      from (select next_attempt_at from webhook_deliveries where status in ('pending', 'retrying') limit ${COUNT_CAP}::int) d`.then(
      (rows) => rows[0]!,
    );
    this.databaseGauges = { at: now, value };
    // A failure is not cached: the next scrape tries again.
    value.catch(() => {
      if (this.databaseGauges?.value === value) this.databaseGauges = undefined;
    });
    return value;
  }

  /** node-postgres's pool of this process (PostgreSQL only; the embedded database has one connection and no pool). */
  private poolMetrics(registers: Registry[]): void {
    const pool = this.db.pool;
    if (!pool) return;
    new Gauge({
      name: "kontor_db_pool_connections",
      help: "Connections of this process's database pool, by state: in_use, idle.",
      labelNames: ["state"],
      collect() {
        this.set({ state: "idle" }, pool.idleCount);
        this.set({ state: "in_use" }, pool.totalCount - pool.idleCount);
      },
      registers,
    });
    new Gauge({
      name: "kontor_db_pool_max_connections",
      help: "The most connections the pool of this process opens.",
      collect() {
        this.set(pool.options.max ?? 10);
      },
      registers,
    });
    new Gauge({
      name: "kontor_db_pool_waiting_requests",
      help: "Queries waiting for a free connection of the pool.",
      collect() {
        this.set(pool.waitingCount);
      },
      registers,
    });
  }

  private processLocalMetrics(registers: Registry[]): void {
    const redis = this.redis;
    if (redis) {
      new Gauge({
        name: "kontor_redis_up",
        help: "1 while this process's Redis connection is ready. At 0, rate limits fall back to each process limiting on its own.",
        aggregator: "min",
        collect() {
          this.set(redis.status === "ready" ? 1 : 0);
        },
        registers,
      });
    }
    const db = this.db;
    new Gauge({
      name: "kontor_request_log_buffered_rows",
      help: "Request-log rows waiting in memory to be written (they pile up while the database refuses the writes).",
      collect() {
        this.set(requestLogWriter(db)?.pending ?? 0);
      },
      registers,
    });
  }

  /** For the webhook worker: one attempt and what it came to. */
  readonly webhookAttempt = (
    outcome: "succeeded" | "retrying" | "failed" | "lease_lost",
    durationMs: number,
  ): void => {
    this.webhookAttempts.labels({ outcome }).inc();
    this.webhookDuration.observe(durationMs / 1000);
  };

  /** The exposition text: this process's, or in cluster mode the primary's sum over every worker. */
  async text(): Promise<string> {
    if (aggregatedByPrimary()) return askPrimary();
    const [own, process] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return `${own}\n${process}`;
  }

  /**
   * Answers `GET /metrics` and returns true, or returns false for any other request (it goes on to
   * the API). With KONTOR_METRICS_TOKEN, `Authorization: Bearer <token>` is required from every
   * client (else 401); without it, only loopback clients may scrape, forwarded by no proxy or only
   * by trusted proxies on this machine (fromThisMachine), and everybody else gets the 404 of a
   * path that does not exist.
   */
  serveScrape(req: IncomingMessage, res: ServerResponse): boolean {
    const url = req.url ?? "";
    if (url !== METRICS_PATH && !url.startsWith(`${METRICS_PATH}?`)) return false;
    void this.scrape(req, res).catch((error: unknown) => {
      log("error", "metrics scrape failed", describeError(error));
      if (!res.headersSent)
        send(
          res,
          refusal(
            new ApiError(
              503,
              "api_error",
              "service_unavailable",
              "The metrics could not be collected; retry shortly.",
            ),
          ),
        );
      else res.destroy();
    });
    return true;
  }

  private async scrape(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const denied = this.denied(req);
    if (denied) return send(res, refusal(denied));
    if (method !== "GET" && method !== "HEAD") {
      return send(
        res,
        refusal(
          new ApiError(405, "invalid_request_error", "method_not_allowed", `${method} is not allowed here.`, {
            headers: { Allow: "GET, HEAD" },
          }),
        ),
      );
    }
    const body = await this.text();
    res.writeHead(200, {
      "Content-Type": this.registry.contentType,
      "Content-Length": Buffer.byteLength(body),
      "Cache-Control": "no-store",
    });
    res.end(method === "HEAD" ? undefined : body);
  }

  private denied(req: IncomingMessage): ApiError | undefined {
    if (!this.token) {
      // A proxy in front of the server makes every client look local: a forwarded request is local
      // only when trusted proxies (KONTOR_TRUST_PROXY) vouch that every hop was on this machine.
      if (fromThisMachine(req, this.proxies)) return undefined;
      return new ApiError(
        404,
        "invalid_request_error",
        "not_found",
        `No route ${req.method} ${METRICS_PATH}.`,
      );
    }
    const header = req.headers.authorization;
    const challenge = 'Bearer realm="kontor-metrics"';
    if (!header) {
      return new ApiError(
        401,
        "authentication_error",
        "unauthenticated",
        "GET /metrics needs Authorization: Bearer <KONTOR_METRICS_TOKEN>.",
        {
          headers: { "WWW-Authenticate": challenge },
        },
      );
    }
    const match = /^Bearer (.+)$/i.exec(header.trim());
    if (match && timingSafeEqual(digest(match[1]!.trim()), this.token)) return undefined;
    return new ApiError(401, "authentication_error", "invalid_token", "The metrics token is not valid.", {
      headers: { "WWW-Authenticate": match ? `${challenge}, error="invalid_token"` : challenge },
    });
  }

  /**
   * The Yoga plugin that records every API request. Register it first: its onRequest then runs
   * before any other policy can end the request (in-flight count); what it records is read when
   * the response has been sent, so it sees the status every other plugin settled on.
   */
  observe(): Plugin {
    const routes = new RouteTemplates();
    return {
      onSchemaChange: ({ schema }) => routes.setSchema(schema),
      onRequest: ({ serverContext }) => {
        this.inFlight.inc();
        const res = (serverContext as { res?: ServerResponse }).res;
        if (res && !res.closed) res.once("close", () => this.inFlight.dec());
        else this.inFlight.dec();
      },
      onResponse: ({ request, response, serverContext }) => {
        const state = stateOf(serverContext);
        const route = routes.of(request, state) ?? "unmatched";
        const method = METHODS.has(request.method) ? request.method : "OTHER";
        const res = (serverContext as { res?: ServerResponse }).res;
        if (!res)
          return this.record(method, route, state, response.status, (name) => response.headers.get(name));
        res.once("close", () =>
          this.record(method, route, state, res.statusCode, (name) => headerText(res.getHeader(name))),
        );
      },
    };
  }

  private record(
    method: string,
    route: string,
    state: RequestState,
    status: number,
    header: (name: string) => string | null,
  ): void {
    const statusClass = `${Math.floor(status / 100)}xx`;
    const key = `${method} ${route} ${statusClass}`;
    let child = this.children.get(key);
    if (!child) {
      const labels = { method, route, status_class: statusClass };
      child = { count: this.requests.labels(labels), time: this.duration.labels(labels) };
      this.children.set(key, child);
    }
    child.count.inc();
    child.time.observe((performance.now() - state.startedAt) / 1000);
    if (status === 429) {
      const code = state.errorCode && RATE_LIMIT_CODES.has(state.errorCode) ? state.errorCode : "other";
      const plan = header("x-ratelimit-plan");
      this.refusals.labels({ code, plan: plan && PLANS.has(plan) ? plan : "none" }).inc();
    }
    if (header("idempotent-replay") === "true") this.idempotency.labels({ outcome: "replayed" }).inc();
    else if (state.errorCode && IDEMPOTENCY_CODES[state.errorCode])
      this.idempotency.labels({ outcome: IDEMPOTENCY_CODES[state.errorCode]! }).inc();
  }
}

const headerText = (value: number | string | string[] | undefined) =>
  value === undefined ? null : Array.isArray(value) ? value.join(", ") : String(value);

/** The API's error response for a refused scrape, with a request id like every other answer. */
function refusal(error: ApiError): Response {
  const state = newRequestState();
  const response = errorResponse(error, METRICS_PATH, state);
  response.headers.set("X-Request-Id", state.id);
  response.headers.set("Cache-Control", "no-store");
  return response;
}

async function send(res: ServerResponse, response: Response): Promise<void> {
  const body = await response.text();
  res.writeHead(response.status, {
    ...Object.fromEntries(response.headers),
    "Content-Length": Buffer.byteLength(body),
  });
  res.end(body);
}
