import { encodeTime, TIME_MAX } from "ulid";
import { builder } from "../builder.ts";
import { AuditActorType } from "../generated/prisma/enums.ts";
import { AUDIT_ACTIONS, AUDIT_RETENTION_DAYS, isAuditAction } from "../lib/audit.ts";
import { validationFailed } from "../lib/errors.ts";
import { listPage } from "../lib/list-page.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { AUDIT_SCOPE } from "../lib/scopes.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

/**
 * The audit log (docs/security.md "Audit log"): who changed access to the workspace, when and from
 * where, written by schema/lib/audit.ts in the transaction of each change. Read-only: no route or
 * mutation changes or deletes a record; retention removes them after 400 days. Needs audit.read,
 * which agent tokens and members never hold.
 */

const AuditActorTypeEnum = builder.enumType(AuditActorType, {
  name: "AuditActorType",
  description: "What kind of caller made the change.",
  values: {
    user: {
      description: "A person signed in to the dashboard or the claim page (`id` is `usr_…`, `email` theirs).",
    },
    api_key: { description: "An API key (`id` is `key_…`)." },
    agent: {
      description:
        "An agent with its access token or identity assertion (`id` is its registration's `areg_…`).",
    },
    system: {
      description:
        "Kontor: its operator's CLI (`id` null), or a trusted ID-JAG provider's revocation (`id` the provider entry's `tpr_…`).",
    },
  },
});

interface ActorShape {
  type: AuditActorType;
  id: string | null;
  email: string | null;
}

const AuditActor = builder.objectRef<ActorShape>("AuditActor").implement({
  description: "Who made the change.",
  fields: (t) => ({
    type: t.expose("type", { type: AuditActorTypeEnum, description: "user, api_key, agent or system." }),
    id: t.exposeString("id", {
      nullable: true,
      description:
        "The user (`usr_…`), API key (`key_…`), agent registration (`areg_…`) or trusted provider (`tpr_…`); null for the CLI and for a failed sign-in.",
    }),
    email: t.exposeString("email", {
      nullable: true,
      description:
        "The user's e-mail address when the actor is a user (for a failed sign-in, the one typed); null otherwise.",
    }),
  }),
});

const TARGET_TYPES = [...new Set(Object.values(AUDIT_ACTIONS).map((a) => a.target))];

const AuditTarget = builder.objectRef<{ type: string; id: string | null }>("AuditTarget").implement({
  description: "What the change was made to.",
  fields: (t) => ({
    type: t.exposeString("type", { description: `What kind of object: ${TARGET_TYPES.join(", ")}.` }),
    id: t.exposeString("id", { nullable: true, description: "Its id (`key_…`, `usr_…`, `invt_…`, …)." }),
  }),
});

export const AuditEvent = builder.prismaObject("AuditEvent", {
  description: `A change to who may do what in the workspace, kept ${AUDIT_RETENTION_DAYS} days. Needs audit.read.`,
  authScopes: { scope: AUDIT_SCOPE },
  fields: (t) => ({
    object: objectKind(t, "audit_event"),
    id: t.exposeID("id", { description: "`aud_…`." }),
    action: t.exposeString("action", {
      description: "What happened, e.g. api_key.revoked (docs/security.md lists every action).",
    }),
    actor: t.field({
      type: AuditActor,
      description: "Who did it.",
      resolve: (row) => ({ type: row.actorType, id: row.actorId, email: row.actorEmail }),
    }),
    target: t.field({
      type: AuditTarget,
      description: "What it was done to.",
      resolve: (row) => ({ type: row.targetType, id: row.targetId }),
    }),
    client_ip: t.exposeString("clientIp", {
      nullable: true,
      description: "The address the request came from; null for the CLI.",
    }),
    user_agent: t.exposeString("userAgent", {
      nullable: true,
      description:
        "The request's User-Agent (at most 512 characters); null when none was sent, and for the CLI.",
    }),
    request_id: t.exposeString("requestId", {
      nullable: true,
      description: "The X-Request-Id of the response that made the change; null for the CLI.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When it happened." }),
  }),
});

const AuditEventList = listType("AuditEvent", AuditEvent);

/**
 * A record's id is a ULID of its writing, and created_at is that moment too, so a time window is
 * also a range of ids, which the (workspace_id, id) index reads directly; the range is wider by a
 * margin in case the clock moved between the two readings, and created_at stays the exact condition.
 */
const ID_MARGIN_MS = 3_600_000;
const idAt = (ms: number) => `aud_${encodeTime(Math.min(Math.max(ms, 0), TIME_MAX))}`;

builder.queryFields((t) => ({
  auditEvents: t.field({
    type: AuditEventList,
    description: `The workspace's audit log, newest first, kept ${AUDIT_RETENTION_DAYS} days. Needs audit.read. API keys and owners' sessions only: agent tokens never hold it, and members get owner_required.`,
    extensions: rest("GET /audit-events", "List audit events", 200, ["owner_required"]),
    authScopes: { scope: AUDIT_SCOPE },
    args: {
      action: t.arg.string({ description: "Only records of this action, e.g. api_key.revoked." }),
      actor_id: t.arg.string({
        description:
          "Only changes made by this user, API key, agent registration or provider entry (`usr_…`, `key_…`, `areg_…`, `tpr_…`).",
      }),
      target_id: t.arg.string({ description: "Only changes made to this object (`key_…`, `usr_…`, …)." }),
      from: t.arg({ type: "DateTime", description: "Only changes made at or after this time." }),
      to: t.arg({ type: "DateTime", description: "Only changes made before this time." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) => {
      if (args.action != null && !isAuditAction(args.action)) {
        throw validationFailed(
          "action",
          `action is not an audit action: use one of ${Object.keys(AUDIT_ACTIONS).join(", ")}.`,
        );
      }
      if (args.from && args.to && args.from.getTime() > args.to.getTime())
        throw validationFailed("to", "to must not be before from.");
      return listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.auditEvent.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.action != null && { action: args.action }),
            ...(args.actor_id != null && { actorId: args.actor_id }),
            ...(args.target_id != null && { targetId: args.target_id }),
            ...((args.from || args.to) && {
              createdAt: { ...(args.from && { gte: args.from }), ...(args.to && { lt: args.to }) },
              AND: [
                {
                  id: {
                    ...(args.from && { gte: idAt(args.from.getTime() - ID_MARGIN_MS) }),
                    ...(args.to && { lt: idAt(args.to.getTime() + ID_MARGIN_MS) }),
                  },
                },
              ],
            }),
            ...cursor,
          },
          ...page,
        }),
      );
    },
  }),
  auditEvent: t.prismaField({
    type: AuditEvent,
    nullable: true,
    description: `One audit record by id; an unknown id, or one older than ${AUDIT_RETENTION_DAYS} days, is a not_found error. Needs audit.read.`,
    extensions: rest("GET /audit-events/:id", "Retrieve an audit event", 200, ["owner_required"]),
    authScopes: { scope: AUDIT_SCOPE },
    args: { id: t.arg.id({ required: true, description: "The record's id (`aud_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "audit_event",
        args.id,
        await ctx.db.auditEvent.findFirst({
          ...query,
          where: { id: args.id, workspaceId: ctx.credential.workspaceId },
        }),
      ),
  }),
}));
