import { builder } from "../builder.ts";
import { PLAN_LIMITS, type PlanLimits } from "../lib/plans.ts";
import { rest } from "../lib/rest.ts";
import { objectKind, PlanEnum } from "./shared.ts";

const WorkspaceLimits = builder.objectRef<PlanLimits>("WorkspaceLimits").implement({
  description: "What the workspace's plan allows.",
  fields: (t) => ({
    requests_per_minute: t.exposeInt("requests_per_minute", {
      description:
        "Requests each credential may make per minute; past it the answer is 429 rate_limit_exceeded.",
    }),
    ai_requests_per_minute: t.exposeInt("ai_requests_per_minute", {
      description: "Requests to the AI endpoints per minute.",
    }),
    storage_bytes: t.exposeFloat("storage_bytes", {
      description: "The storage quota in bytes (1 GB = 10^9 bytes).",
    }),
    storage_label: t.exposeString("storage_label", {
      description: 'The storage quota for people to read, e.g. "1 GB".',
    }),
    coding_tokens_5h: t.exposeInt("coding_tokens_5h", {
      description: "Coding-plan tokens per 5-hour window (/chat/completions, /responses with ai.coding).",
    }),
    coding_tokens_weekly: t.exposeInt("coding_tokens_weekly", {
      description: "Coding-plan tokens per week (from Monday 00:00 UTC).",
    }),
    coding_concurrency: t.exposeInt("coding_concurrency", {
      description: "Coding requests of the workspace running at once.",
    }),
    data_quota_bytes: t.field({
      type: "ByteCount",
      description:
        "The data quota: bytes of stored records (rows, events, request logs, idempotency records); past it writes get 403 data_quota_exceeded. A sandbox has a tenth of free's.",
      resolve: (limits) => limits.data_quota_bytes,
    }),
    idempotency_bytes: t.field({
      type: "ByteCount",
      description:
        "What the workspace's idempotency records hold at most; past it the oldest are dropped first.",
      resolve: (limits) => limits.idempotency_bytes,
    }),
    webhook_endpoints: t.exposeInt("webhook_endpoints", {
      description: "Webhook endpoints; one more is refused with plan_limit_reached.",
    }),
    concurrent_uploads: t.exposeInt("concurrent_uploads", {
      description: "Uploads of the workspace running at once; one more gets 429 concurrency_limit_exceeded.",
    }),
    ai_tokens_daily: t.exposeInt("ai_tokens_daily", {
      description: "General AI tokens (/responses with ai.responses) per UTC day.",
    }),
  }),
});

interface UsageFigures {
  dataBytes: number;
  idempotencyBytes: number;
  dataQuotaBytes: number;
  storageBytes: number;
  webhookEndpoints: number;
}

const WorkspaceUsage = builder.objectRef<UsageFigures>("WorkspaceUsage").implement({
  description: "What the workspace uses of its limits now.",
  fields: (t) => ({
    data_bytes: t.field({
      type: "ByteCount",
      description:
        "Bytes of its stored records as the database keeps them, its idempotency records included: what the data quota counts.",
      resolve: (u) => u.dataBytes,
    }),
    idempotency_bytes: t.field({
      type: "ByteCount",
      description: "Of data_bytes, what its idempotency records hold.",
      resolve: (u) => u.idempotencyBytes,
    }),
    data_quota_bytes: t.field({
      type: "ByteCount",
      description: "Its data quota (limits.data_quota_bytes).",
      resolve: (u) => u.dataQuotaBytes,
    }),
    storage_bytes: t.field({
      type: "ByteCount",
      description: "Bytes of its stored objects (GET /storage).",
      resolve: (u) => u.storageBytes,
    }),
    webhook_endpoints: t.exposeInt("webhookEndpoints", { description: "Its webhook endpoints." }),
  }),
});

export const Workspace = builder.prismaObject("Workspace", {
  description: "The tenant every object belongs to. Any valid credential may read its own workspace.",
  fields: (t) => ({
    object: objectKind(t, "workspace"),
    id: t.exposeID("id", { description: "`ws_…`." }),
    name: t.exposeString("name", { description: "The workspace's display name." }),
    plan: t.expose("plan", {
      type: PlanEnum,
      description: "The subscription plan; `limits` follows from it.",
    }),
    agent_auth_enabled: t.exposeBoolean("agentAuthEnabled", {
      description:
        "Whether AI agents may authenticate with agent tokens; off by default on the free plan, on for the others.",
    }),
    limits: t.field({
      type: WorkspaceLimits,
      description: "What the plan allows.",
      resolve: (ws, _args, ctx) => ({
        ...PLAN_LIMITS[ws.plan],
        data_quota_bytes: ctx.dataQuota.quotaBytes(ws.plan, ws.sandboxExpiresAt !== null),
      }),
    }),
    usage: t.field({
      type: WorkspaceUsage,
      description: "What the workspace uses of its limits now.",
      select: { storageBytes: true, _count: { select: { webhookEndpoints: true } } },
      resolve: async (ws, _args, ctx) => {
        const data = await ctx.dataQuota.usage(ws.id);
        return {
          dataBytes: data.bytes,
          idempotencyBytes: data.idempotencyBytes,
          dataQuotaBytes: data.quotaBytes,
          storageBytes: Number(ws.storageBytes),
          webhookEndpoints: ws._count.webhookEndpoints,
        };
      },
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the workspace was created." }),
    updated_at: t.expose("updatedAt", {
      type: "DateTime",
      description: "When the workspace was last changed.",
    }),
  }),
});

builder.queryField("workspace", (t) =>
  t.prismaField({
    type: "Workspace",
    description:
      "The workspace of the calling credential. Any valid credential may read it; no scope is needed.",
    extensions: rest("GET /workspace", "Retrieve the workspace"),
    resolve: (query, _root, _args, ctx) =>
      ctx.db.workspace.findUniqueOrThrow({ ...query, where: { id: ctx.credential.workspaceId } }),
  }),
);
