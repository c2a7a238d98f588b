import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import type { Tx } from "../events.ts";
import type { Invitation as InvitationRow } from "../generated/prisma/client.ts";
import { MembershipRole } from "../generated/prisma/enums.ts";
import { recordAudit } from "../lib/audit.ts";
import { ApiError, invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { textProblem } from "../lib/limits.ts";
import {
  hashInvitationToken,
  INVITATION_PAGE_PATH,
  INVITATION_TTL_SECONDS,
  MAX_MEMBERS,
  newInvitationToken,
} from "../lib/members.ts";
import { found } from "../lib/records.ts";
import { objectKind, PlanEnum } from "./shared.ts";
import { Workspace } from "./workspace.ts";

/**
 * The dashboard's account objects (docs/dashboard.md): who is signed in, the workspaces they
 * belong to, the members and invitations of one. GraphQL only, and only for a signed-in user.
 */

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const MAX_EMAIL = 254;
/** Workspaces Viewer.workspaces lists (oldest membership first). */
const MAX_LISTED_WORKSPACES = 100;

const SESSION_ONLY =
  "no scope is needed, but only a user signed in to the dashboard may ask (an API key or agent token gets 403 session_required)";
const OWNER_ONLY = `${SESSION_ONLY}; a member gets 403 owner_required`;

export const MembershipRoleEnum = builder.enumType(MembershipRole, {
  name: "MembershipRole",
  description: "What a user may do in a workspace.",
  values: {
    owner: { description: "Everything: every scope, and managing keys, members and invitations." },
    member: {
      description:
        "The business: every `.read` scope but audit.read, and writing clients, leads, invoices and quotes with payments, inventory, projects and tasks, and stored files; not keys, webhooks, agents, members or settings.",
    },
  },
});

interface UserShape {
  id: string;
  email: string;
  createdAt: Date;
}

const User = builder.objectRef<UserShape>("User").implement({
  description: "A person who signs in to the dashboard.",
  fields: (t) => ({
    id: t.exposeID("id", { description: "`usr_…`." }),
    email: t.exposeString("email", { description: "The e-mail address they sign in with (lower case)." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the account was made." }),
  }),
});

interface WorkspaceSummaryShape {
  id: string;
  name: string;
  plan: "free" | "plus" | "pro" | "max";
  role: MembershipRole;
}

const WorkspaceSummary = builder.objectRef<WorkspaceSummaryShape>("WorkspaceSummary").implement({
  description: "A workspace the signed-in user belongs to, and their role in it.",
  fields: (t) => ({
    id: t.exposeID("id", {
      description: "`ws_…`: send it as the Kontor-Workspace header to act in this workspace.",
    }),
    name: t.exposeString("name", { description: "The workspace's display name." }),
    plan: t.expose("plan", { type: PlanEnum, description: "The workspace's plan." }),
    role: t.expose("role", { type: MembershipRoleEnum, description: "The user's role in it." }),
  }),
});

interface ViewerShape {
  userId: string;
  role: MembershipRole;
  workspaceId: string;
}

const Viewer = builder.objectRef<ViewerShape>("Viewer").implement({
  description:
    "The signed-in user, the workspace the request acts in (Kontor-Workspace, else their oldest membership) and their other workspaces.",
  fields: (t) => ({
    user: t.field({
      type: User,
      description: "Who is signed in.",
      resolve: (viewer, _args, ctx) =>
        ctx.db.user.findUniqueOrThrow({
          where: { id: viewer.userId },
          select: { id: true, email: true, createdAt: true },
        }),
    }),
    role: t.expose("role", {
      type: MembershipRoleEnum,
      description: "Their role in the workspace the request acts in.",
    }),
    workspace: t.field({
      type: Workspace,
      description: "The workspace the request acts in.",
      resolve: (viewer, _args, ctx) =>
        ctx.db.workspace.findUniqueOrThrow({ where: { id: viewer.workspaceId } }),
    }),
    workspaces: t.field({
      type: [WorkspaceSummary],
      description: `Every workspace they belong to, oldest membership first (at most ${MAX_LISTED_WORKSPACES}).`,
      resolve: async (viewer, _args, ctx) => {
        const memberships = await ctx.db.membership.findMany({
          where: { userId: viewer.userId },
          orderBy: [{ createdAt: "asc" }, { workspaceId: "asc" }],
          take: MAX_LISTED_WORKSPACES,
          select: { role: true, workspace: { select: { id: true, name: true, plan: true } } },
        });
        return memberships.map((m) => ({ ...m.workspace, role: m.role }));
      },
    }),
  }),
});

interface MemberShape {
  userId: string;
  email: string;
  role: MembershipRole;
  createdAt: Date;
}

const Member = builder.objectRef<MemberShape>("Member").implement({
  description: "A user who belongs to the workspace.",
  fields: (t) => ({
    user_id: t.exposeID("userId", { description: "The user's id (`usr_…`)." }),
    email: t.exposeString("email", { description: "The user's e-mail address." }),
    role: t.expose("role", { type: MembershipRoleEnum, description: "owner or member." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When they joined the workspace." }),
  }),
});

export const Invitation = builder.prismaObject("Invitation", {
  description:
    "An e-mail address invited into the workspace; whoever signs in (or up) with it may accept it within 7 days.",
  fields: (t) => ({
    object: objectKind(t, "invitation"),
    id: t.exposeID("id", { description: "`invt_…`." }),
    email: t.exposeString("email", {
      description: "The e-mail address invited (lower case): only a user with it may accept.",
    }),
    role: t.expose("role", { type: MembershipRoleEnum, description: "The role the invited user gets." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When it was made." }),
    expires_at: t.expose("expiresAt", {
      type: "DateTime",
      description: "When it can no longer be accepted (7 days after it was made).",
    }),
  }),
});

interface CreatedInvitationShape {
  invitation: InvitationRow;
  accept_url: string;
}

const CreatedInvitation = builder.objectRef<CreatedInvitationShape>("CreatedInvitation").implement({
  description: "A new invitation and its link: shown this once (only its hash is kept).",
  fields: (t) => ({
    invitation: t.expose("invitation", { type: Invitation, description: "The invitation." }),
    accept_url: t.exposeString("accept_url", {
      description:
        "The link to give the invited person: `{host_url}/dashboard/invitations#token=inv_…`. Shown once; a new invitation replaces it.",
    }),
  }),
});

const InviteMemberInput = builder.inputType("InviteMemberInput", {
  description: "Who to invite, and as what.",
  fields: (t) => ({
    email: t.string({
      required: true,
      description: `Their e-mail address (at most ${MAX_EMAIL} characters).`,
    }),
    role: t.field({
      type: MembershipRoleEnum,
      required: true,
      description: "The role they get on accepting.",
    }),
  }),
});

const session = (ctx: Context) => {
  const credential = ctx.credential;
  if (credential.kind !== "session") throw new Error("A session-only field ran without a session.");
  return credential;
};

const pendingWhere = (workspaceId: string, now: Date) => ({
  workspaceId,
  acceptedAt: null,
  revokedAt: null,
  expiresAt: { gt: now },
});

/** Serializes the member changes of one workspace, so two at once cannot both remove the last owner. */
const lockWorkspace = (tx: Tx, workspaceId: string) =>
  tx.$queryRaw`select id from workspaces where id = ${workspaceId} for update`;

async function memberOf(tx: Tx, workspaceId: string, userId: string): Promise<MemberShape> {
  const row = found(
    "member",
    userId,
    await tx.membership.findUnique({
      where: { workspaceId_userId: { workspaceId, userId } },
      select: { userId: true, role: true, createdAt: true, user: { select: { email: true } } },
    }),
  );
  return { userId: row.userId, email: row.user.email, role: row.role, createdAt: row.createdAt };
}

/** Refuses a change that would leave the workspace without an owner. */
async function keepAnOwner(tx: Tx, workspaceId: string, member: MemberShape): Promise<void> {
  if (member.role !== "owner") return;
  const owners = await tx.membership.count({ where: { workspaceId, role: "owner" } });
  if (owners <= 1)
    throw invalidState("The workspace needs at least one owner: make another member an owner first.");
}

function invitedEmail(value: string): string {
  const email = value.trim().toLowerCase();
  if (textProblem(email, MAX_EMAIL) !== null || !EMAIL.test(email)) {
    throw validationFailed(
      "input.email",
      `input.email must be an e-mail address of at most ${MAX_EMAIL} characters.`,
    );
  }
  return email;
}

builder.queryFields((t) => ({
  viewer: t.field({
    type: Viewer,
    description: `The signed-in user and the workspace the request acts in; ${SESSION_ONLY}.`,
    authScopes: { session: true },
    resolve: (_root, _args, ctx) => {
      const credential = session(ctx);
      return { userId: credential.userId, role: credential.role, workspaceId: credential.workspaceId };
    },
  }),
  members: t.field({
    type: [Member],
    description: `The workspace's members, earliest first (at most ${MAX_MEMBERS}); ${SESSION_ONLY}.`,
    authScopes: { session: true },
    resolve: async (_root, _args, ctx) => {
      const rows = await ctx.db.membership.findMany({
        where: { workspaceId: ctx.credential.workspaceId },
        orderBy: [{ createdAt: "asc" }, { userId: "asc" }],
        take: MAX_MEMBERS,
        select: { userId: true, role: true, createdAt: true, user: { select: { email: true } } },
      });
      return rows.map((row) => ({
        userId: row.userId,
        email: row.user.email,
        role: row.role,
        createdAt: row.createdAt,
      }));
    },
  }),
  invitations: t.field({
    type: [Invitation],
    description: `The workspace's pending invitations (not accepted, revoked or expired), newest first; ${OWNER_ONLY}.`,
    authScopes: { owner: true },
    resolve: (_root, _args, ctx) =>
      ctx.db.invitation.findMany({
        where: pendingWhere(ctx.credential.workspaceId, new Date()),
        orderBy: { id: "desc" },
        take: MAX_MEMBERS,
      }),
  }),
}));

builder.mutationFields((t) => ({
  inviteMember: t.field({
    type: CreatedInvitation,
    description:
      `Invites an e-mail address into the workspace for 7 days; a pending invitation of the same address is replaced. 409 already_member when it belongs to a member; ` +
      `a workspace has at most ${MAX_MEMBERS} members and pending invitations together. ${OWNER_ONLY}.`,
    authScopes: { owner: true },
    args: {
      input: t.arg({ type: InviteMemberInput, required: true, description: "Who to invite, and as what." }),
    },
    resolve: async (_root, { input }, ctx) => {
      const owner = session(ctx);
      const email = invitedEmail(input.email);
      const token = newInvitationToken();
      const now = new Date();
      const invitation = await ctx.db.$transaction(async (tx) => {
        await lockWorkspace(tx, owner.workspaceId);
        const member = await tx.membership.findFirst({
          where: { workspaceId: owner.workspaceId, user: { email } },
          select: { userId: true },
        });
        if (member)
          throw new ApiError(
            409,
            "invalid_request_error",
            "already_member",
            `${email} is already a member of the workspace.`,
            { param: "input.email" },
          );
        await tx.invitation.updateMany({
          where: { ...pendingWhere(owner.workspaceId, now), email },
          data: { revokedAt: now },
        });
        const [members, pending] = await Promise.all([
          tx.membership.count({ where: { workspaceId: owner.workspaceId } }),
          tx.invitation.count({ where: pendingWhere(owner.workspaceId, now) }),
        ]);
        if (members + pending >= MAX_MEMBERS) {
          throw invalidState(
            `A workspace has at most ${MAX_MEMBERS} members and pending invitations together: revoke an invitation or remove a member first.`,
          );
        }
        const created = await tx.invitation.create({
          data: {
            id: newId("invitation"),
            workspaceId: owner.workspaceId,
            email,
            role: input.role,
            tokenHash: hashInvitationToken(token),
            invitedByUserId: owner.userId,
            createdAt: now,
            expiresAt: new Date(now.getTime() + INVITATION_TTL_SECONDS * 1000),
          },
        });
        await recordAudit(tx, ctx, { action: "member.invited", targetId: created.id });
        return created;
      });
      return { invitation, accept_url: `${ctx.hostUrl}${INVITATION_PAGE_PATH}#token=${token}` };
    },
  }),
  revokeInvitation: t.field({
    type: Invitation,
    description: `Revokes a pending invitation: its link no longer works. Revoking a revoked one changes nothing; an accepted one is invalid_state. ${OWNER_ONLY}.`,
    authScopes: { owner: true },
    args: { id: t.arg.id({ required: true, description: "The invitation's id (`invt_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      return ctx.db.$transaction(async (tx) => {
        // One statement decides, like accepting (server/accounts/invitations.ts): of a revoke and an accept, or
        // of two revokes, at once, exactly one changes the invitation; the others read what it left.
        const { count } = await tx.invitation.updateMany({
          where: { id, workspaceId, acceptedAt: null, revokedAt: null },
          data: { revokedAt: new Date() },
        });
        const invitation = found(
          "invitation",
          id,
          await tx.invitation.findFirst({ where: { id, workspaceId } }),
        );
        if (count === 0 && invitation.acceptedAt)
          throw invalidState("This invitation was accepted already: remove the member instead.");
        if (count > 0) await recordAudit(tx, ctx, { action: "invitation.revoked", targetId: invitation.id });
        return invitation;
      });
    },
  }),
  updateMember: t.field({
    type: Member,
    description: `Changes a member's role. The last owner cannot become a member (invalid_state). ${OWNER_ONLY}.`,
    authScopes: { owner: true },
    args: {
      user_id: t.arg.id({ required: true, description: "The member's user id (`usr_…`)." }),
      role: t.arg({ type: MembershipRoleEnum, required: true, description: "The new role." }),
    },
    resolve: (_root, args, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      const userId = String(args.user_id);
      return ctx.db.$transaction(async (tx) => {
        await lockWorkspace(tx, workspaceId);
        const member = await memberOf(tx, workspaceId, userId);
        if (member.role === args.role) return member;
        if (args.role !== "owner") await keepAnOwner(tx, workspaceId, member);
        await tx.membership.update({
          where: { workspaceId_userId: { workspaceId, userId } },
          data: { role: args.role },
        });
        await recordAudit(tx, ctx, { action: "member.role_changed", targetId: userId });
        return { ...member, role: args.role };
      });
    },
  }),
  removeMember: t.field({
    type: Member,
    description: `Removes a member (an owner may remove themselves) and answers the membership as it was. The last owner cannot be removed (invalid_state). ${OWNER_ONLY}.`,
    authScopes: { owner: true },
    args: { user_id: t.arg.id({ required: true, description: "The member's user id (`usr_…`)." }) },
    resolve: (_root, args, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      const userId = String(args.user_id);
      return ctx.db.$transaction(async (tx) => {
        await lockWorkspace(tx, workspaceId);
        const member = await memberOf(tx, workspaceId, userId);
        await keepAnOwner(tx, workspaceId, member);
        await tx.membership.delete({ where: { workspaceId_userId: { workspaceId, userId } } });
        await recordAudit(tx, ctx, { action: "member.removed", targetId: userId });
        return member;
      });
    },
  }),
}));
