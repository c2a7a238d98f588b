import {
  GraphQLEnumType,
  type GraphQLFieldConfig,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  print,
} from "graphql";
import { beforeAll, describe, expect, it } from "vitest";
import type { Context, Credential } from "../../schema/context.ts";
import { schema } from "../../schema/index.ts";
import { decodeCursor, encodeCursor } from "../../schema/lib/cursor.ts";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import { rest as restRoute, restView } from "../../schema/lib/rest.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import {
  capResult,
  runTool,
  TOOL_OUTPUT_MAX_BYTES,
  type ToolDefinition,
  type ToolResult,
  toolsFor,
  workspaceTools,
} from "../../server/ai/tools.ts";
import { ids } from "../support/assertions.ts";
import { rest } from "../support/http.ts";
import type { Tenant } from "../support/server.ts";
import { e2e } from "../support/suite.ts";

const tools = workspaceTools(schema);
const named = (name: string) => {
  const found = tools.find((t) => t.name === name);
  if (!found) throw new Error(`no tool ${name}`);
  return found;
};
const props = (t: ToolDefinition) => t.parameters.properties as Record<string, Record<string, unknown>>;

const CORE = [
  "workspace",
  "leads",
  "lead",
  "clients",
  "client",
  "invoices",
  "invoice",
  "inventoryItems",
  "inventoryItem",
  "projects",
  "project",
  "tasks",
  "task",
];
const NOT_BUSINESS = [
  "events",
  "event",
  "webhookEndpoints",
  "webhookEndpoint",
  "webhookDeliveries",
  "webhookDelivery",
  "requestLogs",
  "requestLogStats",
  "agentSettings",
  "trustedProviders",
  "trustedProvider",
  "agentRegistrations",
  "agentRegistration",
  "auditEvents",
  "auditEvent",
];

describe("workspaceTools: the tools derived from the schema", () => {
  it("has a tool for each core read, and the workspace summary", () => {
    const names = tools.map((t) => t.name);
    for (const name of CORE) expect(names).toContain(name);
    expect(new Set(names).size).toBe(names.length);
    for (const t of tools) {
      expect(t.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      expect(t.description.length).toBeGreaterThan(10);
    }
  });

  it("leaves out webhooks, logs, agents and the audit log, and nothing else of the REST queries", () => {
    const names = tools.map((t) => t.name);
    for (const name of NOT_BUSINESS) expect(names).not.toContain(name);
    for (const t of tools)
      expect(t.scopes.flat().filter((s) => /^(webhooks|logs|agents|audit)\./.test(s))).toEqual([]);
    // Every other Query field with a REST route is a tool: storage included, no list of names.
    const restQueries = Object.keys(restView(schema).getQueryType()!.getFields());
    expect(names.sort()).toEqual(restQueries.filter((name) => !NOT_BUSINESS.includes(name)).sort());
    expect(names).toEqual(expect.arrayContaining(["buckets", "files", "file", "storageUsage"]));
  });

  it("is built once per schema", () => {
    expect(workspaceTools(schema)).toBe(tools);
  });

  it("reads each tool's scopes from the field's scope-auth config", () => {
    expect(named("workspace").scopes).toEqual([]);
    expect(named("leads").scopes).toEqual([["leads.read"]]);
    expect(named("invoice").scopes).toEqual([["invoices.read"]]);
    expect(named("tasks").scopes).toEqual([["projects.read"]]);
    expect(named("files").scopes).toEqual([["storage.read"]]);
  });

  it("describes arguments as JSON Schema: enums, integers with the route's page limits, descriptions, required ids", () => {
    const leads = named("leads");
    expect(leads.parameters).toMatchObject({ type: "object", additionalProperties: false });
    expect(leads.parameters.required).toBeUndefined();
    expect(Object.keys(props(leads)).sort()).toEqual(["cursor", "limit", "search", "stage"]);
    expect(props(leads).stage).toMatchObject({
      type: "string",
      enum: ["new", "contacted", "qualified", "proposal", "won", "lost"],
    });
    expect(props(leads).stage!.description).toContain("Only leads in this stage.");
    expect(props(leads).limit).toMatchObject({ type: "integer", minimum: 1, maximum: 100 });
    expect(props(leads).search).toMatchObject({ type: "string", maxLength: 200 });

    expect(named("lead").parameters).toMatchObject({
      type: "object",
      required: ["id"],
      properties: { id: { type: "string" } },
      additionalProperties: false,
    });
    expect(named("tasks").parameters.required).toEqual(["project_id"]);
    expect(named("workspace").parameters).toEqual({
      type: "object",
      properties: {},
      additionalProperties: false,
    });
    // Every list takes 1–100, however large its items may be (a page of large ones stops early by itself).
    expect(props(named("invoices")).limit).toMatchObject({ type: "integer", minimum: 1, maximum: 100 });
    expect(props(named("invoices")).limit!.description).toContain("1–100");
    expect(props(named("invoices")).document_type).toMatchObject({ enum: ["invoice", "quote"] });
  });

  it("selects what the REST route answers", () => {
    const leads = print(named("leads").document);
    expect(leads).toMatch(
      /^query \w+\(\$stage: LeadStage, \$search: String, \$limit: Int, \$cursor: String\)/,
    );
    expect(leads).toMatch(
      /leads\(stage: \$stage, search: \$search, limit: \$limit, cursor: \$cursor\) \{\s+object\s+data \{\s+object\s+id\s+first_name/,
    );
    expect(leads).toContain("next_cursor");
    // REST bodies stay flat: no nested client under a lead.
    expect(leads).not.toMatch(/client \{/);
    expect(print(named("invoice").document)).toMatch(/payments \{\s+object\s+id/);
  });
});

describe("toolsFor: what a credential may call", () => {
  it("gives a credential without invoices.read no invoice tool", () => {
    const granted = new Set(SCOPES.filter((s) => s !== "invoices.read"));
    const names = toolsFor(tools, granted).map((t) => t.name);
    expect(names).not.toContain("invoices");
    expect(names).not.toContain("invoice");
    expect(names).toEqual(expect.arrayContaining(["leads", "clients", "projects", "workspace"]));
  });

  it("holds only the workspace tool for a credential with no read scope; write does not imply read", () => {
    expect(toolsFor(tools, new Set()).map((t) => t.name)).toEqual(["workspace"]);
    expect(toolsFor(tools, new Set(["leads.write", "invoices.write"])).map((t) => t.name)).toEqual([
      "workspace",
    ]);
    expect(
      toolsFor(tools, new Set(["leads.read"]))
        .map((t) => t.name)
        .sort(),
    ).toEqual(["lead", "leads", "workspace"]);
  });

  it("gives every business tool to a credential with every scope", () => {
    expect(toolsFor(tools, new Set(SCOPES))).toEqual(tools);
  });
});

// ---------------------------------------------------------------------------------------------
// A schema of its own: a new resource becomes a tool by being in it.

const route = (path: `/${string}`) => restRoute(`GET ${path}`, "Read");
const guarded = (authScopes: unknown) => ({ pothosOptions: { authScopes } });

const Colour = new GraphQLEnumType({
  name: "Colour",
  values: { red: { value: "RED" }, blue: { value: "BLUE" } },
});
const Gizmo = new GraphQLObjectType({
  name: "Gizmo",
  fields: {
    id: { type: new GraphQLNonNull(GraphQLString) },
    colour: { type: Colour },
    notes: { type: GraphQLString },
  },
});
const GizmoList = new GraphQLObjectType({
  name: "GizmoList",
  fields: {
    object: { type: GraphQLString },
    data: { type: new GraphQLList(new GraphQLNonNull(Gizmo)) },
    has_more: { type: GraphQLString },
    next_cursor: { type: GraphQLString },
  },
});
const gizmoRows = (count: number, notes = "") =>
  Array.from({ length: count }, (_, i) => ({
    id: `gzm_${String(i).padStart(26, "0")}`,
    colour: "RED",
    notes,
  }));
let rowsToServe = gizmoRows(2);

const field = (
  path: `/${string}` | null,
  authScopes: unknown,
  extra: Partial<GraphQLFieldConfig<unknown, unknown>> = {},
): GraphQLFieldConfig<unknown, unknown> => ({
  type: GizmoList,
  description: "The gizmos of the workspace.",
  extensions: { ...(path && route(path)), ...guarded(authScopes) },
  args: {
    colour: { type: Colour, description: "Only gizmos of this colour.", defaultValue: "BLUE" },
    limit: { type: GraphQLInt },
  },
  resolve: (_root, args: { colour?: string }) => ({
    object: "list",
    data: rowsToServe.filter((r) => !args.colour || r.colour === args.colour),
    has_more: "no",
    next_cursor: null,
  }),
  ...extra,
});

const custom = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: "Query",
    fields: {
      gizmos: field("/gizmos", { scope: "gizmos.read" }),
      hooks: field("/hooks", { readable: "webhooks" }),
      graphqlOnly: field(null, { scope: "gizmos.read" }),
      dynamic: field("/dynamic", () => true),
      both: field("/both", { $all: { scope: "a.read", readable: "b" } }),
      either: field("/either", { scope: ["x.read", "y.read"], readable: "z" }),
      open: field("/open", undefined),
    },
  }),
});

describe("workspaceTools on a schema of its own", () => {
  const built = workspaceTools(custom);
  const byName = (name: string) => built.find((t) => t.name === name);

  it("makes a new resource's routed query a tool, by being in the schema", () => {
    expect(built.map((t) => t.name).sort()).toEqual(["both", "either", "gizmos", "open"]);
    const gizmos = byName("gizmos")!;
    expect(gizmos.scopes).toEqual([["gizmos.read"]]);
    expect(gizmos.description).toBe("The gizmos of the workspace.");
    expect(gizmos.parameters).toEqual({
      type: "object",
      properties: {
        colour: {
          type: "string",
          enum: ["red", "blue"],
          description: "Only gizmos of this colour.",
          default: "blue",
        },
        // A `limit` argument pages as every list route does.
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 100,
          description: "How many objects a page holds: 1–100, default 20.",
        },
      },
      additionalProperties: false,
    });
  });

  it("reads scope-auth maps as Pothos does: entries are alternatives, $all needs each", () => {
    expect(byName("both")!.scopes).toEqual([["a.read"], ["b.read", "b.write"]]);
    // (x ∧ y) ∨ z.*  =  (x ∨ z.*) ∧ (y ∨ z.*)
    expect(byName("either")!.scopes).toEqual([
      ["x.read", "z.read", "z.write"],
      ["y.read", "z.read", "z.write"],
    ]);
    expect(byName("open")!.scopes).toEqual([]);
    const allowed = (granted: string[]) =>
      toolsFor(built, new Set(granted))
        .map((t) => t.name)
        .sort();
    expect(allowed([])).toEqual(["open"]);
    expect(allowed(["a.read"])).toEqual(["open"]);
    expect(allowed(["a.read", "b.write"])).toEqual(["both", "open"]);
    expect(allowed(["x.read", "y.read"])).toEqual(["either", "open"]);
    expect(allowed(["z.write"])).toEqual(["either", "open"]);
    expect(allowed(["x.read"])).toEqual(["open"]);
  });

  it("runs the tool with the checked arguments (enum by name, default applied)", async () => {
    rowsToServe = [...gizmoRows(1), { id: "gzm_blue", colour: "BLUE", notes: "" }];
    const context = {} as Context;
    expect(await runTool(byName("gizmos")!, {}, context, custom)).toEqual({
      ok: true,
      data: {
        object: "list",
        data: [{ id: "gzm_blue", colour: "blue", notes: "" }],
        has_more: "no",
        next_cursor: null,
      },
    });
    expect(await runTool(byName("gizmos")!, { colour: "red" }, context, custom)).toMatchObject({
      ok: true,
      data: { data: [{ colour: "red" }] },
    });
    expect(await runTool(byName("gizmos")!, { colour: "green" }, context, custom)).toMatchObject({
      ok: false,
      error: { code: "validation_failed", param: "colour" },
    });
    expect(await runTool(byName("gizmos")!, { limit: 1.5 }, context, custom)).toMatchObject({
      ok: false,
      error: { code: "validation_failed", param: "limit" },
    });
  });
});

describe("capResult: what the model reads stays within 64 KiB", () => {
  const size = (result: ToolResult) => Buffer.byteLength(JSON.stringify(result));

  it("leaves a result that fits as it is", () => {
    const result: ToolResult = {
      ok: true,
      data: { object: "list", data: [{ id: "lead_1" }], has_more: false, next_cursor: null },
    };
    expect(capResult(result)).toBe(result);
  });

  it("keeps the items of a list that fit, and says where the next page starts", () => {
    const items = Array.from({ length: 40 }, (_, i) => ({
      id: `lead_01K${String(i).padStart(23, "0")}`,
      notes: "é".repeat(2000),
    }));
    const capped = capResult({
      ok: true,
      data: { object: "list", data: items, has_more: false, next_cursor: null },
    }) as any;
    expect(size(capped)).toBeLessThanOrEqual(TOOL_OUTPUT_MAX_BYTES);
    const kept = capped.data.data as typeof items;
    expect(kept.length).toBeGreaterThan(10);
    expect(kept).toEqual(items.slice(0, kept.length));
    // One more item would not have fitted.
    expect(
      size({ ok: true, data: { ...capped.data, data: items.slice(0, kept.length + 1) }, note: capped.note }),
    ).toBeGreaterThan(TOOL_OUTPUT_MAX_BYTES);
    expect(capped.data.has_more).toBe(true);
    expect(decodeCursor(capped.data.next_cursor)).toBe(kept.at(-1)!.id);
    expect(capped.note).toMatch(/first \d+ of the 40 items/);
  });

  it("cuts anything else as text, with a note, within the limit", () => {
    const capped = capResult({
      ok: true,
      data: { object: "invoice", notes: '"quoted" '.repeat(20_000) },
    }) as any;
    expect(capped).toMatchObject({ ok: true, truncated: true, note: expect.stringContaining("64 KiB") });
    expect(size(capped)).toBeLessThanOrEqual(TOOL_OUTPUT_MAX_BYTES);
    expect(size(capped)).toBeGreaterThan(TOOL_OUTPUT_MAX_BYTES - 16);
    expect(capped.partial_json.startsWith('{"object":"invoice","notes":"\\"quoted\\" ')).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Against a real database: each tool runs as the caller.

const refuse = () => {
  throw new Error("a read-only tool called a service it should not need");
};

function contextFor(prisma: Context["db"], tenant: Tenant, scopes: readonly string[]): Context {
  const credential: Credential = {
    kind: "api_key",
    id: tenant.keyId,
    workspaceId: tenant.workspaceId,
    plan: "pro",
    scopes: new Set(scopes),
  };
  return {
    db: prisma,
    credential,
    requestId: "req_test",
    hostUrl: "http://localhost:4000",
    webhooks: { seal: refuse, checkUrl: refuse, wake: refuse },
    storage: { quotaBytes: refuse, beginUpload: refuse, put: refuse, discard: refuse },
    // The workspace tool reads the data quota and its use (GET /workspace answers them); writing is refused.
    dataQuota: {
      quotaBytes: (plan) => PLAN_LIMITS[plan].data_quota_bytes,
      usage: async () => ({
        recordBytes: 0,
        idempotencyBytes: 0,
        bytes: 0,
        quotaBytes: PLAN_LIMITS.pro.data_quota_bytes,
      }),
      assertWritable: refuse,
    },
    revocations: { revoked: refuse },
  };
}

e2e("AI tools run as the caller", (server) => {
  let tenant: Tenant;
  let leadIds: string[];
  let as: (scopes: readonly string[], who?: Tenant) => Context;

  beforeAll(async () => {
    tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    const created = [];
    for (const body of [
      { full_name: "Ada Lovelace", company_name: "Analytical Engines", stage: "won", estimated_value: 1200 },
      { full_name: "Charles Babbage", stage: "new" },
    ]) {
      const res = await api.post("/leads", body);
      expect(res.status).toBe(201);
      created.push(res.body.id as string);
    }
    leadIds = created;
    as = (scopes, who = tenant) => contextFor(server().running.db.prisma, who, scopes);
  });

  it("the leads tool answers what GET /v1/leads answers", async () => {
    const result = await runTool(named("leads"), {}, as(["leads.read"]), schema);
    expect(result.ok).toBe(true);
    const data = (result as { data: any }).data;
    expect(ids(data)).toEqual([...leadIds].reverse());
    const viaRest = await rest(server().api, tenant.key).get("/leads");
    expect(data).toEqual(viaRest.body);
    expect(data.data[1]).toMatchObject({
      object: "lead",
      full_name: "Ada Lovelace",
      stage: "won",
      estimated_value: 1200,
    });
  });

  it("filters and fetches by id as the routes do", async () => {
    const won = await runTool(named("leads"), { stage: "won" }, as(["leads.read"]), schema);
    expect(ids((won as any).data)).toEqual([leadIds[0]]);
    const one = await runTool(named("lead"), { id: leadIds[1] }, as(["leads.write", "leads.read"]), schema);
    expect(one).toEqual({
      ok: true,
      data: (await rest(server().api, tenant.key).get(`/leads/${leadIds[1]}`)).body,
    });
    const workspace = await runTool(named("workspace"), {}, as([]), schema);
    expect(workspace).toMatchObject({
      ok: true,
      data: { object: "workspace", id: tenant.workspaceId, plan: "pro" },
    });
  });

  it("refuses a credential without leads.read with insufficient_scope", async () => {
    for (const scopes of [[], ["leads.write", "clients.read"]]) {
      expect(await runTool(named("leads"), {}, as(scopes), schema)).toEqual({
        ok: false,
        error: {
          code: "insufficient_scope",
          message: expect.stringContaining("leads.read"),
          required_scope: "leads.read",
        },
      });
    }
    expect(await runTool(named("invoices"), {}, as(["leads.read"]), schema)).toMatchObject({
      ok: false,
      error: { code: "insufficient_scope", required_scope: "invoices.read" },
    });
  });

  it("answers bad arguments as errors the model can read, never throwing", async () => {
    const leads = named("leads");
    const context = as(["leads.read", "invoices.read"]);
    const cases: [ToolDefinition, unknown, string][] = [
      [leads, { stage: "closed" }, "stage"],
      [leads, { limit: "5" }, "limit"],
      [leads, { limit: 101 }, "limit"],
      [leads, { limit: 0 }, "limit"],
      [leads, { colour: "red" }, "colour"],
      [leads, { cursor: "not-a-cursor" }, "cursor"],
      [leads, ["won"], "arguments"],
      [leads, "stage=won", "arguments"],
      [named("lead"), {}, "id"],
      [named("lead"), { id: true }, "id"],
      [named("invoices"), { limit: 101 }, "limit"],
      [named("invoices"), { document_type: "receipt" }, "document_type"],
    ];
    for (const [definition, args, param] of cases) {
      const result = await runTool(definition, args, context, schema);
      expect(result, `${definition.name} ${JSON.stringify(args)}`).toMatchObject({
        ok: false,
        error: { code: "validation_failed", param },
      });
      expect((result as any).error.message).not.toMatch(/\n\s+at /);
    }
    expect(await runTool(leads, { stage: "closed" }, context, schema)).toMatchObject({
      error: { message: expect.stringContaining("new, contacted, qualified") },
    });
  });

  it("sees only the caller's workspace", async () => {
    const other = await server().tenant();
    const theirs = await runTool(named("leads"), {}, as(["leads.read"], other), schema);
    expect(theirs).toEqual({
      ok: true,
      data: { object: "list", data: [], has_more: false, next_cursor: null },
    });
    const hidden = await runTool(named("lead"), { id: leadIds[0] }, as(["leads.read"], other), schema);
    expect(hidden).toMatchObject({ ok: false, error: { code: "not_found", param: "id" } });
    expect(JSON.stringify(hidden)).not.toContain("Ada");
  });

  it("cuts a page over 64 KiB to the items that fit, and its next_cursor continues right after them", async () => {
    const big = await server().tenant();
    const api = rest(server().api, big.key);
    const created: string[] = [];
    for (let i = 0; i < 9; i += 1) {
      const res = await api.post("/leads", { full_name: `Lead ${i}`, notes: `${i}`.repeat(9_500) });
      expect(res.status).toBe(201);
      created.unshift(res.body.id);
    }
    const context = as(["leads.read"], big);
    const first = (await runTool(named("leads"), { limit: 9 }, context, schema)) as any;
    expect(Buffer.byteLength(JSON.stringify(first))).toBeLessThanOrEqual(TOOL_OUTPUT_MAX_BYTES);
    const kept = ids(first.data);
    expect(kept.length).toBeGreaterThan(3);
    expect(kept.length).toBeLessThan(9);
    expect(kept).toEqual(created.slice(0, kept.length));
    expect(first.data.has_more).toBe(true);
    expect(first.data.next_cursor).toBe(encodeCursor(kept.at(-1)!));
    expect(first.note).toContain("next_cursor");
    const rest2 = (await runTool(
      named("leads"),
      { limit: 9, cursor: first.data.next_cursor },
      context,
      schema,
    )) as any;
    expect(rest2.ok).toBe(true);
    expect(ids(rest2.data)).toEqual(created.slice(kept.length));
  });
});
