import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { createApiKey } from "../auth/api-keys.ts";
import { createWorkspace } from "./workspaces.ts";

export interface DemoSeed {
  workspace_id: string;
  owner_email: string;
  owner_password: string;
  key: string;
}

/**
 * docs/operations/configuration.md: on the first start in development with an empty database, a Demo workspace,
 * its owner and one full-scope key. Returns null when there is anything in the database already.
 */
export async function seedDemo(db: PrismaClient): Promise<DemoSeed | null> {
  if ((await db.workspace.count()) > 0) return null;
  const ownerEmail = "owner@example.com";
  const workspace = await createWorkspace(db, { name: "Demo", plan: "pro", ownerEmail });
  const key = await createApiKey(db, {
    workspaceId: workspace.workspace_id,
    scopes: [...SCOPES],
    name: "Demo key",
  });
  return {
    workspace_id: workspace.workspace_id,
    owner_email: ownerEmail,
    owner_password: workspace.owner_password ?? "(unchanged)",
    key: key.key,
  };
}
