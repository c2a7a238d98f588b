import {
  type GraphQLObjectType,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isNonNullType,
  isObjectType,
  type OperationDefinitionNode,
  parse,
} from "graphql";
import { beforeAll, describe, expect, it } from "vitest";
import { schema } from "../../../schema/index.ts";
import { decodeCursor, encodeCursor, MAX_LIMIT } from "../../../schema/lib/cursor.ts";
import { RESPONSE_BUDGET_BYTES } from "../../../schema/lib/limits.ts";
import { RESPONSE_RESERVE_BYTES } from "../../../schema/lib/list-page.ts";
import { estimate } from "../../../schema/lib/response-cost.ts";
import { GRAPHQL_LIMITS } from "../../../server/graphql/limits.ts";
import { ConfigError, loadConfig, MIN_RESPONSE_BUDGET_BYTES } from "../../../server/runtime/config.ts";
import { endpointsOf, type OpenApiDoc } from "../../support/bad-input.ts";
import { call, raw, rest } from "../../support/http.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import type { Tenant } from "../../support/server.ts";
import { recordSql } from "../../support/sql.ts";
import { e2e } from "../../support/suite.ts";
import { sweepFixtures } from "../../support/sweep-fixtures.ts";

/**
 * docs/api/pagination.md: `limit` is 1–100 on every list, and an upper bound. A page whose items would pass
 * the response budget holds fewer of them, says has_more, and its next_cursor continues right after
 * its last item, so walking the cursor returns every object exactly once, in order, and no answer
 * ever passes the budget. The budget is lowered for this suite (KONTOR_RESPONSE_BUDGET_BYTES, a
 * test-only setting) so that a few hundred kilobytes of invoices are "big".
 */

const BUDGET = 256 * 1024;
/** 40 invoices, three in five big: 40 lines of 450 characters (some of two or four bytes), about 25 KB each. */
const INVOICES = 40;
const isBig = (n: number) => n % 5 !== 2 && n % 5 !== 4;
const LINES = 40;
const bytesOf = (text: string) => Buffer.byteLength(text);
function describeLine(n: number, i: number): string {
  const text = `Line ${i} of invoice ${n}: ${"é😀x".repeat(40)}`;
  return text + "a".repeat(450 - [...text].length);
}

/** A page as a list answers it. */
interface ListPage {
  data: { id: string }[];
  has_more: boolean;
  next_cursor: string | null;
}

/** What a walk saw: every id in the order pages gave them, and each page's size. */
interface Walk {
  ids: string[];
  pages: { items: number; bytes: number; hasMore: boolean }[];
}

const largestPage = (walk: Walk) => Math.max(...walk.pages.map((page) => page.bytes));

/** Every field of `type`, relations followed as deep as the GraphQL limits allow (depth, lists nested 2 deep). */
function largestSelection(type: GraphQLObjectType, depth: number, lists: number): string {
  const parts: string[] = [];
  for (const field of Object.values(type.getFields())) {
    if (field.args.length > 0) continue;
    const named = getNamedType(field.type);
    if (!isCompositeType(named)) {
      parts.push(field.name);
      continue;
    }
    const nested = lists + (isListType(getNullableType(field.type)) ? 1 : 0);
    if (!isObjectType(named) || depth >= GRAPHQL_LIMITS.maxDepth || nested > GRAPHQL_LIMITS.maxListNesting)
      continue;
    const inner = largestSelection(named, depth + 1, nested);
    if (inner) parts.push(`${field.name} { ${inner} }`);
  }
  return parts.join(" ");
}

describe("KONTOR_RESPONSE_BUDGET_BYTES", () => {
  it("lowers the budget for tests, within bounds, and is refused in production", () => {
    expect(loadConfig({}).responseBudgetBytes).toBe(RESPONSE_BUDGET_BYTES);
    expect(loadConfig({ KONTOR_RESPONSE_BUDGET_BYTES: String(BUDGET) }).responseBudgetBytes).toBe(BUDGET);
    for (const bad of [
      String(MIN_RESPONSE_BUDGET_BYTES - 1),
      String(RESPONSE_BUDGET_BYTES + 1),
      "65536.5",
      "lots",
    ]) {
      expect(() => loadConfig({ KONTOR_RESPONSE_BUDGET_BYTES: bad }), bad).toThrow(ConfigError);
    }
    const production = {
      PUBLIC_URL: "https://api.example.com",
      KONTOR_ENV: "production",
      KONTOR_RESPONSE_BUDGET_BYTES: String(BUDGET),
    };
    expect(() => loadConfig(production)).toThrow(/KONTOR_RESPONSE_BUDGET_BYTES is for tests only/);
  });
});

e2e(
  "lists stop at the response budget",
  (server, stack) => {
    let tenant: Tenant;
    let api: ReturnType<typeof rest>;
    /** The invoices, newest first, as every walk must return them. */
    const invoices: string[] = [];
    /** Their invoice.created events, newest first. */
    let events: string[] = [];

    /** POST /graphql as a plain client: the status, the body's bytes and the parsed answer. */
    async function graphql(query: string, variables?: Record<string, unknown>) {
      const res = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, bytes: bytesOf(res.text), json: res.json };
    }

    /** Follows next_cursor from the first page to the last: `page` answers one page for a cursor. */
    async function walk(page: (cursor: string | null) => Promise<{ bytes: number; list: ListPage }>) {
      const seen: Walk = { ids: [], pages: [] };
      let cursor: string | null = null;
      for (let turn = 0; turn < 200; turn++) {
        const { bytes, list } = await page(cursor);
        expect(bytes, "a page never passes the budget").toBeLessThanOrEqual(BUDGET);
        expect(list.data.length).toBeLessThanOrEqual(MAX_LIMIT);
        seen.ids.push(...list.data.map((item) => item.id));
        seen.pages.push({ items: list.data.length, bytes, hasMore: list.has_more });
        expect(list.next_cursor === null, "next_cursor exactly when has_more").toBe(!list.has_more);
        if (!list.has_more) return seen;
        expect(list.data.length, "a page that stops early still makes progress").toBeGreaterThan(0);
        cursor = list.next_cursor;
      }
      throw new Error("the walk did not end");
    }

    const restPages = (path: string) => async (cursor: string | null) => {
      const query = `${path.includes("?") ? "&" : "?"}limit=100${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await call("GET", `${server().api}${path}${query}`, { key: tenant.key });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      return { bytes: bytesOf(JSON.stringify(res.body)), list: res.body };
    };

    const report = (what: string, seen: Walk) =>
      console.info(
        `[${stack}] ${what}: ${seen.ids.length} objects in ${seen.pages.length} pages of ${seen.pages.map((p) => p.items).join(", ")}; ` +
          `largest page ${largestPage(seen)} bytes of a ${BUDGET}-byte budget`,
      );

    beforeAll(async () => {
      tenant = await server().tenant();
      api = rest(server().api, tenant.key);
      const client = await api.post("/clients", { name: "Budget Bureau", notes: "n".repeat(2_000) });
      expect(client.status).toBe(201);
      // Big and small invoices interleaved, so that pages hold different numbers of them.
      for (let n = 0; n < INVOICES; n++) {
        const line = (i: number) => ({ description: describeLine(n, i), quantity: 1.5, unit_price: 12.34 });
        const items = Array.from({ length: isBig(n) ? LINES : 1 }, (_, i) => line(i));
        const res = await api.post("/invoices", {
          client_id: client.body.id,
          notes: isBig(n) ? "N".repeat(1_000) : null,
          items,
        });
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(201);
        invoices.unshift(res.body.id);
      }
      const created = await walk(restPages("/events?type=invoice.created"));
      events = created.ids;
    }, 120_000);

    it("every list route of the OpenAPI document takes limit=100, and says 1–100", async () => {
      const document = await call<OpenApiDoc>("GET", `${server().api}/openapi.json`);
      const receiver: Receiver = await startReceiver();
      try {
        const sweepTenant = await server().tenant();
        const request = (method: string, path: string, body?: unknown) =>
          call(method, server().api + path, { key: sweepTenant.key, body });
        const fixtures = await sweepFixtures({
          doc: document.body,
          request,
          prisma: server().running.db.prisma,
          workspaceId: sweepTenant.workspaceId,
          receiverUrl: receiver.url("/budget"),
          label: "budget",
        });
        const lists = endpointsOf(document.body).filter(
          (e) => e.method === "GET" && e.queryParams.some((p) => p.name === "limit"),
        );
        const paths = lists.map((e) => e.path);
        expect(paths).toEqual(
          expect.arrayContaining(["/invoices", "/events", "/leads", "/projects/{project_id}/tasks"]),
        );
        // Every list field of GraphQL but apiKeys (the dashboard's, no route) has its route.
        expect(lists.length).toBeGreaterThanOrEqual(15);
        for (const endpoint of lists) {
          const limit = endpoint.queryParams.find((p) => p.name === "limit")!;
          expect(limit.schema, endpoint.label).toMatchObject({ minimum: 1, maximum: MAX_LIMIT });
          const path = await fixtures.concretePath(endpoint);
          // call() checks every answer against the OpenAPI document.
          const page = await request("GET", `${path}?limit=100`);
          expect(page.status, `${endpoint.label}: ${JSON.stringify(page.body).slice(0, 300)}`).toBe(200);
          expect(page.body).toMatchObject({
            object: "list",
            data: expect.any(Array),
            has_more: expect.any(Boolean),
          });
          const over = await request("GET", `${path}?limit=101`);
          expect(over.status, endpoint.label).toBe(400);
          expect(over.body.error).toMatchObject({ code: "validation_failed", param: "limit" });
        }
      } finally {
        await receiver.close();
      }
    }, 120_000);

    it("every list field of GraphQL takes limit: 100 with its largest selection", async () => {
      const query = schema.getQueryType()!;
      const project = await api.post("/projects", { name: "Largest" });
      const bucket = await api.post("/buckets", { name: `budget-${Date.now()}` });
      const ids: Record<string, string> = { project_id: project.body.id, bucket_id: bucket.body.id };
      const fields = Object.values(query.getFields()).filter((field) =>
        field.args.some((arg) => arg.name === "limit"),
      );
      expect(fields.length).toBeGreaterThanOrEqual(16);
      for (const field of fields) {
        const required = field.args
          .filter((arg) => isNonNullType(arg.type))
          .map((arg) => `${arg.name}: "${ids[arg.name]}"`);
        const selection = largestSelection(getNamedType(field.type) as GraphQLObjectType, 2, 0);
        const res = await graphql(
          `{ ${field.name}(${[...required, "limit: 100"].join(", ")}) { ${selection} } }`,
        );
        const codes = (res.json.errors ?? []).map(
          (error: { extensions: { code: string } }) => error.extensions.code,
        );
        expect(res.status, `${field.name}: ${JSON.stringify(res.json.errors)}`).toBe(200);
        // An API key is not a dashboard session: the owner-only list answers with that, and nothing else.
        expect(
          codes.filter((code: string) => code !== "session_required"),
          field.name,
        ).toEqual([]);
        expect(res.bytes).toBeLessThanOrEqual(BUDGET);
      }
    });

    it("REST: a page of big invoices stops at the budget, and the cursor walks them all once, in order", async () => {
      const seen = await walk(restPages("/invoices"));
      report("GET /v1/invoices?limit=100", seen);
      expect(seen.ids).toEqual(invoices);
      expect(seen.pages[0]!.items).toBeLessThan(invoices.length);
      expect(seen.pages.length).toBeGreaterThan(2);
      // Pages stop near the budget, not far below it: the items are weighed as they are, not at their worst.
      for (const page of seen.pages.slice(0, -1)) expect(page.bytes).toBeGreaterThan(BUDGET / 2);
    });

    it("REST: limit stays an upper bound below the budget", async () => {
      const res = await api.get("/invoices?limit=3");
      expect(res.body.data.map((i: { id: string }) => i.id)).toEqual(invoices.slice(0, 3));
      expect(res.body.has_more).toBe(true);
      expect(decodeCursor(res.body.next_cursor)).toBe(invoices[2]);
    });

    it("REST: events carrying big invoices are cut the same way (each weighed by its data)", async () => {
      const seen = await walk(restPages("/events?type=invoice.created"));
      report("GET /v1/events?limit=100", seen);
      expect(seen.ids).toEqual(events);
      expect(seen.ids).toHaveLength(invoices.length);
      expect(seen.pages[0]!.items).toBeLessThan(invoices.length);
      for (const page of seen.pages.slice(0, -1)) expect(page.bytes).toBeGreaterThan(BUDGET / 2);
    });

    const INVOICE_PAGE = `query ($cursor: String) {
      invoices(limit: 100, cursor: $cursor) {
        object has_more next_cursor
        data {
          object id invoice_number notes total balance_due
          items { description quantity unit_price amount } payments { id } client { id name notes }
        }
      }
    }`;

    it("GraphQL: the same walk, with items and the client of each invoice, within the budget", async () => {
      const seen = await walk(async (cursor) => {
        const res = await graphql(INVOICE_PAGE, { cursor });
        expect(res.json.errors).toBeUndefined();
        return { bytes: res.bytes, list: res.json.data.invoices };
      });
      report("GraphQL invoices(limit: 100) with items and client", seen);
      expect(seen.ids).toEqual(invoices);
      expect(seen.pages[0]!.items).toBeLessThan(invoices.length);
      for (const page of seen.pages.slice(0, -1)) expect(page.bytes).toBeGreaterThan(BUDGET / 2);
    });

    it("GraphQL: the page reads its items' relations with it, in one statement, to weigh them", async () => {
      const statements = await recordSql(() => graphql(INVOICE_PAGE, { cursor: null }));
      const reads = (table: string) => statements.filter((s) => s.sql.includes(`"public"."${table}"`));
      expect(reads("invoice_items")).toHaveLength(1);
      expect(reads("invoice_items")[0]!.sql).toContain(`FROM "public"."invoices"`);
      expect(reads("invoices")).toHaveLength(1);
    });

    it("GraphQL: two pages in one document share the budget; each continues where it stopped", async () => {
      const items = "data { id items { description } } has_more next_cursor";
      const res = await graphql(
        `{ a: invoices(limit: 100) { ${items} } b: invoices(limit: 100) { ${items} } }`,
      );
      expect(res.json.errors).toBeUndefined();
      expect(res.bytes).toBeLessThanOrEqual(BUDGET);
      const pages = [res.json.data.a, res.json.data.b] as {
        data: { id: string }[];
        has_more: boolean;
        next_cursor: string;
      }[];
      expect(pages[0]!.data.length + pages[1]!.data.length).toBeLessThan(invoices.length);
      for (const page of pages) {
        expect(page.data.map((i) => i.id)).toEqual(invoices.slice(0, page.data.length));
        expect(page.has_more).toBe(true);
        // Even a page left with no room at all continues at its first invoice.
        const next = await api.get(`/invoices?limit=1&cursor=${page.next_cursor}`);
        expect(next.body.data[0].id).toBe(invoices[page.data.length]);
      }
      console.info(
        `[${stack}] two pages in one document: ${pages.map((p) => p.data.length).join(" + ")} invoices, ${res.bytes} bytes`,
      );
    });

    it("GraphQL: a page left no room by the rest of the document holds nothing, and continues at its first item", async () => {
      const lead = (await api.post("/leads", { first_name: "Filler" })).body.id;
      const page = "page: invoices(limit: 100) { data { id items { description } } has_more next_cursor }";
      // Objects fetched by id are priced at their largest before any page is cut: add them, largest
      // first, until what they leave for the page is less than its first invoice weighs.
      const units = ["notes", "email", "first_name", "phone", "currency"];
      const parts: string[] = [];
      const left = (extra: string[]) => {
        const operation = parse(`{ ${[...extra, page].join(" ")} }`)
          .definitions[0] as OperationDefinitionNode;
        return (
          BUDGET -
          RESPONSE_RESERVE_BYTES -
          estimate(schema, () => undefined, operation.selectionSet, schema.getQueryType()!).bytes
        );
      };
      for (const field of units) {
        while (parts.length < GRAPHQL_LIMITS.maxAliases - 1) {
          const more = [...parts, `l${parts.length}: lead(id: "${lead}") { ${field} }`];
          if (left(more) < 0) break;
          parts.splice(0, parts.length, ...more);
        }
      }
      expect(left(parts)).toBeLessThan(300);
      const res = await graphql(`{ ${parts.join(" ")} ${page} }`);
      expect(res.json.errors).toBeUndefined();
      expect(res.bytes).toBeLessThanOrEqual(BUDGET);
      expect(res.json.data.page).toMatchObject({ data: [], has_more: true });
      const next = await api.get(`/invoices?limit=2&cursor=${res.json.data.page.next_cursor}`);
      expect(next.body.data.map((i: { id: string }) => i.id)).toEqual(invoices.slice(0, 2));
    });

    it("GraphQL: an item that no response could hold with its selection is query_too_costly, not an endless empty page", async () => {
      const copies = Array.from(
        { length: GRAPHQL_LIMITS.maxAliases - 1 },
        (_, i) => `i${i}: items { description }`,
      ).join(" ");
      // Past the newest (one line), a big invoice: fourteen copies of its 40 lines pass the budget.
      const query = `query ($c: String) { invoices(limit: 5, cursor: $c) { data { id ${copies} } } }`;
      const res = await graphql(query, { c: encodeCursor(invoices[0]!) });
      expect(res.status).toBe(200);
      expect(res.json.data).toBeNull();
      expect(res.json.errors).toHaveLength(1);
      expect(res.json.errors[0].extensions).toMatchObject({
        code: "query_too_costly",
        type: "invalid_request_error",
      });
      expect(res.json.errors[0].message).toMatch(
        /alone would take \d+\.\d MiB, over the 0\.3 MiB a response may carry/,
      );
    });

    it("GraphQL: a page of projects stops at the tasks it shows (a nested list inside the page)", async () => {
      const own = await server().tenant();
      const ownApi = rest(server().api, own.key);
      const projects: string[] = [];
      for (let p = 0; p < 8; p++) {
        const project = await ownApi.post("/projects", { name: `Nested ${p}` });
        projects.unshift(project.body.id);
        for (let t = 0; t < 12; t++) {
          const body = { title: `Task ${t}`, description: `${p}-${t} ${"d".repeat(3_000)}` };
          const task = await ownApi.post(`/projects/${project.body.id}/tasks`, body);
          expect(task.status).toBe(201);
        }
      }
      const seen = await walk(async (cursor) => {
        const res = await raw(`${server().url}/graphql`, {
          method: "POST",
          headers: { authorization: `Bearer ${own.key}`, "content-type": "application/json" },
          body: JSON.stringify({
            query: `query ($c: String) {
              projects(limit: 100, cursor: $c) { data { id name tasks { id title description } } has_more next_cursor }
            }`,
            variables: { c: cursor },
          }),
        });
        expect(res.json.errors).toBeUndefined();
        return { bytes: bytesOf(res.text), list: res.json.data.projects };
      });
      report("GraphQL projects(limit: 100) with tasks", seen);
      expect(seen.ids).toEqual(projects);
      expect(seen.pages.length).toBeGreaterThan(1);
    });
  },
  { KONTOR_RESPONSE_BUDGET_BYTES: String(BUDGET) },
);
