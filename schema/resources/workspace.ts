import { builder } from "../builder.ts";
import { PLAN_LIMITS, type PlanLimits } from "../lib/plans.ts";
import { rest } from "../lib/rest.ts";
import { PlanEnum } from "./shared.ts";

const WorkspaceLimits = builder.objectRef<PlanLimits>("WorkspaceLimits").implement({
  description: "What the workspace's plan allows.",
  fields: (t) => ({
    requests_per_minute: t.exposeInt("requests_per_minute"),
    ai_requests_per_minute: t.exposeInt("ai_requests_per_minute"),
    storage_bytes: t.exposeFloat("storage_bytes"),
    storage_label: t.exposeString("storage_label"),
  }),
});

export const Workspace = builder.prismaObject("Workspace", {
  description: "The tenant every object belongs to. Any valid credential may read its own workspace.",
  fields: (t) => ({
    object: t.string({ resolve: () => "workspace" }),
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    plan: t.expose("plan", { type: PlanEnum }),
    agent_auth_enabled: t.exposeBoolean("agentAuthEnabled"),
    limits: t.field({ type: WorkspaceLimits, resolve: (ws) => PLAN_LIMITS[ws.plan] }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

builder.queryField("workspace", (t) =>
  t.prismaField({
    type: "Workspace",
    description: "The caller's workspace.",
    extensions: rest("GET /workspace", "Retrieve the workspace"),
    resolve: (query, _root, _args, ctx) =>
      ctx.db.workspace.findUniqueOrThrow({ ...query, where: { id: ctx.credential.workspaceId } }),
  }),
);
