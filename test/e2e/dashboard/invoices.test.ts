import type { Locator, Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { exactAmount, shownMoney, userGraphql } from "../../support/business.ts";
import {
  type ApiSession,
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  openSignedIn,
  screenshots,
  sessionGraphql,
  signInApi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The invoices screens in headless Chromium: the list of invoices and quotes (filters in the URL,
 * "Show more"), a document created with line items whose live totals are the API's to the cent
 * (amounts that floating point rounds the other way), a draft edited, sent, paid in two parts
 * (an over-payment refused under the amount), voided, a quote accepted and converted and another
 * declined, refusals under their field, a member who writes invoices and payments as an owner
 * does, screenshots at both widths, and the forms used with the keyboard alone.
 */

const browser = useChromium();

const DETAIL = `
  id invoice_number document_type status client_id issue_date due_date tax_rate currency notes
  subtotal tax_amount total amount_paid balance_due overdue quote_id converted_invoice_id
  sent_at paid_at voided_at accepted_at declined_at
  items { description quantity unit_price amount }
  payments { amount payment_method reference paid_at }`;

interface Doc {
  id: string;
  invoice_number: string;
  document_type: "invoice" | "quote";
  status: string;
  client_id: string;
  issue_date: string;
  due_date: string | null;
  tax_rate: number;
  currency: string;
  notes: string | null;
  subtotal: number;
  tax_amount: number;
  total: number;
  amount_paid: number;
  balance_due: number;
  overdue: boolean;
  quote_id: string | null;
  converted_invoice_id: string | null;
  sent_at: string | null;
  paid_at: string | null;
  voided_at: string | null;
  accepted_at: string | null;
  declined_at: string | null;
  items: { description: string; quantity: number; unit_price: number; amount: number }[];
  payments: { amount: number; payment_method: string; reference: string | null; paid_at: string }[];
}

interface Line {
  description: string;
  quantity: number;
  unit_price: number;
}

/** What naive floating point makes of a line (what the preview must not do). */
const floatCents = (value: number) => Math.round(value * 100) / 100;

e2e("the dashboard's invoices", (server) => {
  let owner: TestUser;
  let session: ApiSession;
  let ada: string;
  let babbage: string;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}, as = session, workspace?: string) =>
    sessionGraphql<T>(server(), as, query, variables, workspace ?? owner.workspaceId);

  const newClient = async (name: string, currency = "USD") =>
    (
      await gql<{ createClient: { id: string } }>(
        "mutation($name: String!, $currency: String) { createClient(name: $name, currency: $currency) { id } }",
        { name, currency },
      )
    ).createClient.id;

  /** A document made through the API, for tests whose subject is not making it. */
  const seed = async (variables: {
    client_id: string;
    items?: Line[];
    document_type?: "invoice" | "quote";
    tax_rate?: number;
    issue_date?: string;
    due_date?: string;
  }) =>
    (
      await gql<{ createInvoice: Doc }>(
        `mutation($client_id: String!, $items: [InvoiceItemInput!]!, $document_type: DocumentType, $tax_rate: Percent, $issue_date: Date, $due_date: Date) {
          createInvoice(client_id: $client_id, items: $items, document_type: $document_type, tax_rate: $tax_rate, issue_date: $issue_date, due_date: $due_date) { ${DETAIL} } }`,
        { items: [{ description: "Work", quantity: 1, unit_price: 100 }], ...variables },
      )
    ).createInvoice;

  const transition = async (name: "sendInvoice" | "acceptQuote", id: string) =>
    gql(`mutation($id: ID!) { ${name}(id: $id) { id } }`, { id });

  const stored = async (id: string, as = session, workspace?: string) =>
    (await gql<{ invoice: Doc }>(`query($id: ID!) { invoice(id: $id) { ${DETAIL} } }`, { id }, as, workspace))
      .invoice;

  const count = async () =>
    (await gql<{ invoices: { data: unknown[] } }>("{ invoices(limit: 100) { data { id } } }")).invoices.data
      .length;

  beforeAll(async () => {
    // Pro: the tests make more requests a minute than the free plan takes.
    owner = await createUser(server(), {
      label: "invoices-owner",
      plan: "pro",
      workspaceName: "Ledger & Co",
    });
    session = await signInApi(server(), owner.email);
    ada = await newClient("Ada Industries");
    babbage = await newClient("Babbage Ltd");
  });

  const open = async (path: string, user: TestUser = owner): Promise<DashboardPage> => {
    const dashboard = await openSignedIn(browser(), server(), user);
    await dashboard.goto(path);
    return dashboard;
  };

  const openDoc = async (doc: { id: string; invoice_number: string }, user?: TestUser) => {
    const dashboard = await open(`/dashboard/invoices/${doc.id}`, user);
    await dashboard.page
      .getByRole("heading", { level: 1, name: new RegExp(`${doc.invoice_number}$`) })
      .waitFor();
    return dashboard;
  };

  /** The exact decimal behind an amount shown (its `data-amount`). */
  const shown = (page: Page, testId: string) => exactAmount(page.getByTestId(testId));
  const cents = (value: number) => value.toFixed(2);

  /** The buttons and links the detail offers as actions. */
  const actionNames = async (page: Page) =>
    page
      .locator(".invoices-actions")
      .locator("a, button")
      .allTextContents()
      .then((texts) => texts.map((text) => text.trim()));

  /** The accessible name of the focused field (its label's text). */
  const focused = (page: Page) =>
    page.evaluate(() => {
      const element = document.activeElement as HTMLInputElement | null;
      return (
        element?.labels?.[0]?.textContent ??
        element?.getAttribute("aria-label") ??
        element?.textContent ??
        null
      );
    });

  /** Presses Tab until the field named `name` has the focus (a date field takes a Tab per part). */
  const tabTo = async (page: Page, name: string) => {
    for (let presses = 0; presses < 40; presses++) {
      await page.keyboard.press("Tab");
      if ((await focused(page)) === name) return;
    }
    throw new Error(`Tab never reached ${name}`);
  };

  const listRows = (page: Page) =>
    page.getByRole("region", { name: "Invoices and quotes" }).locator("tbody tr");

  it("lists invoices and quotes newest first, 20 at a time with Show more; the filters (status, type, client, overdue) live in the URL and survive a reload", async () => {
    // A workspace of its own: the list's contents are this test's.
    const lister = await createUser(server(), { label: "invoices-list", plan: "pro" });
    const as = await userGraphql(server(), lister);
    const client = async (name: string) =>
      (
        await as<{ createClient: { id: string } }>(
          "mutation($n: String!) { createClient(name: $n) { id } }",
          { n: name },
        )
      ).createClient.id;
    const create = async (variables: Record<string, unknown>) =>
      (
        await as<{ createInvoice: { id: string; invoice_number: string } }>(
          `mutation($c: String!, $t: DocumentType, $i: Date, $d: Date) { createInvoice(client_id: $c, document_type: $t, issue_date: $i, due_date: $d, items: [{ description: "Work", quantity: 2, unit_price: 12.5 }], tax_rate: 10) { id invoice_number } }`,
          variables,
        )
      ).createInvoice;
    const [hopper, lovelace] = [await client("Hopper GmbH"), await client("Lovelace plc")];
    for (let i = 0; i < 20; i++) await create({ c: hopper });
    const late = await create({ c: lovelace, i: "2025-01-10", d: "2025-02-10" });
    await as("mutation($id: ID!) { sendInvoice(id: $id) { id } }", { id: late.id });
    const quote = await create({ c: lovelace, t: "quote" });

    const dashboard = await open("/dashboard", lister);
    const { page } = dashboard;
    await page.getByRole("link", { name: "Invoices", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Invoices" }).waitFor();
    await expect.poll(() => listRows(page).count()).toBe(20);
    expect(await page.locator("h1").textContent()).toBe("Invoices");
    // Newest first: the quote, then the overdue invoice, with every column.
    const cells = (row: Locator) => row.locator("td").allTextContents();
    expect(await cells(listRows(page).nth(0))).toEqual([
      quote.invoice_number,
      "Quote",
      "Lovelace plc",
      "Draft",
      expect.any(String),
      "—",
      "$27.50",
      "—",
    ]);
    expect(await cells(listRows(page).nth(1))).toEqual([
      late.invoice_number,
      "Invoice",
      "Lovelace plc",
      "SentOverdue",
      "Jan 10, 2025",
      "Feb 10, 2025",
      "$27.50",
      "$27.50",
    ]);
    expect(await listRows(page).nth(1).getByRole("link").getAttribute("href")).toBe(
      `/dashboard/invoices/${late.id}`,
    );
    await screenshots(page, "invoices-list");

    await page.getByRole("button", { name: "Show more" }).click();
    await expect.poll(() => listRows(page).count()).toBe(22);
    await page.getByRole("button", { name: "Show more" }).waitFor({ state: "detached" });

    // Each filter goes into the URL and narrows the list as the API does.
    const url = () => new URL(page.url()).search;
    await page.getByLabel("Type").selectOption("quote");
    await expect.poll(url).toBe("?type=quote");
    await expect
      .poll(() => listRows(page).allTextContents())
      .toEqual([expect.stringContaining(quote.invoice_number)]);
    await page.getByLabel("Type").selectOption("");
    await page.getByLabel("Client", { exact: true }).selectOption({ label: "Lovelace plc" });
    await expect.poll(url).toBe(`?client=${lovelace}`);
    await expect.poll(() => listRows(page).count()).toBe(2);
    await page.getByLabel("Overdue only").check();
    await expect.poll(url).toBe(`?client=${lovelace}&overdue=1`);
    await expect.poll(() => listRows(page).count()).toBe(1);
    expect(await listRows(page).first().textContent()).toContain(late.invoice_number);
    expect(await page.getByLabel("Type").isDisabled()).toBe(true);

    // A reload (or a shared link) shows the same view.
    await page.reload();
    await expect.poll(() => listRows(page).count()).toBe(1);
    expect(await page.getByLabel("Client", { exact: true }).inputValue()).toBe(lovelace);
    expect(await page.getByLabel("Overdue only").isChecked()).toBe(true);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(url).toBe("");
    await dashboard.goto("/dashboard/invoices?status=sent");
    await expect.poll(() => listRows(page).count()).toBe(1);
    expect(await page.getByLabel("Status").inputValue()).toBe("sent");
    await dashboard.goto(`/dashboard/invoices?status=draft&client=${hopper}`);
    await expect.poll(() => listRows(page).count()).toBe(20);
    // Twenty drafts of Hopper: exactly one page, so no Show more.
    const { invoices } = await as<{ invoices: { data: unknown[]; has_more: boolean } }>(
      "query($c: String) { invoices(status: draft, client_id: $c) { data { id } has_more } }",
      { c: hopper },
    );
    expect([invoices.data.length, invoices.has_more]).toEqual([20, false]);
    expect(await page.getByRole("button", { name: "Show more" }).count()).toBe(0);
    await dashboard.close();
  });

  it("creates an invoice with line items (added and removed): the live totals are the API's to the cent, where floating point rounds otherwise; refused inputs are shown under their field and create nothing", async () => {
    const lines: Line[] = [
      { description: "Design hours", quantity: 3, unit_price: 19.99 },
      { description: "Printing", quantity: 1.005, unit_price: 1 },
      { description: "Ink", quantity: 0.005, unit_price: 1 },
    ];
    // The second line is 1.005 exactly, half a cent that rounds up; in floating point it is just under.
    expect(floatCents(1.005 * 1)).toBe(1);

    const dashboard = await open("/dashboard/invoices");
    const { page } = dashboard;
    await page.getByRole("link", { name: "New invoice or quote" }).click();
    await page.getByRole("heading", { level: 1, name: "New invoice or quote" }).waitFor();
    await page.getByLabel("Client", { exact: true }).selectOption({ label: "Ada Industries" });
    expect(await page.getByLabel("Currency").inputValue()).toBe("USD");
    await page.getByLabel("Tax rate (%)").fill("7.25");
    const fillLine = async (n: number, line: Line) => {
      await page.getByLabel(`Description of line ${n}`).fill(line.description);
      await page.getByLabel(`Quantity of line ${n}`).fill(String(line.quantity));
      await page.getByLabel(`Unit price of line ${n}`).fill(String(line.unit_price));
    };
    await fillLine(1, lines[0]!);
    expect(await shown(page, "line-amount-1")).toBe("59.97");
    expect(await shown(page, "preview-total")).toBe("64.32");
    for (const n of [2, 3, 4]) {
      await page.getByRole("button", { name: "Add line" }).click();
      // The new line takes the focus.
      await expect.poll(() => focused(page)).toBe(`Description of line ${n}`);
    }
    await fillLine(2, { description: "Removed", quantity: 9, unit_price: 9 });
    await fillLine(3, lines[1]!);
    await fillLine(4, lines[2]!);
    await page.getByRole("button", { name: "Remove line 2" }).click();
    expect(await page.getByLabel("Description of line 2").inputValue()).toBe("Printing");
    expect(await page.getByLabel("Description of line 4").count()).toBe(0);
    expect([await shown(page, "line-amount-2"), await shown(page, "line-amount-3")]).toEqual([
      "1.01",
      "0.01",
    ]);
    expect(await shown(page, "preview-subtotal")).toBe("60.99");
    expect(await shown(page, "preview-tax")).toBe("4.42");
    expect(await shown(page, "preview-total")).toBe("65.41");
    expect(await page.getByTestId("preview-total").textContent()).toBe("$65.41");
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining([
        "Client",
        "Document type",
        "Issue date",
        "Due date (optional)",
        "Tax rate (%)",
        "Currency",
        "Notes (optional)",
        "Description of line 1",
        "Quantity of line 3",
        "Unit price of line 2",
      ]),
    );
    await screenshots(page, "invoices-new");

    // Refusals of the API, each under its field alone; nothing is created.
    dashboard.allowErrors(/status of 400/);
    const before = await count();
    const create = page.getByRole("button", { name: "Create draft" });
    const errors = page.locator(".field-error");
    const expectOnlyError = async (field: Locator, message: string | RegExp) => {
      await expect.poll(() => field.getAttribute("aria-invalid")).toBe("true");
      expect(await errors.count()).toBe(1);
      expect(await errors.first().textContent()).toMatch(message);
      expect(await page.locator(".banner-error").count()).toBe(0);
    };
    await page.getByLabel("Quantity of line 2").fill("0");
    expect(await shown(page, "preview-total")).toBe("64.33");
    await create.click();
    await expectOnlyError(page.getByLabel("Quantity of line 2"), "items[1].quantity must be greater than 0.");
    await page.getByLabel("Quantity of line 2").fill("1.005");
    await page.getByLabel("Due date (optional)").fill("2020-01-01");
    await create.click();
    await expectOnlyError(page.getByLabel("Due date (optional)"), "due_date cannot be before issue_date.");
    await page.getByLabel("Due date (optional)").fill("");
    await page.getByLabel("Currency").fill("usd");
    await create.click();
    await expectOnlyError(
      page.getByLabel("Currency"),
      "currency must be an ISO 4217 code in capitals, e.g. USD.",
    );
    expect(await count()).toBe(before);

    await page.getByLabel("Currency").fill("USD");
    await page.getByLabel("Notes (optional)").fill("Thank you for your business.");
    await create.click();
    const heading = page.getByRole("heading", { level: 1, name: /^Invoice INV-\d{4}-\d{4,}$/ });
    await heading.waitFor();
    const id = page.url().split("/").pop()!;
    const doc = await stored(id);
    // What the preview said is what the API computed and holds.
    expect(doc.items.map((item) => cents(item.amount))).toEqual(["59.97", "1.01", "0.01"]);
    expect([doc.subtotal, doc.tax_amount, doc.total].map(cents)).toEqual(["60.99", "4.42", "65.41"]);
    expect(doc).toMatchObject({
      status: "draft",
      document_type: "invoice",
      client_id: ada,
      tax_rate: 7.25,
      currency: "USD",
      notes: "Thank you for your business.",
      items: lines,
    });
    // Naive floating point would have shown another total.
    const floatTotal = floatCents(
      lines.reduce((sum, line) => sum + floatCents(line.quantity * line.unit_price), 0) * 1.0725,
    );
    expect(floatTotal).not.toBe(doc.total);
    // The detail shows the API's numbers.
    expect(await shown(page, "total")).toBe("65.41");
    expect(await shown(page, "balance-due")).toBe("65.41");
    expect(await page.getByTestId("total").textContent()).toBe(shownMoney(65.41, "USD"));
    expect(await actionNames(page)).toEqual(["Edit", "Mark as sent", "Record payment", "Void invoice"]);
    expect(await count()).toBe(before + 1);
    await dashboard.close();
  });

  it("edits a draft in the same form, filled: the new totals are previewed as the API then computes them", async () => {
    const draft = await seed({
      client_id: ada,
      tax_rate: 7.25,
      items: [{ description: "Design hours", quantity: 3, unit_price: 19.99 }],
    });
    const dashboard = await openDoc(draft);
    const { page } = dashboard;
    await page.getByRole("link", { name: "Edit", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: `Edit Invoice ${draft.invoice_number}` }).waitFor();
    expect(await page.getByLabel("Client", { exact: true }).inputValue()).toBe(ada);
    expect(await page.getByLabel("Tax rate (%)").inputValue()).toBe("7.25");
    expect(await page.getByLabel("Quantity of line 1").inputValue()).toBe("3");
    expect(await page.getByLabel("Unit price of line 1").inputValue()).toBe("19.99");
    expect(await shown(page, "preview-total")).toBe("64.32");

    // 10.05 × 10 % is 1.005, which rounds half-up to 1.01; floating point makes it 1.00.
    expect(floatCents((10.05 * 10) / 100)).toBe(1);
    await page.getByLabel("Client", { exact: true }).selectOption({ label: "Babbage Ltd" });
    await page.getByLabel("Description of line 1").fill("Consulting");
    await page.getByLabel("Quantity of line 1").fill("1");
    await page.getByLabel("Unit price of line 1").fill("10.05");
    await page.getByLabel("Tax rate (%)").fill("10");
    await page.getByLabel("Due date (optional)").fill(`${new Date().getFullYear() + 1}-01-31`);
    expect([
      await shown(page, "preview-subtotal"),
      await shown(page, "preview-tax"),
      await shown(page, "preview-total"),
    ]).toEqual(["10.05", "1.01", "11.06"]);
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("heading", { level: 1, name: `Invoice ${draft.invoice_number}` }).waitFor();
    await expect.poll(() => shown(page, "total")).toBe("11.06");
    const doc = await stored(draft.id);
    expect(doc).toMatchObject({
      client_id: babbage,
      tax_rate: 10,
      tax_amount: 1.01,
      total: 11.06,
      due_date: `${new Date().getFullYear() + 1}-01-31`,
      items: [{ description: "Consulting", quantity: 1, unit_price: 10.05, amount: 10.05 }],
    });
    expect(await shown(page, "tax")).toBe("1.01");
    await dashboard.close();
  });

  it("sends an invoice, records a part payment (an over-payment refused under the amount) then the rest by keyboard: partially paid, then paid, the balance due as the API says", async () => {
    const draft = await seed({
      client_id: ada,
      tax_rate: 7.25,
      items: [{ description: "Design hours", quantity: 3, unit_price: 19.99 }],
    });
    const dashboard = await openDoc(draft);
    const { page } = dashboard;
    await page.getByRole("button", { name: "Mark as sent" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Invoice ${draft.invoice_number} marked as sent.` })
      .waitFor();
    await expect.poll(() => actionNames(page)).toEqual(["Record payment", "Void invoice"]);
    expect((await stored(draft.id)).status).toBe("sent");
    expect(await page.locator(".invoices-timeline").textContent()).toContain("Sent");

    await page.getByRole("button", { name: "Record payment" }).click();
    const dialog = page.getByRole("dialog", { name: `Record a payment on ${draft.invoice_number}` });
    await dialog.waitFor();
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining([
        "Amount (USD)",
        "Method",
        "Paid at (optional)",
        "Reference (optional)",
        "Payer e-mail (optional)",
        "Notes (optional)",
      ]),
    );
    const amount = dialog.getByLabel("Amount (USD)");
    expect(await amount.inputValue()).toBe("64.32");
    dashboard.allowErrors(/status of 400/);
    await amount.fill("100");
    await dialog.getByRole("button", { name: "Record payment" }).click();
    await expect.poll(() => amount.getAttribute("aria-invalid")).toBe("true");
    expect(await dialog.locator(".field-error").allTextContents()).toEqual([
      `amount 100.00 exceeds the balance due of 64.32 on ${draft.invoice_number}.`,
    ]);
    expect(await dialog.locator(".banner-error").count()).toBe(0);
    expect((await stored(draft.id)).payments).toEqual([]);

    await amount.fill("20.01");
    await dialog.getByLabel("Method").selectOption("card");
    await dialog.getByLabel("Reference (optional)").fill("CARD-0001");
    await dialog.getByRole("button", { name: "Record payment" }).click();
    await dialog.waitFor({ state: "hidden" });
    const part = await stored(draft.id);
    expect(part).toMatchObject({ status: "partially_paid", amount_paid: 20.01, balance_due: 44.31 });
    await page
      .getByRole("status")
      .filter({ hasText: "Payment of $20.01 recorded: $44.31 remains due." })
      .waitFor();
    await expect.poll(() => shown(page, "balance-due")).toBe(cents(part.balance_due));
    expect(await shown(page, "amount-paid")).toBe("20.01");
    expect(await page.locator(".invoices-facts").textContent()).toContain("Partially paid");
    const payments = page.getByRole("region", { name: "Payments" }).locator("tbody tr");
    expect(await payments.first().locator("td").allTextContents()).toEqual([
      "$20.01",
      "Card",
      expect.any(String),
      "CARD-0001",
      "—",
      "—",
      expect.any(String),
    ]);
    await screenshots(page, "invoices-detail-part-paid");

    // The rest, by keyboard alone: Enter on the button, the balance due is already the amount, Enter sends.
    await page.getByRole("button", { name: "Record payment" }).focus();
    await page.keyboard.press("Enter");
    await dialog.waitFor();
    await expect.poll(() => amount.evaluate((input) => input === document.activeElement)).toBe(true);
    expect(await amount.inputValue()).toBe("44.31");
    await tabTo(page, "Method");
    // bank transfer, the first method, then card, then cash
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    await tabTo(page, "Reference (optional)");
    await page.keyboard.type("TRANSFER-2");
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    await page
      .getByRole("status")
      .filter({ hasText: `${draft.invoice_number} is paid in full.` })
      .waitFor();
    const paid = await stored(draft.id);
    expect(paid).toMatchObject({ status: "paid", amount_paid: 64.32, balance_due: 0 });
    expect(paid.paid_at).not.toBeNull();
    expect(paid.payments.map((p) => [p.amount, p.payment_method, p.reference])).toEqual([
      [20.01, "card", "CARD-0001"],
      [44.31, "cash", "TRANSFER-2"],
    ]);
    await expect.poll(() => shown(page, "balance-due")).toBe("0.00");
    expect(await payments.count()).toBe(2);
    // Paid: nothing more to do with it.
    expect(await page.locator(".invoices-actions").count()).toBe(0);
    expect(await page.locator(".invoices-timeline").textContent()).toContain("Paid in full");
    await dashboard.close();
  });

  it("voids an invoice after asking; Cancel changes nothing", async () => {
    const invoice = await seed({ client_id: babbage });
    await transition("sendInvoice", invoice.id);
    const dashboard = await openDoc(invoice);
    const { page } = dashboard;
    await page.getByRole("button", { name: "Void invoice" }).click();
    const dialog = page.getByRole("dialog", { name: "Void this invoice?" });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    expect((await stored(invoice.id)).status).toBe("sent");
    await page.getByRole("button", { name: "Void invoice" }).click();
    await dialog.getByRole("button", { name: "Void invoice" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Invoice ${invoice.invoice_number} voided` })
      .waitFor();
    const doc = await stored(invoice.id);
    expect(doc.status).toBe("void");
    expect(doc.voided_at).not.toBeNull();
    await expect.poll(() => page.locator(".invoices-actions").count()).toBe(0);
    expect(await page.locator(".invoices-facts").textContent()).toContain("Void");
    expect(await page.locator(".invoices-timeline").textContent()).toContain("Voided");
    await dashboard.close();
  });

  it("accepts a quote and converts it (the new invoice opens), and declines another after asking", async () => {
    const quote = await seed({
      client_id: ada,
      document_type: "quote",
      tax_rate: 7.25,
      items: [{ description: "Design hours", quantity: 3, unit_price: 19.99 }],
    });
    const dashboard = await openDoc(quote);
    const { page } = dashboard;
    await page.getByRole("heading", { level: 1, name: `Quote ${quote.invoice_number}` }).waitFor();
    expect(await actionNames(page)).toEqual(["Edit", "Mark as sent", "Accept quote", "Decline quote"]);
    // A quote takes no payments: no amount paid, balance or payments.
    expect(await page.getByTestId("balance-due").count()).toBe(0);
    expect(await page.getByRole("heading", { name: "Payments" }).count()).toBe(0);
    await screenshots(page, "invoices-quote");

    await page.getByRole("button", { name: "Accept quote" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Quote ${quote.invoice_number} accepted.` })
      .waitFor();
    await expect.poll(() => actionNames(page)).toEqual(["Convert to invoice"]);
    expect((await stored(quote.id)).status).toBe("accepted");
    await page.getByRole("button", { name: "Convert to invoice" }).click();
    const heading = page.getByRole("heading", { level: 1, name: /^Invoice INV-/ });
    await heading.waitFor();
    const converted = await stored(quote.id);
    expect(converted.status).toBe("converted");
    expect(page.url()).toBe(`${server().url}/dashboard/invoices/${converted.converted_invoice_id}`);
    const invoice = await stored(converted.converted_invoice_id!);
    expect(invoice).toMatchObject({ status: "draft", quote_id: quote.id, total: 64.32, client_id: ada });
    expect(await heading.textContent()).toBe(`Invoice ${invoice.invoice_number}`);
    // The quote's notice stayed with the quote.
    expect(await page.getByRole("status").filter({ hasText: "accepted" }).count()).toBe(0);
    expect(await shown(page, "total")).toBe("64.32");
    // The quote, from the invoice: converted, with nothing left to do.
    await page.getByRole("link", { name: "the quote" }).click();
    await page.getByRole("heading", { level: 1, name: `Quote ${quote.invoice_number}` }).waitFor();
    await expect.poll(() => page.locator(".invoices-facts").textContent()).toContain("Converted");
    expect(await page.locator(".invoices-actions").count()).toBe(0);

    const other = await seed({ client_id: babbage, document_type: "quote" });
    await transition("sendInvoice", other.id);
    await dashboard.goto(`/dashboard/invoices/${other.id}`);
    await page.getByRole("heading", { level: 1, name: `Quote ${other.invoice_number}` }).waitFor();
    expect(await actionNames(page)).toEqual(["Accept quote", "Decline quote"]);
    await page.getByRole("button", { name: "Decline quote" }).click();
    await page
      .getByRole("dialog", { name: "Decline this quote?" })
      .getByRole("button", { name: "Decline quote" })
      .click();
    await page
      .getByRole("status")
      .filter({ hasText: `Quote ${other.invoice_number} declined.` })
      .waitFor();
    const declined = await stored(other.id);
    expect(declined.status).toBe("declined");
    expect(declined.declined_at).not.toBeNull();
    await expect.poll(() => page.locator(".invoices-actions").count()).toBe(0);
    expect(await page.locator(".invoices-timeline").textContent()).toContain("Declined");
    await dashboard.close();
  });

  it("a member lists the owner's documents and writes invoices and payments as an owner does: a quote created by keyboard alone, an invoice paid", async () => {
    const member = await createUser(server(), { label: "invoices-member" });
    await addMember(server(), owner, member, "member");
    const memberSession = await signInApi(server(), member.email);
    const invoice = await seed({
      client_id: babbage,
      items: [{ description: "Support", quantity: 2, unit_price: 45.5 }],
    });

    const dashboard = await openSignedIn(browser(), server(), member, { workspace: "Ledger & Co (member)" });
    const { page } = dashboard;
    await page.getByRole("link", { name: "Invoices", exact: true }).click();
    await expect.poll(() => listRows(page).filter({ hasText: invoice.invoice_number }).count()).toBe(1);
    const newButton = page.getByRole("link", { name: "New invoice or quote" });
    await newButton.waitFor();

    // The create form by keyboard: Tab from field to field, arrows in the selects, typing, Enter.
    await newButton.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "New invoice or quote" }).waitFor();
    const client = page.getByLabel("Client", { exact: true });
    await expect.poll(() => client.locator("option").count()).toBeGreaterThan(2);
    await tabTo(page, "Client");
    // Newest first: Babbage Ltd, then Ada Industries.
    await page.keyboard.press("ArrowDown");
    expect(await client.inputValue()).toBe(babbage);
    await tabTo(page, "Document type");
    await page.keyboard.press("ArrowDown");
    expect(await page.getByLabel("Document type").inputValue()).toBe("quote");
    // The issue date stays today's, the due date empty, the currency the client's.
    await tabTo(page, "Tax rate (%)");
    await page.keyboard.press("Control+A");
    await page.keyboard.type("20");
    await tabTo(page, "Description of line 1");
    await page.keyboard.type("Workshop");
    await tabTo(page, "Quantity of line 1");
    await page.keyboard.press("Control+A");
    await page.keyboard.type("2.5");
    await tabTo(page, "Unit price of line 1");
    await page.keyboard.type("80");
    expect(await shown(page, "preview-total")).toBe("240.00");
    await page.keyboard.press("Enter");
    const heading = page.getByRole("heading", { level: 1, name: /^Quote QUO-/ });
    await heading.waitFor();
    const quoteId = page.url().split("/").pop()!;
    const quote = await stored(quoteId, memberSession, owner.workspaceId);
    expect(quote).toMatchObject({
      document_type: "quote",
      client_id: babbage,
      tax_rate: 20,
      subtotal: 200,
      tax_amount: 40,
      total: 240,
      items: [{ description: "Workshop", quantity: 2.5, unit_price: 80, amount: 200 }],
    });

    // The owner's invoice, paid in full by the member.
    await dashboard.goto(`/dashboard/invoices/${invoice.id}`);
    await page.getByRole("heading", { level: 1, name: `Invoice ${invoice.invoice_number}` }).waitFor();
    const record = page.getByRole("button", { name: "Record payment" });
    expect(await record.getAttribute("aria-disabled")).toBeNull();
    await record.click();
    await page.getByRole("dialog").getByRole("button", { name: "Record payment" }).click();
    await page.getByRole("status").filter({ hasText: "is paid in full" }).waitFor();
    expect(await stored(invoice.id)).toMatchObject({ status: "paid", amount_paid: 91, balance_due: 0 });
    // The detail refetches the invoice after the payment's answer (the status line) is shown.
    await expect.poll(() => shown(page, "balance-due")).toBe("0.00");
    await dashboard.close();
  });
});
