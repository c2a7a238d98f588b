import type { PrismaClient } from "./generated/prisma/client.ts";
import type { PlanName } from "./lib/plans.ts";

/** Who is calling. API keys today; agent tokens and dashboard sessions plug in as further kinds. */
export interface Credential {
  kind: "api_key";
  id: string;
  workspaceId: string;
  /** The workspace's plan, for the limits that depend on it. */
  plan: PlanName;
  scopes: ReadonlySet<string>;
}

export interface Context {
  db: PrismaClient;
  credential: Credential;
  requestId: string;
}
