import { randomBytes } from "node:crypto";
import { hash } from "@node-rs/argon2";
import type { PrismaClient } from "../schema/generated/prisma/client.ts";
import { newId } from "../schema/lib/ids.ts";
import { agentAuthDefault, type PlanName } from "../schema/lib/plans.ts";

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
const MIN_PASSWORD = 12;

/** Creates a workspace and its owner (an existing user with that e-mail becomes the owner). */
export async function createWorkspace(db: PrismaClient, input: NewWorkspace): Promise<CreatedWorkspace> {
  const name = input.name.trim();
  if (!name) throw new WorkspaceInputError("The workspace name cannot be empty.");
  const email = input.ownerEmail.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new WorkspaceInputError(`'${input.ownerEmail}' is not an e-mail address.`);
  if (input.ownerPassword !== undefined && input.ownerPassword.length < MIN_PASSWORD) {
    throw new WorkspaceInputError(`The owner password must have at least ${MIN_PASSWORD} characters.`);
  }
  const password = input.ownerPassword ?? randomBytes(18).toString("base64url");
  const passwordHash = await hash(password);
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
    return {
      workspace_id: workspace.id,
      owner_id: user.id,
      owner_password: existing ? null : password,
    };
  });
}
