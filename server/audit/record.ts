import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import { type AuditAction, type AuditActor, type AuditOrigin, recordAudit } from "../../schema/lib/audit.ts";
import { normalEmail } from "../accounts/workspaces.ts";
import type { RequestState } from "../http/request-state.ts";

type Tx = Prisma.TransactionClient;

/** The request an audit record is made in (its RequestState): its id and its client. */
export type AuditRequest = Pick<RequestState, "id" | "client">;

/**
 * Who acted, and the client and id of the request being served (none outside a request): the
 * origin of an audit record made outside GraphQL, by the account API or an agent endpoint.
 *
 * @example await recordAudit(tx, requestOrigin({ type: "agent", id: registrationId, email: null }, state), { action: "agent_registration.revoked", targetId: registrationId, workspaceId })
 */
export function requestOrigin(actor: AuditActor, request: AuditRequest | undefined): AuditOrigin {
  return { actor, client: request?.client ?? null, requestId: request?.id ?? null };
}

/**
 * A user acting as themselves.
 *
 * @example requestOrigin(userActor({ id: "usr_…", email: "ada@example.com" }), state)
 */
export const userActor = (user: { id: string; email: string }): AuditActor => ({
  type: "user",
  id: user.id,
  email: user.email,
});

/** The workspaces `userId` belongs to: what a user does to their account is recorded in each of them. */
async function workspacesOf(tx: Tx, userId: string): Promise<string[]> {
  const memberships = await tx.membership.findMany({ where: { userId }, select: { workspaceId: true } });
  return memberships.map((m) => m.workspaceId);
}

/**
 * Records, in `tx`, what a user did to their own account in the request being served (signed in or
 * out, changed their password): a session is no workspace's, so one record goes to every workspace
 * the user belongs to, and a user of none leaves no record.
 *
 * @example await createSession(db, userId, (tx) => recordAccountAudit(tx, user, "session.signed_in", state))
 */
export async function recordAccountAudit(
  tx: Tx,
  user: { id: string; email: string },
  action: AuditAction,
  request: AuditRequest | undefined,
): Promise<void> {
  await recordAudit(tx, requestOrigin(userActor(user), request), {
    action,
    targetId: user.id,
    workspaceId: await workspacesOf(tx, user.id),
  });
}

/**
 * Records a refused sign-in (a wrong password) for the e-mail typed: one `session.sign_in_failed`
 * per workspace of the user with that e-mail, with no actor id (nobody proved who they are). An
 * e-mail no user has leaves no record: it would belong to no workspace, and nobody could read it.
 * The membership lookup runs for either, so the answer takes about as long.
 *
 * @example if (result.outcome === "wrong") await recordSignInFailure(db, email, state)
 */
export async function recordSignInFailure(
  db: PrismaClient,
  email: string,
  request: AuditRequest | undefined,
): Promise<void> {
  const address = normalEmail(email);
  const memberships = await db.membership.findMany({
    where: { user: { email: address } },
    select: { workspaceId: true, userId: true },
  });
  const userId = memberships[0]?.userId;
  if (!userId) return;
  await recordAudit(db, requestOrigin({ type: "user", id: null, email: address }, request), {
    action: "session.sign_in_failed",
    targetId: userId,
    workspaceId: memberships.map((m) => m.workspaceId),
  });
}

/**
 * Records, in `tx`, what the user `userId` decided outside GraphQL (an agent let in or refused on
 * the claim page), with their e-mail as it is now. Nothing is recorded without a workspace: a
 * registration that belongs to none yet has no audit log to go to.
 *
 * @example await recordUserAudit(tx, userId, { action: "agent_registration.approved", targetId: registration.id, workspaceId }, state)
 */
export async function recordUserAudit(
  tx: Tx,
  userId: string,
  entry: { action: AuditAction; targetId: string; workspaceId: string | null },
  request: AuditRequest | undefined,
): Promise<void> {
  if (!entry.workspaceId) return;
  const user = await tx.user.findUnique({ where: { id: userId }, select: { email: true } });
  await recordAudit(tx, requestOrigin({ type: "user", id: userId, email: user?.email ?? null }, request), {
    action: entry.action,
    targetId: entry.targetId,
    workspaceId: entry.workspaceId,
  });
}

/**
 * Records, in `tx`, the registrations a trusted provider's security event revoked: the system acted,
 * on the word of each workspace's own entry for `issuer` (the actor id is that entry's `tpr_…`).
 *
 * @example await recordProviderRevocations(tx, issuer, [{ id: "areg_…", workspaceId: "ws_…" }], state)
 */
export async function recordProviderRevocations(
  tx: Tx,
  issuer: string,
  registrations: { id: string; workspaceId: string | null }[],
  request: AuditRequest | undefined,
): Promise<void> {
  const workspaceIds = [...new Set(registrations.flatMap((r) => (r.workspaceId ? [r.workspaceId] : [])))];
  if (workspaceIds.length === 0) return;
  const entries = await tx.trustedProvider.findMany({
    where: { issuer, workspaceId: { in: workspaceIds } },
    select: { id: true, workspaceId: true },
  });
  const entryOf = new Map(entries.map((entry) => [entry.workspaceId, entry.id]));
  for (const registration of registrations) {
    if (!registration.workspaceId) continue;
    const origin = requestOrigin(
      { type: "system", id: entryOf.get(registration.workspaceId) ?? null, email: null },
      request,
    );
    await recordAudit(tx, origin, {
      action: "agent_registration.revoked",
      targetId: registration.id,
      workspaceId: registration.workspaceId,
    });
  }
}
