import { randomBytes } from "node:crypto";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { textProblem } from "../../schema/lib/limits.ts";
import { agentAuthDefault, type PlanName } from "../../schema/lib/plans.ts";
import { hashPassword } from "../auth/passwords.ts";

export interface NewWorkspace {
  name: string;
  plan: PlanName;
  ownerEmail: string;
  /** Generated (and returned) when absent; an existing user keeps their password (null is returned). */
  ownerPassword?: string | undefined;
}

export interface CreatedWorkspace {
  workspace_id: string;
  owner_id: string;
  owner_password: string | null;
}

export class WorkspaceInputError extends Error {}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const MIN_PASSWORD = 12;
export const MAX_PASSWORD = 1024;
/** The longest e-mail address a user may have (RFC 5321's path limit less its brackets). */
export const MAX_EMAIL = 254;
export const MAX_WORKSPACE_NAME = 100;

/** How Kontor stores every e-mail address: trimmed and lower case. */
export const normalEmail = (email: string) => email.trim().toLowerCase();
/** An address of at most MAX_EMAIL characters (code points), as the API's text rule counts them (schema/lib/limits.ts). */
export const isEmail = (email: string) => textProblem(email, MAX_EMAIL) === null && EMAIL.test(email);

/**
 * Creates a workspace and its owner (an existing user with that e-mail becomes the owner). `then`
 * runs in the same transaction (the CLI's audit record): what it throws undoes the workspace too.
 */
export async function createWorkspace(
  db: PrismaClient,
  input: NewWorkspace,
  then?: (tx: Prisma.TransactionClient, created: { workspaceId: string; ownerId: string }) => Promise<void>,
): Promise<CreatedWorkspace> {
  const name = input.name.trim();
  if (!name) throw new WorkspaceInputError("The workspace name cannot be empty.");
  const email = input.ownerEmail.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new WorkspaceInputError(`'${input.ownerEmail}' is not an e-mail address.`);
  if (input.ownerPassword !== undefined && [...input.ownerPassword].length < MIN_PASSWORD) {
    throw new WorkspaceInputError(`The owner password must have at least ${MIN_PASSWORD} characters.`);
  }
  const password = input.ownerPassword ?? randomBytes(18).toString("base64url");
  const passwordHash = await hashPassword(password);
  return db.$transaction(async (tx) => {
    const existing = await tx.user.findUnique({ where: { email } });
    const user = existing ?? (await tx.user.create({ data: { id: newId("user"), email, passwordHash } }));
    const workspace = await tx.workspace.create({
      data: {
        id: newId("workspace"),
        name,
        plan: input.plan,
        agentAuthEnabled: agentAuthDefault(input.plan),
        memberships: { create: { userId: user.id, role: "owner" } },
      },
    });
    await then?.(tx, { workspaceId: workspace.id, ownerId: user.id });
    return {
      workspace_id: workspace.id,
      owner_id: user.id,
      owner_password: existing ? null : password,
    };
  });
}

export class EmailTakenError extends Error {}

export interface NewAccount {
  /** Already normalized and checked (normalEmail, isEmail, the password's length). */
  email: string;
  password: string;
  /** Their own workspace's name; null for none (an invitee who joins the inviting workspace only). */
  workspaceName: string | null;
  plan: PlanName;
}

/**
 * Signs a new user up: the user and, unless `workspaceName` is null, their own workspace, which they
 * own. `then` runs in the same transaction (an invitation accepted at sign-up): what it throws
 * undoes the account too. An e-mail already in use is an EmailTakenError.
 */
export async function createAccount(
  db: PrismaClient,
  input: NewAccount,
  then?: (tx: Prisma.TransactionClient, userId: string, workspaceId: string | null) => Promise<void>,
): Promise<{ userId: string; workspaceId: string | null }> {
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.$transaction(async (tx) => {
      if (await tx.user.findUnique({ where: { email: input.email }, select: { id: true } }))
        throw new EmailTakenError();
      const user = await tx.user.create({ data: { id: newId("user"), email: input.email, passwordHash } });
      const workspace =
        input.workspaceName === null
          ? null
          : await tx.workspace.create({
              data: {
                id: newId("workspace"),
                name: input.workspaceName,
                plan: input.plan,
                agentAuthEnabled: agentAuthDefault(input.plan),
                memberships: { create: { userId: user.id, role: "owner" } },
              },
            });
      await then?.(tx, user.id, workspace?.id ?? null);
      return { userId: user.id, workspaceId: workspace?.id ?? null };
    });
  } catch (error) {
    // Two sign-ups with one e-mail at once: the unique index refuses the second.
    if ((error as { code?: string }).code === "P2002") throw new EmailTakenError();
    throw error;
  }
}
