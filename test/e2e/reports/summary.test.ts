import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import { type Api, expectError, newClient, newDocument, post } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * `GET /summary` and `summary` (docs/api/README.md#the-business-summary): every figure equals what the API's
 * own objects add up to, listed and summed here exactly (in cents), per currency; an empty
 * workspace is all zeros; a key without one of the four read scopes is refused.
 */

const DAY = 86_400_000;
const date = (offsetDays: number) => new Date(Date.now() + offsetDays * DAY).toISOString().slice(0, 10);
const cents = (amount: number) => Math.round(amount * 100);

interface Total {
  currency: string;
  amount: number;
  count: number;
}

/** Totals per currency, sorted by currency, summed in integer cents. */
function totals(rows: { currency: string; amount: number }[]): Total[] {
  const sums = new Map<string, { cents: number; count: number }>();
  for (const row of rows) {
    const sum = sums.get(row.currency) ?? { cents: 0, count: 0 };
    sums.set(row.currency, { cents: sum.cents + cents(row.amount), count: sum.count + 1 });
  }
  return [...sums]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([currency, sum]) => ({ currency, amount: sum.cents / 100, count: sum.count }));
}

const SUMMARY_FIELDS = `object as_of today month_start
  invoices_by_status { status count } quotes_by_status { status count }
  outstanding { currency amount count } overdue { currency amount count }
  paid_this_month { currency amount count }
  leads_by_stage { stage count value { currency amount count } } pipeline { currency amount count }
  stock { status count } open_tasks overdue_tasks`;

e2e("the business summary", (server) => {
  let tenant: Tenant;
  let api: Api;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    const eur = await newClient(api, { name: "Euro GmbH", currency: "EUR" });
    const usd = await newClient(api, { name: "Dollar Inc" });
    const line = (unit_price: number, quantity = 1) => [{ description: "Work", quantity, unit_price }];
    const sent = async (body: Record<string, unknown>) =>
      post(api, `/invoices/${(await newDocument(api, { issue_date: date(-60), ...body })).id}/send`);
    const pay = (id: string, amount: number, paid_at?: string) =>
      post(api, `/invoices/${id}/payments`, {
        amount,
        payment_method: "bank_transfer",
        ...(paid_at && { paid_at }),
      });

    // Outstanding: sent ones, one part paid; amounts whose float sums are not exact (0.1 + 0.2).
    await sent({ client_id: eur, currency: "EUR", items: line(0.1), due_date: date(10) });
    await sent({ client_id: eur, currency: "EUR", items: line(0.2), due_date: date(-3) });
    const partPaid = await sent({ client_id: eur, currency: "EUR", items: line(19.99, 3), tax_rate: 7.25 });
    await pay(partPaid.id, 10.01);
    await sent({ client_id: usd, currency: "USD", items: line(1200), due_date: date(-30) });
    // Paid in full (this month and last month's payment), a void one, a draft past due.
    const paid = await sent({ client_id: usd, currency: "USD", items: line(500) });
    await pay(
      paid.id,
      200,
      new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1) - DAY).toISOString(),
    );
    await pay(paid.id, 300);
    const voided = await sent({ client_id: usd, currency: "USD", items: line(99), due_date: date(-5) });
    await post(api, `/invoices/${voided.id}/void`);
    await newDocument(api, {
      client_id: usd,
      currency: "USD",
      items: line(42),
      issue_date: date(-9),
      due_date: date(-2),
    });
    // Quotes: one accepted, one draft.
    const quote = await newDocument(api, { client_id: eur, document_type: "quote", currency: "EUR" });
    await post(api, `/invoices/${quote.id}/accept`);
    await newDocument(api, { client_id: eur, document_type: "quote" });

    for (const lead of [
      { first_name: "A", stage: "new", estimated_value: 1000.1, currency: "EUR" },
      { first_name: "B", stage: "qualified", estimated_value: 0.2, currency: "EUR" },
      { first_name: "C", stage: "qualified", estimated_value: 250, currency: "USD" },
      { first_name: "D", stage: "proposal" },
      { first_name: "E", stage: "won", estimated_value: 5000, currency: "USD" },
      { first_name: "F", stage: "lost", estimated_value: 70, currency: "USD" },
    ])
      expect((await api.post("/leads", lead)).status).toBe(201);

    for (const item of [
      { name: "Paper", quantity: 100, min_stock_threshold: 10 },
      { name: "Toner", quantity: 2, min_stock_threshold: 5 },
      { name: "Staples", quantity: 0, min_stock_threshold: 1 },
    ])
      expect((await api.post("/inventory/items", item)).status).toBe(201);

    const project = await post(api, "/projects", { name: "Move office" });
    for (const task of [
      { title: "Pack", status: "todo", due_date: date(-1) },
      { title: "Book van", status: "in_progress", due_date: date(5) },
      { title: "Label boxes", status: "todo" },
      { title: "Find office", status: "done", due_date: date(-20) },
    ])
      expect((await api.post(`/projects/${project.id}/tasks`, task)).status).toBe(201);
  });

  /** What the API's objects add up to, listed through the API. */
  async function expected() {
    const invoices = (await api.get("/invoices?limit=100")).body.data as any[];
    const payments = invoices.flatMap((doc) => doc.payments as any[]);
    const leads = (await api.get("/leads?limit=100")).body.data as any[];
    const items = (await api.get("/inventory/items?limit=100")).body.data as any[];
    const projects = (await api.get("/projects?limit=100")).body.data as any[];
    const tasks = (
      await Promise.all(
        projects.map(async (p) => (await api.get(`/projects/${p.id}/tasks?limit=100`)).body.data),
      )
    ).flat() as any[];
    const monthStart = new Date().toISOString().slice(0, 8);
    const count = <T>(rows: T[], test: (row: T) => boolean) => rows.filter(test).length;
    const ofType = (type: string) => invoices.filter((doc) => doc.document_type === type);
    const balance = (doc: any) => ({ currency: doc.currency, amount: doc.balance_due });
    const value = (lead: any) => ({ currency: lead.currency, amount: lead.estimated_value });
    const withValue = (stages: string[]) =>
      leads.filter((lead) => stages.includes(lead.stage) && lead.estimated_value !== null);
    const today = new Date().toISOString().slice(0, 10);
    return {
      invoices_by_status: ["draft", "sent", "partially_paid", "paid", "void"].map((status) => ({
        status,
        count: count(ofType("invoice"), (doc) => doc.status === status),
      })),
      quotes_by_status: ["draft", "sent", "accepted", "declined", "converted"].map((status) => ({
        status,
        count: count(ofType("quote"), (doc) => doc.status === status),
      })),
      outstanding: totals(
        ofType("invoice")
          .filter((doc) => ["sent", "partially_paid"].includes(doc.status))
          .map(balance),
      ),
      overdue: totals(invoices.filter((doc) => doc.overdue).map(balance)),
      paid_this_month: totals(payments.filter((p) => p.paid_at.startsWith(monthStart))),
      leads_by_stage: ["new", "contacted", "qualified", "proposal", "won", "lost"].map((stage) => ({
        stage,
        count: count(leads, (lead) => lead.stage === stage),
        value: totals(withValue([stage]).map(value)),
      })),
      pipeline: totals(withValue(["new", "contacted", "qualified", "proposal"]).map(value)),
      stock: ["in_stock", "low_stock", "out_of_stock"].map((status) => ({
        status,
        count: count(items, (item) => item.status === status),
      })),
      open_tasks: count(tasks, (task) => task.status !== "done"),
      overdue_tasks: count(
        tasks,
        (task) => task.status !== "done" && task.due_date !== null && task.due_date < today,
      ),
    };
  }

  it("adds up, on REST, to what the API's own objects add up to, exactly and per currency", async () => {
    const res = await api.get("/summary");
    expect(res.status).toBe(200);
    const want = await expected();
    expect(res.body).toEqual({
      object: "summary",
      as_of: expect.any(String),
      today: new Date().toISOString().slice(0, 10),
      month_start: `${new Date().toISOString().slice(0, 8)}01`,
      ...want,
    });
    // The seed's own arithmetic (EUR: 0.1 + 0.2 + 3 × 19.99 with 7.25 % tax − 10.01 paid), so the
    // comparison above cannot hold by both sides being empty.
    expect(res.body.outstanding).toEqual([
      { currency: "EUR", amount: 54.61, count: 3 },
      { currency: "USD", amount: 1200, count: 1 },
    ]);
    expect(res.body.overdue).toEqual([
      { currency: "EUR", amount: 0.2, count: 1 },
      { currency: "USD", amount: 1242, count: 2 },
    ]);
    expect(res.body.paid_this_month).toEqual([
      { currency: "EUR", amount: 10.01, count: 1 },
      { currency: "USD", amount: 300, count: 1 },
    ]);
    expect(res.body.pipeline).toEqual([
      { currency: "EUR", amount: 1000.3, count: 2 },
      { currency: "USD", amount: 250, count: 1 },
    ]);
    expect(res.body.stock).toEqual([
      { status: "in_stock", count: 1 },
      { status: "low_stock", count: 1 },
      { status: "out_of_stock", count: 1 },
    ]);
    expect([res.body.open_tasks, res.body.overdue_tasks]).toEqual([3, 1]);
  });

  it("answers the same over GraphQL", async () => {
    const gql = graphql(server().url, tenant.key);
    const answer = await gql(`{ summary { ${SUMMARY_FIELDS} } }`);
    expect(answer.errors).toBeUndefined();
    const rest = (await api.get("/summary")).body;
    expect({ ...answer.data.summary, as_of: null }).toEqual({ ...rest, as_of: null });
  });

  describe("refusals and the empty case", () => {
    it("is all zeros and empty lists for a new workspace", async () => {
      const fresh = rest(server().api, (await server().tenant()).key);
      const res = await fresh.get("/summary");
      expect(res.status).toBe(200);
      expect(res.body.outstanding).toEqual([]);
      expect(res.body.pipeline).toEqual([]);
      expect(res.body.invoices_by_status.every((row: { count: number }) => row.count === 0)).toBe(true);
      expect(res.body.leads_by_stage.map((row: { value: unknown[] }) => row.value)).toEqual([
        [],
        [],
        [],
        [],
        [],
        [],
      ]);
      expect([res.body.open_tasks, res.body.overdue_tasks]).toEqual([0, 0]);
    });

    it("needs the four read scopes: a key without projects.read is 403 insufficient_scope", async () => {
      const own = await server().tenant({ scopes: ["invoices.read", "leads.read", "inventory.read"] });
      const res = await rest(server().api, own.key).get("/summary");
      expectError(res, 403, "insufficient_scope");
      expect(res.body.error.required_scope).toBe("projects.read");
    });

    it("takes no parameters: an unknown one is 400 validation_failed", async () => {
      const res = await api.get("/summary?days=7");
      expectError(res, 400, "validation_failed", "days");
    });
  });
});
