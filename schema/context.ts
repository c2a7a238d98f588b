import type { PrismaClient } from "./generated/prisma/client.ts";

/** Who is calling. API keys today; agent tokens and dashboard sessions plug in as further kinds. */
export interface Credential {
  kind: "api_key";
  id: string;
  workspaceId: string;
  scopes: ReadonlySet<string>;
}

export interface Context {
  db: PrismaClient;
  credential: Credential;
  requestId: string;
}
