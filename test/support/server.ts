import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inject } from "vitest";
import type { PlanName } from "../../schema/lib/plans.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { createWorkspace } from "../../server/accounts/workspaces.ts";
import { createApiKey } from "../../server/auth/api-keys.ts";
import { openDatabase } from "../../server/db/open.ts";
import { type Config, loadConfig } from "../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../server/runtime/server.ts";
import { adminQuery, databaseUrl, REDIS_URL, type Stack } from "./stacks.ts";
import type {} from "./templates.ts";

export interface TestServer {
  stack: Stack;
  url: string;
  /** `${url}/v1` */
  api: string;
  config: Config;
  running: RunningServer;
  /** A new workspace with one key holding `scopes` (default: all). */
  tenant(options?: { scopes?: string[]; plan?: PlanName }): Promise<Tenant>;
  key(workspaceId: string, scopes: string[]): Promise<{ id: string; key: string }>;
  close(): Promise<void>;
}

export interface Tenant {
  workspaceId: string;
  key: string;
  keyId: string;
}

/**
 * A scratch database for one server: a temp DATA_DIR, and on PostgreSQL a database of its own.
 * Migrated (a copy of the run's template, test/support/templates.ts) unless `empty`, for the tests
 * of migrating itself.
 */
export async function provisionStack(
  stack: Stack,
  { empty = false }: { empty?: boolean } = {},
): Promise<{ env: NodeJS.ProcessEnv; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "kontor-test-"));
  const templates = empty ? {} : (inject("templates") ?? {});
  if (stack === "embedded") {
    if (templates.embedded) cpSync(join(templates.embedded, "db"), join(dataDir, "db"), { recursive: true });
    return {
      env: { DATA_DIR: dataDir },
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `kontor_test_${randomBytes(6).toString("hex")}`;
  await adminQuery(
    templates.postgres ? `create database ${name} template ${templates.postgres}` : `create database ${name}`,
  );
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl(name), REDIS_URL },
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}

export async function startTestServer(stack: Stack, env: NodeJS.ProcessEnv = {}): Promise<TestServer> {
  const scratch = await provisionStack(stack);
  // Longer than any stretch a test's own synchronous work (seeding PGlite) holds the shared event
  // loop: a 5 s keep-alive timer firing right after it would reset the client's next request.
  const config = loadConfig({
    PORT: "0",
    KONTOR_ENV: "development",
    KONTOR_KEEP_ALIVE_TIMEOUT_MS: "65000",
    ...scratch.env,
    ...env,
  });
  let running: RunningServer;
  try {
    running = await startServer(config, { publicUrlFromPort: true });
  } catch (error) {
    await scratch.drop();
    throw error;
  }
  const prisma = running.db.prisma;
  const key = (workspaceId: string, scopes: string[]) => createApiKey(prisma, { workspaceId, scopes });
  return {
    stack,
    url: running.url,
    api: `${running.url}/v1`,
    config: { ...config, publicUrl: running.url },
    running,
    key,
    async tenant(options = {}) {
      const ws = await createWorkspace(prisma, {
        name: `Test ${randomBytes(3).toString("hex")}`,
        plan: options.plan ?? "pro",
        ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      const created = await key(ws.workspace_id, options.scopes ?? [...SCOPES]);
      return { workspaceId: ws.workspace_id, key: created.key, keyId: created.id };
    },
    async close() {
      await running.close();
      await scratch.drop();
    },
  };
}

/**
 * A workspace with a key holding every scope, written straight into the database of `env` before
 * a child server opens it (the embedded database belongs to one process at a time).
 */
export async function tenantIn(env: NodeJS.ProcessEnv, name = "Child server"): Promise<Tenant> {
  const db = await openDatabase(loadConfig(env));
  try {
    const ws = await createWorkspace(db.prisma, {
      name,
      plan: "max",
      ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    const key = await createApiKey(db.prisma, { workspaceId: ws.workspace_id, scopes: [...SCOPES] });
    return { workspaceId: ws.workspace_id, key: key.key, keyId: key.id };
  } finally {
    await db.close();
  }
}
