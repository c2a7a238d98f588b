import { encodeTime, TIME_MAX } from "ulid";
import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { validationFailed } from "../lib/errors.ts";
import { listPage } from "../lib/list-page.ts";
import type { ArgumentCost } from "../lib/response-cost.ts";
import { rest } from "../lib/rest.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

/**
 * Request logs (docs/operations/logs.md, docs/api/conventions-and-errors.md#errors): one row per request, written by
 * server/observability/request-log.ts. Read-only, always limited to the caller's workspace.
 */
export const RequestLog = builder.prismaObject("RequestLog", {
  description:
    "One API request: its id (the request_id of its error body), route template, status and latency. Needs logs.read.",
  authScopes: { scope: "logs.read" },
  fields: (t) => ({
    object: objectKind(t, "request_log"),
    request_id: t.exposeString("id", { description: "The X-Request-Id of the response." }),
    key_id: t.exposeString("credentialId", {
      nullable: true,
      description: "The API key (`key_…`) that made the request; null when the request carried no valid key.",
    }),
    method: t.exposeString("method", { description: "The HTTP method, e.g. GET." }),
    route: t.exposeString("route", {
      nullable: true,
      description:
        "The route template (`/v1/leads/{id}`, `/graphql`), never the raw path; null when no route matched.",
    }),
    status: t.exposeInt("status", { description: "The HTTP status of the response." }),
    latency_ms: t.exposeInt("latencyMs", {
      description: "Time from receiving the request to its response, in whole milliseconds.",
    }),
    error_code: t.exposeString("errorCode", {
      nullable: true,
      description: "The error body's `code`, e.g. validation_failed; null on success.",
    }),
    client_ip: t.exposeString("clientIp", {
      nullable: true,
      description: "The address the request came from; null when unknown.",
    }),
    user_agent: t.exposeString("userAgent", {
      nullable: true,
      description: "The User-Agent header; null when none was sent.",
    }),
    model: t.exposeString("model", {
      nullable: true,
      description: "AI requests: the model asked for; null otherwise.",
    }),
    input_tokens: t.exposeInt("inputTokens", {
      nullable: true,
      description:
        "AI requests: the prompt tokens the provider reported; null otherwise or when it reported none.",
    }),
    output_tokens: t.exposeInt("outputTokens", {
      nullable: true,
      description:
        "AI requests: the completion tokens the provider reported; null otherwise or when it reported none.",
    }),
    tool: t.exposeString("tool", {
      nullable: true,
      description: "MCP requests (route /mcp): the tool a tools/call named; null otherwise.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the request arrived." }),
  }),
});

const RequestLogList = listType("RequestLog", RequestLog);

const RequestOutcome = builder.enumType("RequestOutcome", {
  description: "Whether a request succeeded (a status below 400) or failed (400 or more).",
  values: {
    succeeded: { description: "Answered with a status below 400 (2xx, 3xx)." },
    failed: { description: "Answered with a status of 400 or more (4xx, 5xx)." },
  } as const,
});

interface StatsShape {
  object: "request_log_stats";
  days: number;
  key_id: string | null;
  total: number;
  error_rate: number;
  latency_ms: { p50: number | null; p95: number | null };
  daily: {
    date: string;
    requests: number;
    errors: number;
    error_rate: number;
    p50_ms: number | null;
    p95_ms: number | null;
  }[];
  top_endpoints: { method: string; route: string; requests: number }[];
}

const Latency = builder.objectRef<StatsShape["latency_ms"]>("RequestLogLatency").implement({
  description: "Latency percentiles in milliseconds (null without requests).",
  fields: (t) => ({
    p50: t.exposeFloat("p50", {
      nullable: true,
      description: "The median latency in milliseconds (2 decimals).",
    }),
    p95: t.exposeFloat("p95", {
      nullable: true,
      description: "The 95th percentile latency in milliseconds (2 decimals).",
    }),
  }),
});

const Day = builder.objectRef<StatsShape["daily"][number]>("RequestLogDay").implement({
  description: "The requests of one UTC day.",
  fields: (t) => ({
    date: t.exposeString("date", { description: "YYYY-MM-DD (UTC)." }),
    requests: t.exposeInt("requests", { description: "Requests that arrived that day." }),
    errors: t.exposeInt("errors", { description: "Requests answered with a status of 400 or more." }),
    error_rate: t.exposeFloat("error_rate", {
      description:
        "Share of that day's requests with a status of 400 or more (0–1, 4 decimals); 0 without requests.",
    }),
    p50_ms: t.exposeFloat("p50_ms", {
      nullable: true,
      description: "That day's median latency in milliseconds (2 decimals); null without requests.",
    }),
    p95_ms: t.exposeFloat("p95_ms", {
      nullable: true,
      description: "That day's 95th percentile latency in milliseconds (2 decimals); null without requests.",
    }),
  }),
});

const Endpoint = builder.objectRef<StatsShape["top_endpoints"][number]>("RequestLogEndpoint").implement({
  description: "One route and how often it was requested.",
  fields: (t) => ({
    method: t.exposeString("method", { description: "The HTTP method, e.g. GET." }),
    route: t.exposeString("route", {
      description: "The route template, e.g. `/v1/leads/{id}` or `/graphql`.",
    }),
    requests: t.exposeInt("requests", { description: "Requests to this route in the period." }),
  }),
});

const RequestLogStats = builder.objectRef<StatsShape>("RequestLogStats").implement({
  description:
    "Volume, error rate, latency and top endpoints of the workspace's requests over the last `days` UTC days.",
  fields: (t) => ({
    object: objectKind(t, "request_log_stats"),
    days: t.exposeInt("days", { description: "How many UTC days the figures cover, today included." }),
    key_id: t.exposeString("key_id", {
      nullable: true,
      description: "The key the figures are limited to, if any.",
    }),
    total: t.exposeInt("total", { description: "Requests in the period." }),
    error_rate: t.exposeFloat("error_rate", {
      description: "Share of requests with a status of 400 or more (0–1, 4 decimals).",
    }),
    latency_ms: t.expose("latency_ms", {
      type: Latency,
      description: "Latency percentiles over the period.",
    }),
    daily: t.expose("daily", {
      type: [Day],
      description: "One entry per day, oldest first, including days without requests.",
    }),
    top_endpoints: t.expose("top_endpoints", {
      type: [Endpoint],
      description: "The 10 most requested routes (requests that matched no route are not counted here).",
    }),
  }),
});

const KEY_ID = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;
const REQUEST_ID = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;
const DAY_MS = 86_400_000;
export const STATS_DEFAULT_DAYS = 30;
export const STATS_MAX_DAYS = 90;
/**
 * What the GraphQL cost rule counts for requestLogStats per day it aggregates, in field values: the
 * statistics read every request log of those days, so a document may ask for at most 90 days in all
 * (90 × 10 000 of the 1 000 000 a document may cost, docs/api/limits.md#traffic-policies).
 */
export const STATS_COST_PER_DAY = 10_000;

function keyId(value: string | null | undefined): string | undefined {
  if (value == null) return undefined;
  if (!KEY_ID.test(value)) throw validationFailed("key_id", "key_id must be an API key id (key_…).");
  return value;
}

/**
 * A request's id is a ULID of its arrival, and created_at is that arrival too, so a time window is
 * also a range of ids, which the (workspace_id, id) index reads directly (the planner cannot know
 * that the two columns go together). The range is wider by a margin, in case the clock moved between
 * the two readings; created_at stays the exact condition.
 */
const ID_MARGIN_MS = 3_600_000;
const idAt = (ms: number) => `req_${encodeTime(Math.min(Math.max(ms, 0), TIME_MAX))}`;

const round = (value: number, places: number) => Math.round(value * 10 ** places) / 10 ** places;

async function stats(ctx: Context, days: number, key: string | undefined): Promise<StatsShape> {
  const workspaceId = ctx.credential.workspaceId;
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const since = new Date(today - (days - 1) * DAY_MS);
  const keyFilter = key ?? null;
  const firstId = idAt(since.getTime() - ID_MARGIN_MS);
  const [totals] = await ctx.db.$queryRaw<
    { total: number; errors: number; p50: number | null; p95: number | null }[]
  >`
    select count(*)::int as total,
           (count(*) filter (where status >= 400))::int as errors,
           percentile_cont(0.5) within group (order by latency_ms) as p50,
           percentile_cont(0.95) within group (order by latency_ms) as p95
    from request_logs
    where workspace_id = ${workspaceId} and created_at >= ${since} and id >= ${firstId}
      and (${keyFilter}::text is null or credential_id = ${keyFilter}::text)`;
  const perDay = await ctx.db.$queryRaw<
    { date: string; requests: number; errors: number; p50: number | null; p95: number | null }[]
  >`
    select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as date,
           count(*)::int as requests,
           (count(*) filter (where status >= 400))::int as errors,
           percentile_cont(0.5) within group (order by latency_ms) as p50,
           percentile_cont(0.95) within group (order by latency_ms) as p95
    from request_logs
    where workspace_id = ${workspaceId} and created_at >= ${since} and id >= ${firstId}
      and (${keyFilter}::text is null or credential_id = ${keyFilter}::text)
    group by 1`;
  const top = await ctx.db.$queryRaw<{ method: string; route: string; requests: number }[]>`
    select method, route, count(*)::int as requests
    from request_logs
    where workspace_id = ${workspaceId} and created_at >= ${since} and id >= ${firstId} and route is not null
      and (${keyFilter}::text is null or credential_id = ${keyFilter}::text)
    group by method, route
    order by requests desc, route, method
    limit 10`;
  const percentile = (value: number | null | undefined) => (value == null ? null : round(Number(value), 2));
  const rate = (errors: number, requests: number) => (requests === 0 ? 0 : round(errors / requests, 4));
  const byDate = new Map(perDay.map((row) => [row.date, row]));
  const daily = Array.from({ length: days }, (_, i) => {
    const date = new Date(since.getTime() + i * DAY_MS).toISOString().slice(0, 10);
    const row = byDate.get(date);
    const requests = Number(row?.requests ?? 0);
    const errors = Number(row?.errors ?? 0);
    return {
      date,
      requests,
      errors,
      error_rate: rate(errors, requests),
      p50_ms: percentile(row?.p50),
      p95_ms: percentile(row?.p95),
    };
  });
  const total = Number(totals?.total ?? 0);
  const errors = Number(totals?.errors ?? 0);
  return {
    object: "request_log_stats",
    days,
    key_id: key ?? null,
    total,
    error_rate: rate(errors, total),
    latency_ms: { p50: percentile(totals?.p50), p95: percentile(totals?.p95) },
    daily,
    top_endpoints: top.map((row) => ({
      method: row.method,
      route: row.route,
      requests: Number(row.requests),
    })),
  };
}

builder.queryFields((t) => ({
  requestLogs: t.field({
    type: RequestLogList,
    description: "The workspace's request logs, newest first. Needs logs.read.",
    extensions: rest("GET /request-logs", "List request logs"),
    authScopes: { scope: "logs.read" },
    args: {
      key_id: t.arg.string({ description: "Only requests made with this API key (`key_…`)." }),
      status: t.arg.int({ description: "Only requests answered with this HTTP status (100–599)." }),
      from: t.arg({ type: "DateTime", description: "Only requests that arrived at or after this time." }),
      to: t.arg({ type: "DateTime", description: "Only requests that arrived before this time." }),
      route: t.arg.string({
        description:
          "Only requests to this route template, exactly as logged (`/v1/leads/{id}`, `/graphql`).",
      }),
      outcome: t.arg({
        type: RequestOutcome,
        description: "Only requests that succeeded (status below 400) or failed (400 or more).",
      }),
      request_id: t.arg.string({
        description: "Only the request with this id (`req_…`, the X-Request-Id of its response).",
      }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) => {
      const key = keyId(args.key_id);
      if (args.status != null && (args.status < 100 || args.status > 599)) {
        throw validationFailed("status", "status must be an HTTP status code from 100 to 599.");
      }
      if (args.from && args.to && args.from.getTime() > args.to.getTime()) {
        throw validationFailed("to", "to must not be before from.");
      }
      // Each condition is its own AND entry, so that status and outcome, or the request id and the
      // cursor (both on id), narrow together instead of one replacing the other.
      const and: Prisma.RequestLogWhereInput[] = [];
      if (args.status != null) and.push({ status: args.status });
      if (args.outcome) and.push({ status: args.outcome === "failed" ? { gte: 400 } : { lt: 400 } });
      if (args.request_id != null) {
        if (!REQUEST_ID.test(args.request_id)) {
          throw validationFailed("request_id", "request_id must be a request id (req_…).");
        }
        and.push({ id: args.request_id });
      }
      if (args.from || args.to) {
        and.push(
          { createdAt: { ...(args.from && { gte: args.from }), ...(args.to && { lt: args.to }) } },
          {
            id: {
              ...(args.from && { gte: idAt(args.from.getTime() - ID_MARGIN_MS) }),
              ...(args.to && { lt: idAt(args.to.getTime() + ID_MARGIN_MS) }),
            },
          },
        );
      }
      return listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.requestLog.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(key && { credentialId: key }),
            ...(args.route != null && { route: args.route }),
            ...cursor,
            AND: and,
          },
          ...page,
        }),
      );
    },
  }),
  requestLogStats: t.field({
    type: RequestLogStats,
    description: `Daily volume, error rate, latency percentiles and top endpoints over the last \`days\` UTC days (today included). Needs logs.read.`,
    extensions: {
      ...rest("GET /request-logs/stats", "Request log statistics"),
      argumentCost: {
        arg: "days",
        each: STATS_COST_PER_DAY,
        default: STATS_DEFAULT_DAYS,
        most: STATS_MAX_DAYS,
      } satisfies ArgumentCost,
    },
    authScopes: { scope: "logs.read" },
    args: {
      days: t.arg.int({
        description: `How many UTC days, today included: 1–${STATS_MAX_DAYS}, default ${STATS_DEFAULT_DAYS}.`,
      }),
      key_id: t.arg.string({ description: "Only requests made with this API key (`key_…`)." }),
    },
    resolve: (_root, args, ctx) => {
      const days = args.days ?? STATS_DEFAULT_DAYS;
      if (!Number.isInteger(days) || days < 1 || days > STATS_MAX_DAYS) {
        throw validationFailed("days", `days must be an integer from 1 to ${STATS_MAX_DAYS}.`);
      }
      return stats(ctx, days, keyId(args.key_id));
    },
  }),
}));
