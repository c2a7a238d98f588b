import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { shownMoney } from "../../support/business.ts";
import {
  addMember,
  createUser,
  openSignedIn,
  screenshots,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import type { Api } from "../../support/workspace.ts";

/**
 * The overview (docs/dashboard.md): a seeded workspace's figures as the screen shows them equal
 * GET /summary's — the exact amount of each currency in `data-amount`, the text as the browser
 * formats it — for its owner and for a member; the charts carry the counts; recent activity
 * names the events with links to their objects; a new workspace reads "None" everywhere.
 */

const browser = useChromium();
const DAY = 86_400_000;
const date = (offsetDays: number) => new Date(Date.now() + offsetDays * DAY).toISOString().slice(0, 10);

e2e("the dashboard's overview", (server) => {
  let owner: TestUser;
  let api: Api;

  beforeAll(async () => {
    owner = await createUser(server(), { label: "overview", plan: "pro", workspaceName: "Corner Bakery" });
    api = rest(server().api, (await server().key(owner.workspaceId, [...SCOPES])).key);
    const client = (await api.post("/clients", { name: "Café Central", currency: "EUR" })).body.id;
    const invoice = async (body: Record<string, unknown>) => {
      const created = await api.post("/invoices", {
        client_id: client,
        currency: "EUR",
        issue_date: date(-40),
        ...body,
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect((await api.post(`/invoices/${created.body.id}/send`)).status).toBe(200);
      return created.body.id as string;
    };
    await invoice({ items: [{ description: "Croissants", quantity: 3, unit_price: 19.99 }], tax_rate: 7.25 });
    const late = await invoice({
      items: [{ description: "Cakes", quantity: 1, unit_price: 0.1 }],
      due_date: date(-3),
    });
    await invoice({ items: [{ description: "Bread", quantity: 1, unit_price: 0.2 }], due_date: date(-1) });
    expect(
      (await api.post(`/invoices/${late}/payments`, { amount: 0.05, payment_method: "cash" })).status,
    ).toBe(201);
    for (const lead of [
      { full_name: "Hotel Sacher", stage: "proposal", estimated_value: 1200.1, currency: "EUR" },
      { full_name: "Wedding Planners", stage: "new", estimated_value: 0.2, currency: "EUR" },
      { full_name: "Tourist Office", stage: "won", estimated_value: 90, currency: "EUR" },
    ])
      expect((await api.post("/leads", lead)).status).toBe(201);
    expect(
      (await api.post("/inventory/items", { name: "Flour", quantity: 2, min_stock_threshold: 10 })).status,
    ).toBe(201);
    const project = (await api.post("/projects", { name: "Summer menu" })).body.id;
    expect(
      (await api.post(`/projects/${project}/tasks`, { title: "Taste cakes", due_date: date(-2) })).status,
    ).toBe(201);
  });

  /** What the screen shows: each figure's amounts (exact and as text) and its detail line. */
  async function figures(page: Page) {
    const read = async (id: string) => {
      const value = page.getByTestId(id);
      const amounts = await value
        .locator(".overview-amount")
        .evaluateAll((spans) =>
          spans.map((span) => ({ exact: span.getAttribute("data-amount"), text: span.textContent })),
        );
      return amounts;
    };
    await page.getByTestId("outstanding").waitFor();
    return {
      outstanding: await read("outstanding"),
      overdue: await read("overdue"),
      paid: await read("paid-this-month"),
      pipeline: await read("pipeline"),
      stock: await read("stock"),
      tasks: await read("tasks"),
    };
  }

  async function open(user: TestUser, workspace?: string) {
    const dashboard = await openSignedIn(browser(), server(), user, { workspace });
    await dashboard.page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    return dashboard;
  }

  it("shows the owner the figures GET /summary computes, exactly, with the charts and recent activity", async () => {
    const summary = (await api.get("/summary")).body;
    // The seed's arithmetic: 64.32 + 0.10 − 0.05 + 0.20 owed; 0.05 + 0.20 overdue.
    expect(summary.outstanding).toEqual([{ currency: "EUR", amount: 64.57, count: 3 }]);
    const dashboard = await open(owner);
    const { page } = dashboard;
    expect(await page.evaluate(() => navigator.language)).toBe("en-US");
    const shown = await figures(page);
    const exactly = (totals: { amount: number }[]) =>
      totals.map((total) => ({ exact: total.amount.toFixed(2), text: shownMoney(total.amount, "EUR") }));
    expect(shown.outstanding).toEqual(exactly(summary.outstanding));
    expect(shown.overdue).toEqual(exactly(summary.overdue));
    expect(shown.overdue).toEqual([{ exact: "0.25", text: "€0.25" }]);
    expect(shown.paid).toEqual(exactly(summary.paid_this_month));
    expect(shown.pipeline).toEqual([{ exact: "1200.30", text: "€1,200.30" }]);
    expect(shown.pipeline).toEqual(exactly(summary.pipeline));
    expect(shown.stock.map((amount) => amount.text)).toEqual(["1"]);
    expect(shown.tasks.map((amount) => amount.text)).toEqual([String(summary.open_tasks)]);
    expect(await page.getByTestId("overdue").locator("..").textContent()).toContain("2 invoices past due");

    // The charts carry the counts for screen readers (and draw them).
    const invoicesChart = page.getByRole("img", { name: /^Invoices by status:/ });
    expect(await invoicesChart.getAttribute("aria-label")).toBe(
      `Invoices by status: ${summary.invoices_by_status.map((row: any) => `${row.status.replaceAll("_", " ")} ${row.count}`).join(", ")}`,
    );
    expect(await page.getByRole("img", { name: /^Leads by stage:/ }).getAttribute("aria-label")).toBe(
      "Leads by stage: new 1, contacted 0, qualified 0, proposal 1, won 1, lost 0",
    );

    // Recent activity: the latest events, in words, each linking to its object.
    const activity = page
      .locator(".panel", { has: page.getByRole("heading", { name: "Recent activity" }) })
      .getByRole("listitem");
    await expect.poll(() => activity.count()).toBe(8);
    const texts = await activity.getByRole("link").allTextContents();
    expect(texts).toContain("Flour is low on stock");
    expect(texts).toContain("New lead: Tourist Office");
    await page.getByRole("link", { name: "Flour is low on stock" }).click();
    await page.waitForURL(/\/dashboard\/inventory\/item_/);
    // A detail screen marks its list's entry in the navigation as where the user is.
    const nav = page.getByRole("navigation", { name: "Dashboard" });
    expect(await nav.getByRole("link", { name: "Inventory", exact: true }).getAttribute("aria-current")).toBe(
      "location",
    );
    expect(
      await nav.getByRole("link", { name: "Overview", exact: true }).getAttribute("aria-current"),
    ).toBeNull();
    await page.goBack();
    await page.getByTestId("outstanding").waitFor();
    await screenshots(page, "overview-business");
    await dashboard.close();
  });

  it("shows a member the same figures", async () => {
    const member = await createUser(server(), { label: "overview-member" });
    await addMember(server(), owner, member, "member");
    const dashboard = await open(member, "Corner Bakery (member)");
    const shown = await figures(dashboard.page);
    const summary = (await api.get("/summary")).body;
    expect(shown.outstanding.map((amount) => amount.exact)).toEqual(
      summary.outstanding.map((total: { amount: number }) => total.amount.toFixed(2)),
    );
    expect(shown.pipeline.map((amount) => amount.text)).toEqual(["€1,200.30"]);
    await dashboard.close();
  });

  describe("a new workspace", () => {
    it("reads None and zero, and says where activity will show", async () => {
      const fresh = await createUser(server(), { label: "overview-empty" });
      const dashboard = await open(fresh);
      const shown = await figures(dashboard.page);
      expect(shown.outstanding).toEqual([{ exact: null, text: "None" }]);
      expect(shown.pipeline).toEqual([{ exact: null, text: "None" }]);
      expect(shown.tasks.map((amount) => amount.text)).toEqual(["0"]);
      await dashboard.page.getByText("Nothing yet: new leads, invoices and payments show up here.").waitFor();
      await screenshots(dashboard.page, "overview-empty");
      await dashboard.close();
    });
  });
});
