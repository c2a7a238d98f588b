import type { Prisma } from "../../schema/generated/prisma/client.ts";
import { recordAudit } from "../../schema/lib/audit.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { hashInvitationToken, isInvitationToken } from "../../schema/lib/members.ts";
import { requestOrigin, userActor } from "../audit/record.ts";

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
  await recordAudit(tx, requestOrigin(userActor(user)), {
    action: "invitation.accepted",
    targetId: invitation.id,
    workspaceId: invitation.workspaceId,
  });
  return { workspaceId: invitation.workspaceId };
}
