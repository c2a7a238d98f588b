import type { Prisma } from "../../schema/generated/prisma/client.ts";
import { recordAudit } from "../../schema/lib/audit.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { hashInvitationToken, isInvitationToken } from "../../schema/lib/members.ts";
import { type AuditRequest, requestOrigin, userActor } from "../audit/record.ts";

export const invitationInvalid = (param: string) =>
  new ApiError(
    400,
    "invalid_request_error",
    "invitation_invalid",
    "The invitation is unknown, already used, revoked or expired, or it was made for another e-mail address.",
    {
      param,
    },
  );

/** What the invitee may see of a pending invitation, from its token alone (the sign-up form fills in the e-mail). */
export interface InvitationPreview {
  email: string;
  role: string;
  workspace: { id: string; name: string };
  expires_at: string;
}

/** The pending, unexpired invitation `token` names, else invitation_invalid (`param` names the field that carried it). */
export async function previewInvitation(
  db: Prisma.TransactionClient,
  token: string,
  param: string,
): Promise<InvitationPreview> {
  if (!isInvitationToken(token)) throw invitationInvalid(param);
  const invitation = await db.invitation.findUnique({
    where: { tokenHash: hashInvitationToken(token) },
    select: {
      email: true,
      role: true,
      acceptedAt: true,
      revokedAt: true,
      expiresAt: true,
      workspace: { select: { id: true, name: true } },
    },
  });
  if (!invitation || invitation.acceptedAt || invitation.revokedAt || invitation.expiresAt <= new Date())
    throw invitationInvalid(param);
  return {
    email: invitation.email,
    role: invitation.role,
    workspace: invitation.workspace,
    expires_at: invitation.expiresAt.toISOString(),
  };
}

/**
 * Accepts the invitation `token` names for `user`, in the caller's transaction: the user joins its
 * workspace with the invited role (a user already a member keeps their role), the invitation
 * is used up, and `invitation.accepted` is recorded in its workspace's audit log. Anything but a pending, unexpired invitation for the user's own e-mail is
 * invitation_invalid (`param` names the field that carried the token).
 */
export async function acceptInvitation(
  tx: Prisma.TransactionClient,
  token: string,
  user: { id: string; email: string },
  param: string,
  request: AuditRequest,
): Promise<{ workspaceId: string }> {
  if (!isInvitationToken(token)) throw invitationInvalid(param);
  const now = new Date();
  const invitation = await tx.invitation.findUnique({ where: { tokenHash: hashInvitationToken(token) } });
  if (
    !invitation ||
    invitation.acceptedAt ||
    invitation.revokedAt ||
    invitation.expiresAt <= now ||
    invitation.email !== user.email
  ) {
    throw invitationInvalid(param);
  }
  // Whoever marks it first has it: two accepts at once cannot both join.
  const { count } = await tx.invitation.updateMany({
    where: { id: invitation.id, acceptedAt: null, revokedAt: null },
    data: { acceptedAt: now, acceptedByUserId: user.id },
  });
  if (count !== 1) throw invitationInvalid(param);
  await tx.membership.upsert({
    where: { workspaceId_userId: { workspaceId: invitation.workspaceId, userId: user.id } },
    create: { workspaceId: invitation.workspaceId, userId: user.id, role: invitation.role },
    update: {},
  });
  await recordAudit(tx, requestOrigin(userActor(user), request), {
    action: "invitation.accepted",
    targetId: invitation.id,
    workspaceId: invitation.workspaceId,
  });
  return { workspaceId: invitation.workspaceId };
}
