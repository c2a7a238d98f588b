import type { Context, RequestClient } from "../context.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import type { AuditActorType } from "../generated/prisma/enums.ts";
import { newId } from "./ids.ts";

/** How long an audit record is kept; the sweep (server/audit/sweep.ts) removes older ones. */
export const AUDIT_RETENTION_DAYS = 400;

/**
 * Every action the audit log records: what the target is, and what happened (docs/security.md
 * "Audit log" lists the same). Each is written in the transaction of the change it records.
 */
export const AUDIT_ACTIONS = {
  "session.signed_in": {
    target: "user",
    description: "A user signed in (dashboard, sign-up or claim page).",
  },
  "session.sign_in_failed": { target: "user", description: "A wrong password for a known user's e-mail." },
  "session.signed_out": { target: "user", description: "A user signed out." },
  "user.password_changed": {
    target: "user",
    description: "A user changed their password (their other sessions ended).",
  },
  "workspace.created": {
    target: "workspace",
    description: "The workspace was made (sign-up or `kontor workspace create`).",
  },
  "api_key.created": {
    target: "api_key",
    description: "An API key was made (dashboard, rotation or `kontor keys create`).",
  },
  "api_key.rotated": {
    target: "api_key",
    description: "An API key was replaced by a new one (recorded with api_key.created).",
  },
  "api_key.revoked": {
    target: "api_key",
    description: "An API key was revoked (dashboard or `kontor keys revoke`).",
  },
  "member.invited": { target: "invitation", description: "An e-mail address was invited." },
  "invitation.revoked": { target: "invitation", description: "A pending invitation was revoked." },
  "invitation.accepted": { target: "invitation", description: "A user accepted an invitation and joined." },
  "member.role_changed": { target: "user", description: "A member's role changed." },
  "member.removed": { target: "user", description: "A member was removed." },
  "agent_access.enabled": { target: "workspace", description: "Agent access was turned on." },
  "agent_access.disabled": { target: "workspace", description: "Agent access was turned off." },
  "trusted_provider.created": { target: "trusted_provider", description: "An ID-JAG provider was trusted." },
  "trusted_provider.deleted": {
    target: "trusted_provider",
    description: "An ID-JAG provider is trusted no more.",
  },
  "agent_registration.approved": {
    target: "agent_registration",
    description: "A user let an agent in on the claim page.",
  },
  "agent_registration.denied": {
    target: "agent_registration",
    description: "A user refused an agent on the claim page.",
  },
  "agent_registration.revoked": {
    target: "agent_registration",
    description: "An agent was revoked (by an owner, by itself, or by its provider).",
  },
  "webhook_endpoint.created": { target: "webhook_endpoint", description: "A webhook endpoint was made." },
  "webhook_endpoint.deleted": { target: "webhook_endpoint", description: "A webhook endpoint was deleted." },
  "webhook_endpoint.secret_rotated": {
    target: "webhook_endpoint",
    description: "A webhook endpoint's signing secret was replaced.",
  },
} as const satisfies Record<string, { target: string; description: string }>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;

/**
 * Whether `value` names an action of the catalog (the list filter refuses any other).
 *
 * @example isAuditAction("api_key.revoked") // true; isAuditAction("api_key.exploded") is false
 */
export const isAuditAction = (value: string): value is AuditAction => Object.hasOwn(AUDIT_ACTIONS, value);

/** Who did it: a user (with their e-mail), an API key, an agent registration, or Kontor itself. */
export interface AuditActor {
  type: AuditActorType;
  /** `usr_…`, `key_…`, `areg_…`, or a trusted provider's `tpr_…` for the system acting on its word; null for the CLI and for a failed sign-in. */
  id: string | null;
  email: string | null;
}

/** Kontor itself, or its operator through the CLI. */
export const SYSTEM_ACTOR: AuditActor = { type: "system", id: null, email: null };

/** Who acted and from where, where there is no GraphQL Context: the account API, the agent endpoints, the CLI. */
export interface AuditOrigin {
  actor: AuditActor;
  /** The request's client; null outside a request. */
  client: RequestClient | null;
  /** The X-Request-Id of the response that makes the change; null outside a request. */
  requestId: string | null;
}

/** What the CLI records: the system, and no request. */
export const CLI_ORIGIN: AuditOrigin = { actor: SYSTEM_ACTOR, client: null, requestId: null };

export interface AuditEntry {
  action: AuditAction;
  /** The id of what was acted on (its type is the action's, AUDIT_ACTIONS). */
  targetId: string | null;
  /** The workspaces the record belongs to (one record each). Default with a Context: its credential's workspace. */
  workspaceId?: string | readonly string[];
}

type Tx = Prisma.TransactionClient;

const isOrigin = (by: Context | AuditOrigin): by is AuditOrigin => "actor" in by;

/** The actor and request of a GraphQL or REST request: its credential (a session's user with their e-mail), client and id. */
async function originOf(tx: Tx, ctx: Context): Promise<AuditOrigin> {
  const credential = ctx.credential;
  let actor: AuditActor;
  if (credential.kind === "session") {
    const user = await tx.user.findUnique({ where: { id: credential.userId }, select: { email: true } });
    actor = { type: "user", id: credential.userId, email: user?.email ?? null };
  } else {
    actor = { type: credential.kind, id: credential.id, email: null };
  }
  return { actor, client: ctx.client ?? null, requestId: ctx.requestId };
}

/**
 * Writes the audit record of a change in the caller's transaction `tx`, so the record commits or
 * rolls back with the change. `by` is the request's Context (the actor is its credential) or an
 * AuditOrigin. Records are never updated; retention deletes them after AUDIT_RETENTION_DAYS.
 *
 * @example
 * await ctx.db.$transaction(async (tx) => {
 *   const key = await tx.apiKey.update({ where: { id }, data: { revokedAt: new Date() } });
 *   await recordAudit(tx, ctx, { action: "api_key.revoked", targetId: key.id });
 * });
 */
export async function recordAudit(tx: Tx, by: Context | AuditOrigin, entry: AuditEntry): Promise<void> {
  const workspaceIds = [
    ...new Set(([] as string[]).concat(entry.workspaceId ?? (isOrigin(by) ? [] : by.credential.workspaceId))),
  ];
  if (workspaceIds.length === 0) return;
  const origin = isOrigin(by) ? by : await originOf(tx, by);
  const createdAt = new Date();
  await tx.auditEvent.createMany({
    data: workspaceIds.map((workspaceId) => ({
      id: newId("auditEvent"),
      workspaceId,
      action: entry.action,
      actorType: origin.actor.type,
      actorId: origin.actor.id,
      actorEmail: origin.actor.type === "user" ? origin.actor.email : null,
      targetType: AUDIT_ACTIONS[entry.action].target,
      targetId: entry.targetId,
      clientIp: origin.client?.ip ?? null,
      userAgent: origin.client?.userAgent ?? null,
      requestId: origin.requestId,
      createdAt,
    })),
  });
}
