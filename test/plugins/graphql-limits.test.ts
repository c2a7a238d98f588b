import { getIntrospectionQuery } from "graphql";
import { beforeAll, describe, expect, it } from "vitest";
import { GRAPHQL_LIMITS } from "../../server/graphql/limits.ts";
import { inProcess, raw, rest } from "../support/in-process.ts";
import type { Tenant } from "../support/server.ts";

const REQUEST_ID = /^req_[0-9A-Za-z]+$/;

const LEAD_FIELDS = `object id first_name last_name full_name company_name email phone source notes stage priority
  estimated_value currency expected_close_date next_follow_up_at last_contacted_at stage_changed_at client_id created_at updated_at`;
const ADDRESS = "address { line1 line2 city region postal_code country }";
const CLIENT_FIELDS = `object id name email phone company_name tax_id ${ADDRESS} currency notes created_at updated_at`;
const INVOICE_FIELDS = `object id document_type invoice_number status client_id issue_date due_date tax_rate currency notes
  subtotal tax_amount total amount_paid balance_due overdue quote_id converted_invoice_id sent_at paid_at voided_at
  accepted_at declined_at created_at updated_at`;
const PAYMENT_FIELDS =
  "object id invoice_id amount currency payment_method reference payer_email paid_at notes created_at updated_at";
const PROJECT_FIELDS =
  "object id name description client_id status start_date due_date budget currency created_at updated_at";
const TASK_FIELDS =
  "object id project_id title description status priority assignee_email due_date completed_at created_at updated_at";

inProcess("GraphQL limits", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  let projectId: string;
  let invoiceId: string;
  let taskId: string;

  /** POST /graphql as a plain JSON client would. */
  const graphql = (query: string, variables?: Record<string, unknown>) =>
    raw(
      `${server().url}/graphql`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${tenant.key}`,
          "content-type": "application/json",
          accept: "application/json",
        },
        body: JSON.stringify({ query, variables }),
      },
      server().fetch,
    );

  /** A success: 200, no errors, the data. */
  async function ok(query: string, variables?: Record<string, unknown>) {
    const res = await graphql(query, variables);
    expect(res.json?.errors, JSON.stringify(res.json?.errors)).toBeUndefined();
    expect(res.status).toBe(200);
    return res.json.data;
  }

  /** A refusal before execution: 400, one error in the API's shape, no data at all. */
  async function refused(query: string, code: string, message: RegExp, variables?: Record<string, unknown>) {
    const res = await graphql(query, variables);
    expect(res.status, res.text).toBe(400);
    expect(res.json.errors).toHaveLength(1);
    const [error] = res.json.errors;
    expect(error.extensions).toMatchObject({
      code,
      type: "invalid_request_error",
      request_id: expect.stringMatching(REQUEST_ID),
    });
    expect(error.extensions.request_id).toBe(res.headers.get("x-request-id"));
    expect(error.message).toMatch(message);
    expect(error.message).not.toMatch(/Syntax Error|Did you mean|at .*\.(js|ts):\d+/);
    expect(res.json).not.toHaveProperty("data");
    return error;
  }

  const leadCount = async () => (await api.get("/leads?limit=100")).body.data.length as number;
  const taskCount = async () =>
    (await api.get(`/projects/${projectId}/tasks?limit=100`)).body.data.length as number;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key, server().fetch);
    const client = (
      await api.post("/clients", { name: "Limits Ltd", address: { city: "Lisbon", country: "PT" } })
    ).body;
    const project = (await api.post("/projects", { name: "Deep", client_id: client.id })).body;
    projectId = project.id;
    for (const title of ["One", "Two", "Three"]) {
      const task = await api.post(`/projects/${projectId}/tasks`, { title });
      expect(task.status).toBe(201);
      taskId = task.body.id;
    }
    const invoice = (
      await api.post("/invoices", {
        client_id: client.id,
        items: [
          { description: "Design", quantity: 10, unit_price: 100 },
          { description: "Hosting", quantity: 2, unit_price: 100 },
        ],
      })
    ).body;
    invoiceId = invoice.id;
    expect((await api.post(`/invoices/${invoiceId}/send`)).status).toBe(200);
    expect(
      (await api.post(`/invoices/${invoiceId}/payments`, { amount: 200, payment_method: "card" })).status,
    ).toBe(201);
    expect((await api.post("/leads", { first_name: "Ada" })).status).toBe(201);
  });

  describe("legitimate queries pass", () => {
    // A page is not priced by what its items could weigh (every invoice with 250 lines of 500
    // four-byte characters would be about 100 MB): it stops at run time at the response budget.
    it("a page of 100 invoices with every field, items, client and payments back to the invoice's client (depth 7)", async () => {
      const data = await ok(`{
        invoices(limit: 100) {
          data {
            ${INVOICE_FIELDS}
            items { description quantity unit_price amount }
            client { ${CLIENT_FIELDS} }
            payments { ${PAYMENT_FIELDS} invoice { id client { ${ADDRESS} } } }
          }
          has_more next_cursor
        }
      }`);
      const invoice = data.invoices.data.find((i: { id: string }) => i.id === invoiceId);
      expect(invoice.items).toHaveLength(2);
      expect(invoice.client.address.city).toBe("Lisbon");
      expect(invoice.payments).toHaveLength(1);
      expect(invoice.payments[0].invoice).toEqual({
        id: invoiceId,
        client: { address: expect.objectContaining({ city: "Lisbon" }) },
      });
    });

    it("a page of 5 projects with their client and tasks, each task with its project (lists nested 2 deep)", async () => {
      const data = await ok(`{
        projects(limit: 5) {
          data { ${PROJECT_FIELDS} client { ${CLIENT_FIELDS} } tasks { ${TASK_FIELDS} project { id name } } }
        }
      }`);
      const [project] = data.projects.data;
      expect(project.id).toBe(projectId);
      expect(project.tasks).toHaveLength(3);
      expect(project.tasks.every((t: { project: { id: string } }) => t.project.id === projectId)).toBe(true);
    });

    it(`fragments, a page size in a variable and ${GRAPHQL_LIMITS.maxAliases} aliases`, async () => {
      const aliases = Array.from(
        { length: GRAPHQL_LIMITS.maxAliases - 1 },
        (_, i) => `p${i}: project(id: $project) { ...P }`,
      ).join("\n");
      const data = await ok(
        `query Dashboard($limit: Int, $project: ID!) {
          recent: leads(limit: $limit) { data { ...L client { ...C } } has_more }
          ${aliases}
          workspace { id plan limits { requests_per_minute } }
        }
        fragment L on Lead { ${LEAD_FIELDS} }
        fragment C on Client { ${CLIENT_FIELDS} }
        fragment P on Project { id name client { ...C } tasks { id title } }`,
        { limit: 100, project: projectId },
      );
      expect(data.recent.data.map((l: { first_name: string }) => l.first_name)).toContain("Ada");
      expect(data.p0.tasks).toHaveLength(3);
      expect(data[`p${GRAPHQL_LIMITS.maxAliases - 2}`].client.address.city).toBe("Lisbon");
    });

    it("GraphiQL's introspection query (deeper than the limit, but introspection is not limited)", async () => {
      const data = await ok(getIntrospectionQuery());
      expect(data.__schema.queryType.name).toBe("Query");
    });
  });

  describe("depth", () => {
    it(`over ${GRAPHQL_LIMITS.maxDepth} levels: 400 query_too_deep, and the mutation does not run`, async () => {
      const before = await taskCount();
      const deep = `mutation { createTask(project_id: "${projectId}", title: "Too deep") {
        project { tasks { project { tasks { project { client { address { city } } } } } } } } }`;
      await refused(deep, "query_too_deep", /depth limit of 8 exceeded, found 9/);
      expect(await taskCount()).toBe(before);
    });

    it("counts the fields inside fragments, not the fragments", async () => {
      await refused(
        `{ task(id: "${taskId}") { ...A } }
        fragment A on Task { project { tasks { project { tasks { ...B } } } } }
        fragment B on Task { project { client { address { city } } } }`,
        "query_too_deep",
        /depth limit of 8 exceeded, found 9/,
      );
      // The same fields one level shorter pass.
      const data = await ok(
        `{ task(id: "${taskId}") { ...A } }
        fragment A on Task { project { tasks { project { tasks { ...B } } } } }
        fragment B on Task { project { client { name } } }`,
      );
      expect(data.task.project.tasks[0].project.tasks[0].project.client.name).toBe("Limits Ltd");
    });
  });

  describe("aliases", () => {
    it(`over ${GRAPHQL_LIMITS.maxAliases}: 400 too_many_aliases, and none of the aliased mutations runs`, async () => {
      const before = await leadCount();
      const creates = Array.from(
        { length: GRAPHQL_LIMITS.maxAliases + 1 },
        (_, i) => `l${i}: createLead(first_name: "Alias ${i}") { id }`,
      );
      await refused(
        `mutation { ${creates.join("\n")} }`,
        "too_many_aliases",
        /Aliases limit of 15 exceeded, found 16/,
      );
      expect(await leadCount()).toBe(before);
    });
  });

  describe("cost", () => {
    it("lists of lists of lists are refused before execution (query)", async () => {
      await refused(
        "{ projects { data { tasks { project { tasks { project { tasks { id } } } } } } } }",
        "query_too_costly",
        /Lists nested 4 deep \(projects\.data\.tasks\.project\.tasks\.project\.tasks\) exceed the limit of 2/,
      );
    });

    it("lists of lists of lists are refused before execution (mutation: nothing is written)", async () => {
      const before = await taskCount();
      await refused(
        `mutation { createTask(project_id: "${projectId}", title: "Cubed") { project { tasks { project { tasks { project { tasks { id } } } } } } } }`,
        "query_too_costly",
        /Lists nested 3 deep .* exceed the limit of 2/,
      );
      expect(await taskCount()).toBe(before);
    });

    it("lists nested through fragments count as nested", async () => {
      await refused(
        `{ invoices { data { ...I } } } fragment I on Invoice { payments { invoice { items { amount } } } }`,
        "query_too_costly",
        /Lists nested 3 deep \(invoices\.data\.payments\.invoice\.items\)/,
      );
    });

    it(`aliases multiplying pages (over ${GRAPHQL_LIMITS.maxCost} values, though small): 400 query_too_costly; smaller pages pass`, async () => {
      // Each invoice counts its 250 possible lines and 100 payments (853 values): 15 pages of 100 are
      // 1 279 530 values, of 60 are 767 730, whatever the pages end up holding.
      const pages = (limit: string) =>
        Array.from(
          { length: 15 },
          (_, i) =>
            `i${i}: invoices(limit: ${limit}) { data { id items { quantity unit_price amount } payments { amount } } }`,
        ).join("\n");
      await refused(
        `{ ${pages("100")} }`,
        "query_too_costly",
        /Query cost limit of 1000000 exceeded, found 1279530/,
      );
      // A page size in a variable counts as the largest page: validation does not see variables.
      await refused(
        `query($n: Int) { ${pages("$n")} }`,
        "query_too_costly",
        /Query cost limit of 1000000 exceeded/,
        { n: 10 },
      );
      const data = await ok(`{ ${pages("60")} }`);
      expect(data.i14.data.find((i: { id: string }) => i.id === invoiceId).items).toHaveLength(2);
    });

    it("requestLogStats is priced by the days it aggregates: 90 days in a document, not 180", async () => {
      const stats = (days: number, n = 1) =>
        Array.from(
          { length: n },
          (_, i) => `s${i}: requestLogStats(days: ${days}) { total daily { date } }`,
        ).join("\n");
      expect((await ok(`{ ${stats(90)} }`)).s0.daily).toHaveLength(90);
      await refused(
        `{ ${stats(90, 2)} }`,
        "query_too_costly",
        /Query cost limit of 1000000 exceeded, found 18\d{5}/,
      );
      // Its default is 30 days; a number of days in a variable counts as the most, 90.
      await refused(`{ ${stats(30, 4).replaceAll("(days: 30)", "")} }`, "query_too_costly", /found 12\d{5}/);
      const unknown =
        "query($d: Int) { a: requestLogStats(days: $d) { total } b: requestLogStats(days: 11) { total } }";
      await refused(unknown, "query_too_costly", /found 101\d{4}/, { d: 1 });
      expect(Object.keys(await ok(`{ ${stats(1, GRAPHQL_LIMITS.maxAliases)} }`))).toHaveLength(
        GRAPHQL_LIMITS.maxAliases,
      );
    });
  });

  describe("tokens and directives", () => {
    it(`over ${GRAPHQL_LIMITS.maxTokens} tokens: 400 too_many_tokens`, async () => {
      await refused(
        `{ workspace { ${"id ".repeat(GRAPHQL_LIMITS.maxTokens)} } }`,
        "too_many_tokens",
        /Token limit of 5000 exceeded/,
      );
    });

    it(`over ${GRAPHQL_LIMITS.maxDirectives} directives: 400 too_many_directives`, async () => {
      const fields = Array.from(
        { length: GRAPHQL_LIMITS.maxDirectives + 1 },
        () => "id @include(if: true)",
      ).join(" ");
      await refused(
        `{ workspace { ${fields} } }`,
        "too_many_directives",
        /Directives limit of 20 exceeded, found 21/,
      );
    });
  });

  it("validation errors keep their code and carry no field suggestions", async () => {
    const res = await graphql("{ workspace { nmae } }");
    expect(res.json.errors).toHaveLength(1);
    expect(res.json.errors[0].extensions).toMatchObject({
      code: "validation_failed",
      type: "invalid_request_error",
    });
    expect(res.json.errors[0].message).toContain('Cannot query field "nmae" on type "Workspace".');
    expect(res.json.errors[0].message).not.toContain("Did you mean");
  });
});
