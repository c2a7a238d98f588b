import { beforeAll, describe, expect, it } from "vitest";
import { schema } from "../../../schema/index.ts";
import { restView } from "../../../schema/lib/rest.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { routeTable } from "../../../server/rest/view.ts";
import { TOOL_AREAS } from "../../../server/tools/catalog.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { allTools, CLIENTS, connect, type McpClient } from "./support.ts";

/**
 * The MCP server's tools (docs/api/mcp.md), through the official clients of both eras: the list a
 * credential gets, queries and mutations as the caller, idempotency keys, and refusals as tool
 * results that write nothing.
 */

/** The REST routes of the schema's queries and mutations: the tools an all-scopes key may call are these. */
const ROUTES = routeTable(restView(schema));

const errorOf = (result: any) => {
  expect(result.isError, JSON.stringify(result)).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  return JSON.parse(result.content[0].text).error;
};

e2e("mcp: tools", (server) => {
  const { tenant, api } = useWorkspace(server);

  for (const kind of CLIENTS) {
    describe(`with the ${kind} client`, () => {
      let client: McpClient;
      beforeAll(async () => {
        client = await connect(kind, `${server().url}/mcp`, tenant.key);
        return () => client.close();
      });

      it("lists one tool per query and mutation the key may call, in a stable order, in pages", async () => {
        const first = await allTools(client);
        const second = await allTools(client);
        expect(second.tools.map((tool) => tool.name)).toEqual(first.tools.map((tool) => tool.name));
        expect(new Set(first.tools.map((tool) => tool.name)).size).toBe(first.tools.length);
        // One per REST route of a query or mutation: every scope rule of the schema is known before running.
        expect(first.tools.length).toBe(ROUTES.length);
        const names = first.tools.map((tool) => tool.name);
        expect(names.slice(0, 3)).toEqual(["get_workspace", "list_clients", "get_client"]);
        expect(names).toEqual(
          expect.arrayContaining(["list_leads", "get_lead", "create_lead", "record_payment", "delete_task"]),
        );
        for (const tool of first.tools) {
          expect(tool.name).toMatch(/^[a-z][a-z0-9_]{1,63}$/);
          expect(tool.description.length, tool.name).toBeGreaterThan(20);
          expect(tool.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
          expect(tool.outputSchema).toMatchObject({ type: "object" });
          expect(tool.annotations).toMatchObject({ readOnlyHint: expect.any(Boolean), openWorldHint: false });
          expect(typeof tool.annotations.idempotentHint).toBe("boolean");
        }
        const byName = new Map(first.tools.map((tool) => [tool.name, tool]));
        expect(byName.get("list_leads").annotations).toEqual({
          title: "List leads",
          readOnlyHint: true,
          idempotentHint: true,
          openWorldHint: false,
        });
        expect(byName.get("create_lead").annotations).toMatchObject({
          readOnlyHint: false,
          destructiveHint: false,
          idempotentHint: false,
        });
        for (const name of ["delete_lead", "void_invoice", "revoke_agent_registration"])
          expect(byName.get(name).annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
        // Writes take an idempotency key; reads do not.
        expect(byName.get("create_lead").inputSchema.properties.idempotency_key).toMatchObject({
          type: "string",
        });
        expect(byName.get("list_leads").inputSchema.properties.idempotency_key).toBeUndefined();
        expect(byName.get("get_lead").inputSchema.required).toEqual(["id"]);
        expect(byName.get("list_leads").inputSchema.properties.limit).toMatchObject({
          minimum: 1,
          maximum: 100,
        });
      });

      it("runs a query as the caller: the REST route's answer, as structured content and as text", async () => {
        const lead = await api.post("/leads", { first_name: `Query ${kind}`, email: "q@example.com" });
        expect(lead.status).toBe(201);
        const result = await client.callTool({ name: "get_lead", arguments: { id: lead.body.id } });
        expect(result.isError).toBeFalsy();
        expect(result.structuredContent).toEqual(lead.body);
        expect(JSON.parse(result.content[0].text)).toEqual(lead.body);
        const page = await client.callTool({ name: "list_leads", arguments: { limit: 1 } });
        expect(page.structuredContent).toMatchObject({ object: "list", has_more: expect.any(Boolean) });
        expect(page.structuredContent.data).toHaveLength(1);
      });

      it("runs a mutation, and replays it for the same idempotency_key instead of running it again", async () => {
        const key = `mcp-${kind}-${Date.now()}`;
        const args = { first_name: `Mutation ${kind}`, stage: "qualified", idempotency_key: key };
        const created = await client.callTool({ name: "create_lead", arguments: args });
        expect(created.isError).toBeFalsy();
        expect(created.structuredContent).toMatchObject({ object: "lead", stage: "qualified" });
        const stored = await api.get(`/leads/${created.structuredContent.id}`);
        expect(stored.body).toEqual(created.structuredContent);

        const again = await client.callTool({ name: "create_lead", arguments: args });
        expect(again.structuredContent).toEqual(created.structuredContent);
        expect(again._meta?.["kontor/idempotent_replay"]).toBe(true);
        const named = (await api.get(`/leads?search=${encodeURIComponent(`Mutation ${kind}`)}`)).body.data;
        expect(named).toHaveLength(1);

        // The same key with other arguments is refused, and writes nothing.
        const other = await client.callTool({
          name: "create_lead",
          arguments: { ...args, first_name: `Other ${kind}` },
        });
        expect(errorOf(other)).toMatchObject({ code: "idempotency_conflict", type: "idempotency_error" });
        expect((await api.get(`/leads?search=${encodeURIComponent(`Other ${kind}`)}`)).body.data).toEqual([]);
      });

      it("answers bad arguments with isError naming the field, and writes nothing", async () => {
        const before = (await api.get("/leads?limit=100")).body.data.length;
        const cases: [Record<string, unknown>, string][] = [
          [{ first_name: "Bad", stage: "nope" }, "stage"],
          [{ first_name: "Bad", unknown_field: 1 }, "unknown_field"],
          [{ first_name: "x".repeat(100_000) }, "first_name"],
          [{ first_name: "Bad", idempotency_key: "" }, "idempotency_key"],
          [{ first_name: "Bad", idempotency_key: 7 }, "idempotency_key"],
        ];
        for (const [args, param] of cases) {
          const error = errorOf(await client.callTool({ name: "create_lead", arguments: args }));
          expect(error, JSON.stringify(args).slice(0, 80)).toMatchObject({
            type: "invalid_request_error",
            code: "validation_failed",
            param,
            request_id: expect.stringMatching(/^req_/),
          });
        }
        const listed = errorOf(await client.callTool({ name: "list_leads", arguments: { limit: 1000 } }));
        expect(listed).toMatchObject({ code: "validation_failed", param: "limit" });
        const missing = errorOf(await client.callTool({ name: "get_lead", arguments: {} }));
        expect(missing).toMatchObject({ code: "validation_failed", param: "id" });
        const unknown = errorOf(
          await client.callTool({ name: "get_lead", arguments: { id: "lead_01J00000000000000000000000" } }),
        );
        expect(unknown).toMatchObject({ code: "not_found" });
        expect((await api.get("/leads?limit=100")).body.data.length).toBe(before);
      });

      it("answers an unknown tool with a JSON-RPC error", async () => {
        await expect(client.callTool({ name: "drop_database", arguments: {} })).rejects.toThrow(
          /Unknown tool: drop_database/,
        );
      });
    });
  }

  describe("what a credential may call", () => {
    it("lists only the tools of the key's scopes; a tool outside them is refused as a tool result", async () => {
      const { key } = await server().key(tenant.workspaceId, ["leads.read"]);
      const client = await connect("v2", `${server().url}/mcp`, key);
      try {
        const { tools } = await allTools(client);
        expect(tools.map((tool) => tool.name)).toEqual(["get_workspace", "list_leads", "get_lead"]);
        const before = (await api.get("/leads?limit=100")).body.data.length;
        const refused = errorOf(
          await client.callTool({ name: "create_lead", arguments: { first_name: "No" } }),
        );
        expect(refused).toMatchObject({
          type: "permission_error",
          code: "insufficient_scope",
          required_scope: "leads.write",
        });
        expect((await api.get("/leads?limit=100")).body.data.length).toBe(before);
      } finally {
        await client.close();
      }
    });

    it("narrows the list with ?toolsets= and ?read_only=true; a narrowed-out tool is unknown", async () => {
      const crm = await connect("v1", `${server().url}/mcp?toolsets=crm`, tenant.key);
      const reading = await connect(
        "v2",
        `${server().url}/mcp?toolsets=invoicing,projects&read_only=true`,
        tenant.key,
      );
      try {
        const crmNames = (await allTools(crm)).tools.map((tool) => tool.name);
        expect(crmNames[0]).toBe("get_workspace");
        expect(crmNames).toEqual(expect.arrayContaining(["list_clients", "create_lead", "convert_lead"]));
        expect(crmNames.filter((name) => /invoice|project|task|webhook|bucket|file/.test(name))).toEqual([]);
        const readNames = (await allTools(reading)).tools.map((tool) => tool.name);
        expect(readNames).toEqual([
          "get_workspace",
          "list_invoices",
          "get_invoice",
          "list_projects",
          "get_project",
          "list_tasks",
          "get_task",
          "get_summary",
        ]);
        await expect(reading.callTool({ name: "create_project", arguments: { name: "No" } })).rejects.toThrow(
          /Unknown tool: create_project/,
        );
      } finally {
        await crm.close();
        await reading.close();
      }
    });

    it("counts every tool of an all-scopes key against the routes; each toolset's list stays under 10k tokens", async () => {
      const client = await connect("v1", `${server().url}/mcp`, tenant.key);
      try {
        const { tools, pages } = await allTools(client);
        expect(pages).toBe(2);
        expect(tools.length).toBe(ROUTES.length);
        // About 4 bytes a token: the list is what a client puts in the model's context (docs/api/mcp.md).
        const tokens = (list: unknown[]) => Math.round(Buffer.byteLength(JSON.stringify(list)) / 4);
        console.log(
          `[mcp] tools/list for an all-scopes key: ${tools.length} tools, ~${tokens(tools)} tokens`,
        );
        for (const area of TOOL_AREAS) {
          const narrowed = await connect("v1", `${server().url}/mcp?toolsets=${area}`, tenant.key);
          try {
            const list = (await allTools(narrowed)).tools;
            console.log(`[mcp] ?toolsets=${area}: ${list.length} tools, ~${tokens(list)} tokens`);
            expect(tokens(list), area).toBeLessThan(10_000);
          } finally {
            await narrowed.close();
          }
        }
      } finally {
        await client.close();
      }
    });
  });

  it("logs each call under /mcp with the tool's name", async () => {
    const client = await connect("v2", `${server().url}/mcp`, tenant.key);
    try {
      await client.callTool({ name: "list_projects", arguments: { limit: 1 } });
    } finally {
      await client.close();
    }
    const prisma = server().running.db.prisma;
    await flushRequestLogs(server().running.db);
    const rows = await prisma.requestLog.findMany({
      where: { workspaceId: tenant.workspaceId, tool: "list_projects" },
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ route: "/mcp", method: "POST", status: 200, credentialId: tenant.keyId });
    // The handshake and tools/list are requests of the key too, under /mcp without a tool.
    expect(
      await prisma.requestLog.count({
        where: { workspaceId: tenant.workspaceId, route: "/mcp", tool: null },
      }),
    ).toBeGreaterThan(0);
  });
});
