import { builder } from "../builder.ts";
import { PLAN_LIMITS, type PlanLimits } from "../lib/plans.ts";
import { rest } from "../lib/rest.ts";
import { objectKind, PlanEnum } from "./shared.ts";

const WorkspaceLimits = builder.objectRef<PlanLimits>("WorkspaceLimits").implement({
  description: "What the workspace's plan allows.",
  fields: (t) => ({
    requests_per_minute: t.exposeInt("requests_per_minute", {
      description: "Requests each credential may make per minute; past it the answer is 429 rate_limit_exceeded.",
    }),
    ai_requests_per_minute: t.exposeInt("ai_requests_per_minute", { description: "Requests to the AI endpoints per minute." }),
    storage_bytes: t.exposeFloat("storage_bytes", { description: "The storage quota in bytes (1 GB = 10^9 bytes)." }),
    storage_label: t.exposeString("storage_label", { description: "The storage quota for people to read, e.g. \"1 GB\"." }),
    coding_tokens_5h: t.exposeInt("coding_tokens_5h", { description: "Coding-plan tokens per 5-hour window (/chat/completions, /responses with ai.coding)." }),
    coding_tokens_weekly: t.exposeInt("coding_tokens_weekly", { description: "Coding-plan tokens per week (from Monday 00:00 UTC)." }),
    coding_concurrency: t.exposeInt("coding_concurrency", { description: "Coding requests of the workspace running at once." }),
  }),
});

export const Workspace = builder.prismaObject("Workspace", {
  description: "The tenant every object belongs to. Any valid credential may read its own workspace.",
  fields: (t) => ({
    object: objectKind(t, "workspace"),
    id: t.exposeID("id", { description: "`ws_…`." }),
    name: t.exposeString("name", { description: "The workspace's display name." }),
    plan: t.expose("plan", { type: PlanEnum, description: "The subscription plan; `limits` follows from it." }),
    agent_auth_enabled: t.exposeBoolean("agentAuthEnabled", {
      description: "Whether AI agents may authenticate with agent tokens; off by default on the free plan, on for the others.",
    }),
    limits: t.field({ type: WorkspaceLimits, description: "What the plan allows.", resolve: (ws) => PLAN_LIMITS[ws.plan] }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the workspace was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the workspace was last changed." }),
  }),
});

builder.queryField("workspace", (t) =>
  t.prismaField({
    type: "Workspace",
    description: "The workspace of the calling credential. Any valid credential may read it; no scope is needed.",
    extensions: rest("GET /workspace", "Retrieve the workspace"),
    resolve: (query, _root, _args, ctx) =>
      ctx.db.workspace.findUniqueOrThrow({ ...query, where: { id: ctx.credential.workspaceId } }),
  }),
);
