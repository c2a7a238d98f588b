import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";

/**
 * The MCP Inspector's CLI (`mcp-inspector --cli`), the tool people debug MCP servers with, against
 * a running Kontor: it lists the tools and calls one, as a separate process.
 */

const run = promisify(execFile);
const INSPECTOR = new URL("../../../node_modules/.bin/mcp-inspector", import.meta.url).pathname;
const home = mkdtempSync(join(tmpdir(), "kontor-inspector-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

e2e("mcp: the Inspector CLI", (server) => {
  const { tenant, api } = useWorkspace(server);

  /** One Inspector command against /mcp with the tenant's key: returns its JSON output. */
  async function inspector(...args: string[]) {
    const { stdout } = await run(
      INSPECTOR,
      [
        "--cli",
        `${server().url}/mcp`,
        "--transport",
        "http",
        "--header",
        `Authorization: Bearer ${tenant.key}`,
        ...args,
      ],
      {
        timeout: 60_000,
        // Its catalog and any state it keeps go to a scratch home, never the user's.
        env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, "mcp.json") },
      },
    );
    return JSON.parse(stdout);
  }

  it("lists the tools and calls one", { timeout: 120_000 }, async () => {
    const listed = await inspector("--method", "tools/list");
    const names = listed.tools.map((tool: { name: string }) => tool.name);
    expect(names.slice(0, 2)).toEqual(["get_workspace", "list_clients"]);
    expect(names).toContain("create_lead");

    const called = await inspector(
      "--method",
      "tools/call",
      "--tool-name",
      "create_lead",
      "--tool-arg",
      "first_name=Inspected",
    );
    expect(called.isError).toBeFalsy();
    expect(called.structuredContent).toMatchObject({ object: "lead", first_name: "Inspected" });
    expect((await api.get(`/leads/${called.structuredContent.id}`)).body.first_name).toBe("Inspected");
  });
});
