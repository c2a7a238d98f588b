import { execFileSync } from "node:child_process";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { POSTGRES_ADMIN_URL, stacks } from "./stacks.ts";
import { makeTemplates } from "./templates.ts";

/**
 * The production build the process suites start (dist/server/, rebuilt only when a source changed,
 * as `npm start` does). The PostgreSQL stack is not optional: fail the run at once when the server
 * does not answer. Then the migrated templates every scratch database copies (test/support/templates.ts).
 */
export default async function setup(project: TestProject) {
  execFileSync(process.execPath, ["scripts/build-server.mjs", "--quiet"], { stdio: "inherit" });
  if (stacks().includes("postgres")) {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query("select 1");
    } catch (error) {
      throw new Error(
        `PostgreSQL at ${POSTGRES_ADMIN_URL} does not answer (${(error as Error).message}). Start it, or run bash .ci/run.`,
      );
    } finally {
      await client.end().catch(() => {});
    }
  }
  const { templates, remove } = await makeTemplates(stacks());
  project.provide("templates", templates);
  return remove;
}
