import type { Locator, Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { inBatches, userGraphql } from "../../support/business.ts";
import {
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  openSignedIn,
  screenshots,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The leads and clients screens in headless Chromium: the pipeline by stage (counts, totals per
 * currency to the cent, a lead moved with its Stage menu by keyboard and by dragging, the API then
 * holding the new stage), the table with its stage and search filters in the URL and "Show more",
 * a lead made by keyboard alone (an e-mail the API refuses shown under its field only), edited,
 * converted into a client and deleted; clients searched, paged, made, edited, shown with their
 * invoices, quotes and projects, and a delete the API refuses; and a member doing the same.
 */

const browser = useChromium();

/** The fields of a lead the tests read back from the API. */
interface ApiLead {
  id: string;
  full_name: string;
  company_name: string | null;
  email: string | null;
  stage: string;
  priority: string;
  estimated_value: number | null;
  currency: string;
  client_id: string | null;
}
const LEAD = "id full_name company_name email stage priority estimated_value currency client_id";

e2e("the dashboard's leads and clients", (server) => {
  let owner: TestUser;

  beforeAll(async () => {
    // Pro: the pipeline asks for six columns at a time, and the tests seed dozens of records.
    owner = await createUser(server(), { label: "crm-owner", plan: "pro", workspaceName: "Sales Desk" });
  });

  /** A workspace of its own for a test, with the owner's session from Node for seeding and checking. */
  const workspace = async (label: string) => {
    const user = await createUser(server(), { label, plan: "pro" });
    return { user, ...(await api(user)) };
  };

  const api = async (user: TestUser) => {
    const gql = await userGraphql(server(), user);
    return {
      gql,
      /** Creates leads, in the order given. */
      seedLeads: (leads: Record<string, unknown>[]) =>
        inBatches<ApiLead>(
          gql,
          leads.map((lead) => {
            const args = Object.entries(lead)
              .map(([name, value]) =>
                ["stage", "priority"].includes(name)
                  ? `${name}: ${value}`
                  : `${name}: ${JSON.stringify(value)}`,
              )
              .join(", ");
            return `createLead(${args}) { ${LEAD} }`;
          }),
        ),
      lead: async (id: string) =>
        (await gql<{ lead: ApiLead }>(`query($id: ID!) { lead(id: $id) { ${LEAD} } }`, { id })).lead,
      leads: async () =>
        (await gql<{ leads: { data: ApiLead[] } }>(`{ leads(limit: 100) { data { ${LEAD} } } }`)).leads.data,
      seedClients: (names: string[]) =>
        inBatches<{ id: string; name: string }>(
          gql,
          names.map((name) => `createClient(name: ${JSON.stringify(name)}) { id name }`),
        ),
    };
  };

  /** Signed in through the UI, on `path`, in the workspace named `workspaceName` when given. */
  const open = async (user: TestUser, path: string, workspaceName?: string): Promise<DashboardPage> => {
    const dashboard = await openSignedIn(browser(), server(), user, { workspace: workspaceName });
    const nav = path.startsWith("/dashboard/clients") ? "Clients" : "Leads";
    await dashboard.page.getByRole("link", { name: nav, exact: true }).click();
    await dashboard.page.getByRole("heading", { level: 1, name: nav }).waitFor();
    if (path !== `/dashboard/${nav.toLowerCase()}`) await dashboard.goto(path);
    return dashboard;
  };

  const column = (page: Page, stage: string) => page.getByRole("region", { name: stage, exact: true });
  const card = (page: Page, stage: string, name: string) =>
    column(page, stage).getByRole("listitem").filter({ hasText: name });
  const columnState = async (page: Page, stage: string) => ({
    count: await column(page, stage).getByTestId("column-count").textContent(),
    total: await column(page, stage).getByTestId("column-total").textContent(),
  });
  const tableRows = (page: Page, caption: string) =>
    page.getByRole("table", { name: caption }).locator("tbody tr");
  const fieldError = (scope: Page | Locator) => scope.locator(".field-error");

  it("shows the pipeline by stage with counts and totals per currency to the cent, and moves a lead with its Stage menu by keyboard and by dragging: the API holds each new stage", async () => {
    const { user, gql, seedLeads, lead } = await workspace("crm-pipeline");
    const [ada, grace, , emilie, , kurt] = await seedLeads([
      {
        first_name: "Ada",
        last_name: "Lovelace",
        company_name: "Analytical Engines",
        estimated_value: 1234.5,
        currency: "USD",
        priority: "high",
        next_follow_up_at: "2031-05-01T09:30:00Z",
      },
      { first_name: "Grace", last_name: "Hopper", estimated_value: 0.1, currency: "USD" },
      { first_name: "Alan", last_name: "Turing", estimated_value: 0.2, currency: "USD", priority: "urgent" },
      {
        first_name: "Émilie",
        last_name: "du Châtelet",
        stage: "qualified",
        estimated_value: 999999999999.99,
        currency: "EUR",
      },
      {
        first_name: "Pierre",
        last_name: "Varignon",
        stage: "qualified",
        estimated_value: 0.01,
        currency: "EUR",
      },
      { first_name: "Kurt", last_name: "Gödel", stage: "qualified", estimated_value: 15, currency: "USD" },
    ]);
    // What the API returns is what the cards must show, to the cent.
    expect([ada!.estimated_value, grace!.estimated_value, emilie!.estimated_value]).toEqual([
      1234.5, 0.1, 999999999999.99,
    ]);

    const dashboard = await open(user, "/dashboard/leads");
    const { page } = dashboard;
    expect(await page.evaluate(() => navigator.language)).toBe("en-US");
    await card(page, "New", "Ada Lovelace").waitFor();
    expect(new URL(page.url()).search).toBe("");
    expect(await page.getByRole("link", { name: "Pipeline" }).getAttribute("aria-current")).toBe("page");
    const adaCard = card(page, "New", "Ada Lovelace");
    expect(await adaCard.getByTestId("lead-value").textContent()).toBe("$1,234.50");
    expect(await adaCard.textContent()).toContain("Analytical Engines");
    expect(await adaCard.textContent()).toContain("High priority");
    expect(await adaCard.textContent()).toMatch(/Next follow-upMay 1, 2031/);
    expect(await columnState(page, "New")).toEqual({ count: "3 leads", total: "Total $1,234.80" });
    // Newest first: what the API added last is on top.
    expect(
      await column(page, "Qualified").getByRole("listitem").locator(".crm-card-name").allTextContents(),
    ).toEqual(["Kurt Gödel", "Pierre Varignon", "Émilie du Châtelet"]);
    expect(await columnState(page, "Qualified")).toEqual({
      count: "3 leads",
      total: "Total $15.00 · €1,000,000,000,000.00",
    });
    expect(await columnState(page, "Won")).toEqual({ count: "0 leads", total: "No estimated value" });
    await column(page, "Won").getByText("No leads.").waitFor();
    await screenshots(page, "leads-pipeline");

    // By keyboard: the Stage menu moves the card, and focus goes with it to its new column.
    await page.getByLabel("Stage of Ada Lovelace").focus();
    await page.keyboard.press("ArrowDown");
    await card(page, "Contacted", "Ada Lovelace").waitFor();
    expect(await card(page, "New", "Ada Lovelace").count()).toBe(0);
    const focused = () =>
      page.evaluate(() => [
        document.activeElement?.closest("section")?.getAttribute("data-stage"),
        document.activeElement?.getAttribute("data-stage-of"),
      ]);
    await expect.poll(focused).toEqual(["contacted", ada!.id]);
    expect(await columnState(page, "New")).toEqual({ count: "2 leads", total: "Total $0.30" });
    expect(await columnState(page, "Contacted")).toEqual({ count: "1 lead", total: "Total $1,234.50" });
    await expect.poll(async () => (await lead(ada!.id)).stage).toBe("contacted");
    await page.getByRole("status").filter({ hasText: "Ada Lovelace moved to Contacted." }).waitFor();
    // Two steps more, one after the other: the API ends at the stage last chosen.
    await page.keyboard.press("ArrowDown");
    await card(page, "Qualified", "Ada Lovelace").waitFor();
    await page.keyboard.press("ArrowDown");
    await card(page, "Proposal", "Ada Lovelace").waitFor();
    expect(await focused()).toEqual(["proposal", ada!.id]);
    await expect.poll(async () => (await lead(ada!.id)).stage).toBe("proposal");
    expect(await page.getByLabel("Stage of Ada Lovelace").inputValue()).toBe("proposal");

    // By dragging a card onto another column.
    await card(page, "New", "Grace Hopper").dragTo(column(page, "Won"));
    await card(page, "Won", "Grace Hopper").waitFor();
    await expect.poll(async () => (await lead(grace!.id)).stage).toBe("won");
    expect(await columnState(page, "Won")).toEqual({ count: "1 lead", total: "Total $0.10" });
    expect(await columnState(page, "New")).toEqual({ count: "1 lead", total: "Total $0.20" });

    // A move the API refuses (the lead was deleted meanwhile): the card goes back, and the banner says why.
    await gql("mutation($id: ID!) { deleteLead(id: $id) { id } }", { id: kurt!.id });
    await page.getByLabel("Stage of Kurt Gödel").selectOption("lost");
    await page
      .getByRole("alert")
      .filter({ hasText: `Kurt Gödel was not moved: No lead with id '${kurt!.id}'.` })
      .waitFor();
    await card(page, "Qualified", "Kurt Gödel").waitFor();
    expect(await card(page, "Lost", "Kurt Gödel").count()).toBe(0);

    // What the screen shows after a reload is what the API holds.
    await page.reload();
    await card(page, "Proposal", "Ada Lovelace").waitFor();
    await card(page, "Won", "Grace Hopper").waitFor();
    expect(await columnState(page, "Qualified")).toEqual({
      count: "2 leads",
      total: "Total €1,000,000,000,000.00",
    });
    await dashboard.close();
  });

  it("lists leads as a table with its stage and search filters in the URL, pages with Show more, and keeps the filters over a reload", async () => {
    const { user, seedLeads } = await workspace("crm-table");
    await seedLeads([
      ...Array.from({ length: 26 }, (_, i) => ({
        first_name: "Prospect",
        last_name: String(i + 1).padStart(2, "0"),
        stage: i % 2 ? "won" : "new",
      })),
      {
        first_name: "Alan",
        last_name: "Turing",
        company_name: "Bletchley",
        stage: "won",
        estimated_value: 42,
      },
    ]);
    const dashboard = await open(user, "/dashboard/leads?view=table");
    const { page } = dashboard;
    await page.getByRole("table", { name: "Leads" }).waitFor();
    expect(await page.getByRole("link", { name: "Table" }).getAttribute("aria-current")).toBe("page");
    expect(await tableRows(page, "Leads").count()).toBe(25);
    const first = tableRows(page, "Leads").first();
    expect(await first.locator("td").evaluateAll((tds) => tds.map((td) => td.textContent))).toEqual([
      "Alan Turing",
      "Bletchley",
      "Won",
      "Medium priority",
      "$42.00",
      "—",
      "—",
      expect.any(String),
    ]);
    await page.getByRole("button", { name: "Show more leads" }).click();
    await expect.poll(() => tableRows(page, "Leads").count()).toBe(27);
    expect(await page.getByRole("button", { name: "Show more leads" }).count()).toBe(0);
    await screenshots(page, "leads-table");

    await page.getByLabel("Stage", { exact: true }).selectOption("won");
    await expect.poll(() => new URL(page.url()).searchParams.get("stage")).toBe("won");
    await expect.poll(() => tableRows(page, "Leads").count()).toBe(14);
    await page.getByLabel("Search leads").fill("tur");
    await page.keyboard.press("Enter");
    await expect.poll(() => new URL(page.url()).searchParams.get("search")).toBe("tur");
    await expect.poll(() => tableRows(page, "Leads").count()).toBe(1);
    expect(await tableRows(page, "Leads").first().textContent()).toContain("Alan Turing");

    // The URL holds the view and both filters: a reload shows the same list and the same fields.
    await page.reload();
    await page.getByRole("table", { name: "Leads" }).waitFor();
    expect(await tableRows(page, "Leads").count()).toBe(1);
    expect(await page.getByLabel("Stage", { exact: true }).inputValue()).toBe("won");
    expect(await page.getByLabel("Search leads").inputValue()).toBe("tur");
    // The search goes with a switch to the pipeline, where it filters every column.
    await page.getByRole("link", { name: "Pipeline" }).click();
    await card(page, "Won", "Alan Turing").waitFor();
    expect(new URL(page.url()).searchParams.get("view")).toBe("pipeline");
    expect(await columnState(page, "New")).toEqual({ count: "0 leads", total: "No estimated value" });
    await page.getByLabel("Search leads").fill("");
    await page.keyboard.press("Enter");
    await expect
      .poll(() => columnState(page, "New"))
      .toEqual({ count: "13 leads", total: "No estimated value" });
    await dashboard.close();
  });

  it("creates a lead by keyboard alone: an e-mail the API refuses is shown under its field only and nothing is made; then edits it, converts it into a client it links to, and deletes it after a confirmation", async () => {
    const { user, leads, lead } = await workspace("crm-lead-form");
    const dashboard = await open(user, "/dashboard/leads");
    const { page } = dashboard;
    await column(page, "New").getByText("No leads.").waitFor();

    await page.getByRole("button", { name: "New lead" }).focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "New lead" });
    await dialog.waitFor();
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining([
        "First name",
        "Last name (optional)",
        "Company (optional)",
        "E-mail (optional)",
        "Estimated value (optional)",
        "Currency",
        "Next follow-up (optional)",
        "Notes (optional)",
      ]),
    );
    // Focus starts in the first field; Tab walks the form in order.
    await page.keyboard.type("Ada");
    await page.keyboard.press("Tab");
    await page.keyboard.type("Lovelace");
    await page.keyboard.press("Tab");
    await page.keyboard.type("Analytical Engines");
    await page.keyboard.press("Tab");
    await page.keyboard.type("ada@localhost");
    for (const _ of ["phone", "source", "stage", "priority", "estimated value"])
      await page.keyboard.press("Tab");
    await page.keyboard.type("1234.50");
    await page.keyboard.press("Enter");

    const email = dialog.getByLabel("E-mail (optional)");
    await expect.poll(() => email.getAttribute("aria-invalid")).toBe("true");
    expect(await fieldError(dialog).allTextContents()).toEqual(["email must be an e-mail address."]);
    expect(await dialog.locator(".banner-error").count()).toBe(0);
    expect(await leads()).toEqual([]);
    await screenshots(page, "lead-form-refused");

    for (const _ of ["priority", "stage", "source", "phone", "e-mail"])
      await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Control+A");
    await page.keyboard.type("Ada@Example.com");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    await page.getByRole("status").filter({ hasText: "Lead Ada Lovelace created." }).waitFor();
    const [made] = await leads();
    expect(made).toEqual({
      id: expect.stringMatching(/^lead_/),
      full_name: "Ada Lovelace",
      company_name: "Analytical Engines",
      email: "ada@example.com",
      stage: "new",
      priority: "medium",
      estimated_value: 1234.5,
      currency: "USD",
      client_id: null,
    });
    await card(page, "New", "Ada Lovelace")
      .getByTestId("lead-value")
      .filter({ hasText: "$1,234.50" })
      .waitFor();

    // Its own screen: every field, and the edit form.
    await page.getByRole("status").getByRole("link", { name: "Open it" }).click();
    await page.getByRole("heading", { level: 1, name: "Ada Lovelace" }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/leads/${made!.id}`);
    const facts = page.locator(".crm-facts");
    expect(await facts.textContent()).toContain("Estimated value$1,234.50");
    expect(await facts.textContent()).toContain("E-mailada@example.com");
    await page.getByRole("button", { name: "Edit lead" }).click();
    const edit = page.getByRole("dialog", { name: "Edit Ada Lovelace" });
    await edit.getByLabel("Company (optional)").fill("Difference Engines Ltd");
    await edit.getByLabel("Priority").selectOption("urgent");
    await edit.getByLabel("Estimated value (optional)").fill("99.99");
    await edit.getByLabel("Currency").fill("eur");
    expect(await edit.getByLabel("Currency").inputValue()).toBe("EUR");
    await edit.getByRole("button", { name: "Save lead" }).click();
    await page.getByRole("status").filter({ hasText: "Lead saved." }).waitFor();
    expect(await facts.textContent()).toContain("Estimated value€99.99");
    expect(await lead(made!.id)).toMatchObject({
      company_name: "Difference Engines Ltd",
      priority: "urgent",
      estimated_value: 99.99,
      currency: "EUR",
      email: "ada@example.com",
    });
    await screenshots(page, "lead-detail");

    // Converted into a client: the lead is won and links to the client.
    await page.getByRole("button", { name: "Convert to client" }).click();
    await page
      .getByRole("dialog", { name: "Convert this lead into a client?" })
      .getByRole("button", { name: "Convert to client" })
      .click();
    await page
      .getByRole("status")
      .filter({ hasText: "Ada Lovelace is now a client, and the lead is won." })
      .waitFor();
    const converted = await lead(made!.id);
    expect(converted).toMatchObject({ stage: "won", client_id: expect.stringMatching(/^cli_/) });
    expect(await page.getByRole("button", { name: "Convert to client" }).getAttribute("aria-disabled")).toBe(
      "true",
    );
    expect(await facts.textContent()).toContain("StageWon");
    await page.getByRole("link", { name: "open the client" }).click();
    await page.getByRole("heading", { level: 1, name: "Ada Lovelace" }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/clients/${converted.client_id}`);
    expect(await page.locator(".crm-facts").textContent()).toContain("CompanyDifference Engines Ltd");
    expect(await page.locator(".crm-facts").textContent()).toContain("CurrencyEUR");

    // Deleted after a confirmation; Escape first keeps it.
    await page.goBack();
    await page.getByRole("heading", { level: 1, name: "Ada Lovelace" }).waitFor();
    await page.getByRole("button", { name: "Delete lead" }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this lead?" });
    await confirm.waitFor();
    await page.keyboard.press("Escape");
    await confirm.waitFor({ state: "hidden" });
    expect(await leads()).toHaveLength(1);
    await page.getByRole("button", { name: "Delete lead" }).click();
    await confirm.getByRole("button", { name: "Delete lead" }).click();
    await page.getByRole("heading", { level: 1, name: "Leads" }).waitFor();
    expect(await leads()).toEqual([]);
    await dashboard.close();
  });

  it("lists clients with the search in the URL and Show more, creates one (an e-mail the API refuses shown under its field only), and edits it", async () => {
    const { user, gql, seedClients } = await workspace("crm-clients");
    await seedClients([
      ...Array.from({ length: 25 }, (_, i) => `Client ${String(i + 1).padStart(2, "0")}`),
      "Zeta Works",
    ]);
    const dashboard = await open(user, "/dashboard/clients");
    const { page } = dashboard;
    await page.getByRole("table", { name: "Clients" }).waitFor();
    expect(await tableRows(page, "Clients").count()).toBe(25);
    expect(await tableRows(page, "Clients").first().locator("td").first().textContent()).toBe("Zeta Works");
    await page.getByRole("button", { name: "Show more clients" }).click();
    await expect.poll(() => tableRows(page, "Clients").count()).toBe(26);
    await screenshots(page, "clients-list");

    await page.getByLabel("Search clients").fill("zeta");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect.poll(() => new URL(page.url()).searchParams.get("search")).toBe("zeta");
    await expect.poll(() => tableRows(page, "Clients").count()).toBe(1);
    await page.reload();
    await page.getByRole("table", { name: "Clients" }).waitFor();
    expect(await tableRows(page, "Clients").count()).toBe(1);
    expect(await page.getByLabel("Search clients").inputValue()).toBe("zeta");
    await page.getByRole("button", { name: "Clear" }).click();
    await expect.poll(() => new URL(page.url()).search).toBe("");

    await page.getByRole("button", { name: "New client" }).click();
    const dialog = page.getByRole("dialog", { name: "New client" });
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining([
        "Name",
        "E-mail (optional)",
        "Currency",
        "City (optional)",
        "Notes (optional)",
      ]),
    );
    await dialog.getByLabel("Name", { exact: true }).fill("Babbage & Co");
    await dialog.getByLabel("E-mail (optional)").fill("charles@localhost");
    await dialog.getByLabel("City (optional)").fill("London");
    await dialog.getByLabel("Currency").fill("gbp");
    await dialog.getByRole("button", { name: "Create client" }).click();
    await expect.poll(() => dialog.getByLabel("E-mail (optional)").getAttribute("aria-invalid")).toBe("true");
    expect(await fieldError(dialog).allTextContents()).toEqual(["email must be an e-mail address."]);
    expect(await dialog.locator(".banner-error").count()).toBe(0);
    const count = async () =>
      (await gql<{ clients: { data: unknown[] } }>("{ clients(limit: 100) { data { id } } }")).clients.data
        .length;
    expect(await count()).toBe(26);
    await dialog.getByLabel("E-mail (optional)").fill("charles@example.com");
    await dialog.getByRole("button", { name: "Create client" }).click();
    await page.getByRole("status").filter({ hasText: "Client Babbage & Co created." }).waitFor();
    await tableRows(page, "Clients").first().filter({ hasText: "Babbage & Co" }).waitFor();

    await page.getByRole("link", { name: "Babbage & Co" }).click();
    await page.getByRole("heading", { level: 1, name: "Babbage & Co" }).waitFor();
    const id = new URL(page.url()).pathname.split("/").pop()!;
    await page.getByRole("button", { name: "Edit client" }).click();
    const edit = page.getByRole("dialog", { name: "Edit Babbage & Co" });
    await edit.getByLabel("Phone (optional)").fill("+44 20 7946 0000");
    await edit.getByLabel("Street and number (optional)").fill("1 Dorset Street");
    await edit.getByLabel("City (optional)").fill("");
    await edit.getByRole("button", { name: "Save client" }).click();
    await page.getByRole("status").filter({ hasText: "Client saved." }).waitFor();
    const { client } = await gql<{
      client: {
        email: string;
        phone: string;
        currency: string;
        address: { line1: string; city: string | null };
      };
    }>("query($id: ID!) { client(id: $id) { email phone currency address { line1 city } } }", { id });
    expect(client).toEqual({
      email: "charles@example.com",
      phone: "+44 20 7946 0000",
      currency: "GBP",
      address: { line1: "1 Dorset Street", city: null },
    });
    expect(await page.locator(".crm-facts").textContent()).toContain("Address1 Dorset Street");
    await dashboard.close();
  });

  it("shows a client's invoices and quotes (total and balance due exactly as the API returns them) and projects, linked; the API's refusal to delete a client with invoices is shown, and one without is deleted", async () => {
    const { user, gql, seedClients } = await workspace("crm-client-detail");
    const [billed, spare] = await seedClients(["Hopper Industries", "Spare Parts"]);
    const { invoice, quote } = await gql<{
      invoice: { id: string; invoice_number: string; total: number; balance_due: number };
      quote: { id: string; invoice_number: string; total: number };
    }>(
      `mutation($client: String!) {
        invoice: createInvoice(client_id: $client, tax_rate: 7.5, due_date: "2099-01-31", items: [{ description: "Design", quantity: 3, unit_price: 19.99 }]) { id invoice_number total balance_due }
        quote: createInvoice(client_id: $client, document_type: quote, currency: "EUR", items: [{ description: "Retainer", quantity: 1, unit_price: 1000000.1 }]) { id invoice_number total }
      }`,
      { client: billed!.id },
    );
    expect([invoice.total, invoice.balance_due, quote.total]).toEqual([64.47, 64.47, 1000000.1]);
    const { createProject: project } = await gql<{ createProject: { id: string } }>(
      `mutation($client: ID!) { createProject(name: "Compiler", client_id: $client, budget: 5000.5, currency: "USD") { id } }`,
      { client: billed!.id },
    );

    const dashboard = await open(user, `/dashboard/clients/${billed!.id}`);
    const { page } = dashboard;
    await page.getByRole("heading", { level: 1, name: "Hopper Industries" }).waitFor();
    await tableRows(page, "Invoices and quotes").nth(1).waitFor();
    const cells = (row: Locator) => row.locator("td").evaluateAll((tds) => tds.map((td) => td.textContent));
    expect(await cells(tableRows(page, "Invoices and quotes").nth(0))).toEqual([
      quote.invoice_number,
      "Quote",
      "Draft",
      expect.any(String),
      "—",
      "€1,000,000.10",
      "—",
    ]);
    expect(await cells(tableRows(page, "Invoices and quotes").nth(1))).toEqual([
      invoice.invoice_number,
      "Invoice",
      "Draft",
      expect.any(String),
      "Jan 31, 2099",
      "$64.47",
      "$64.47",
    ]);
    expect(await page.getByRole("link", { name: invoice.invoice_number }).getAttribute("href")).toBe(
      `/dashboard/invoices/${invoice.id}`,
    );
    expect(await cells(tableRows(page, "Projects").first())).toEqual([
      "Compiler",
      "Active",
      "—",
      "—",
      "$5,000.50",
    ]);
    expect(await page.getByRole("link", { name: "Compiler" }).getAttribute("href")).toBe(
      `/dashboard/projects/${project.id}`,
    );
    // The type filter is in the URL.
    await page.getByLabel("Show", { exact: true }).selectOption("quote");
    await expect.poll(() => new URL(page.url()).searchParams.get("documents")).toBe("quote");
    await expect.poll(() => tableRows(page, "Invoices and quotes").count()).toBe(1);
    await page.getByLabel("Show", { exact: true }).selectOption("");
    await expect.poll(() => tableRows(page, "Invoices and quotes").count()).toBe(2);
    await screenshots(page, "client-detail");

    // The API refuses: its message in the dialog, which stays open; the client stays.
    await page.getByRole("button", { name: "Delete client" }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this client?" });
    await confirm.getByRole("button", { name: "Delete client" }).click();
    await confirm
      .getByRole("alert")
      .filter({ hasText: `Client '${billed!.id}' has invoices or quotes and cannot be deleted.` })
      .waitFor();
    expect(
      (
        await gql<{ client: { id: string } }>("query($id: ID!) { client(id: $id) { id } }", {
          id: billed!.id,
        })
      ).client.id,
    ).toBe(billed!.id);
    await confirm.getByRole("button", { name: "Cancel" }).click();

    await dashboard.goto(`/dashboard/clients/${spare!.id}`);
    await page.getByRole("heading", { level: 1, name: "Spare Parts" }).waitFor();
    await page.getByText("No invoices or quotes.").waitFor();
    await page.getByText("No projects.").waitFor();
    await page.getByRole("button", { name: "Delete client" }).click();
    await confirm.getByRole("button", { name: "Delete client" }).click();
    await page.getByRole("heading", { level: 1, name: "Clients" }).waitFor();
    const { clients } = await gql<{ clients: { data: { id: string }[] } }>("{ clients { data { id } } }");
    expect(clients.data.map((client) => client.id)).toEqual([billed!.id]);
    await dashboard.close();
  });

  it("lets a member write leads and clients as an owner does: nothing greyed out, a lead moved and a client edited, held by the API", async () => {
    const member = await createUser(server(), { label: "crm-member" });
    await addMember(server(), owner, member, "member");
    const ownerApi = await api(owner);
    const [lead] = await ownerApi.seedLeads([
      { first_name: "Hedy", last_name: "Lamarr", estimated_value: 7 },
    ]);
    const [client] = await ownerApi.seedClients(["Frequency Hopping Ltd"]);

    const dashboard = await open(member, "/dashboard/leads", `${owner.workspaceName} (member)`);
    const { page } = dashboard;
    await card(page, "New", "Hedy Lamarr").waitFor();
    expect(await page.getByRole("note").count()).toBe(0);
    expect(await page.getByRole("button", { name: "New lead" }).getAttribute("aria-disabled")).toBeNull();
    expect(await page.getByLabel("Stage of Hedy Lamarr").isDisabled()).toBe(false);
    await page.getByLabel("Stage of Hedy Lamarr").selectOption("qualified");
    await card(page, "Qualified", "Hedy Lamarr").waitFor();
    await expect.poll(async () => (await ownerApi.lead(lead!.id)).stage).toBe("qualified");
    await screenshots(page, "leads-pipeline-member");

    await dashboard.goto(`/dashboard/clients/${client!.id}`);
    await page.getByRole("heading", { level: 1, name: "Frequency Hopping Ltd" }).waitFor();
    expect(
      await page.getByRole("button", { name: "Delete client" }).getAttribute("aria-disabled"),
    ).toBeNull();
    await page.getByRole("button", { name: "Edit client" }).click();
    const edit = page.getByRole("dialog", { name: "Edit Frequency Hopping Ltd" });
    await edit.getByLabel("Notes (optional)").fill("Met at the\nspread-spectrum fair.");
    await edit.getByRole("button", { name: "Save client" }).click();
    await page.getByRole("status").filter({ hasText: "Client saved." }).waitFor();
    const saved = await ownerApi.gql<{ client: { notes: string } }>(
      "query($id: ID!) { client(id: $id) { notes } }",
      { id: client!.id },
    );
    expect(saved.client.notes).toBe("Met at the\nspread-spectrum fair.");
    await dashboard.close();
  });
});
