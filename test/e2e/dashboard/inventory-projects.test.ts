import type { Locator, Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { type Gql, inBatches, userGraphql } from "../../support/business.ts";
import {
  addMember,
  createUser,
  expectLabelled,
  openSignedIn,
  screenshots,
  type TestUser,
  useChromium,
  WIDTHS,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The inventory and the projects screens in headless Chromium, on data seeded through the API:
 * lists with their filters in the URL (one click for low stock) and "Show more"; an item created
 * (a taken SKU refused under its field), edited, its quantity moving the API's badge from in stock
 * to low to out, deleted; a project created (a due date before the start refused under its
 * field) and edited, its tasks added by keyboard, moved through a keyboard menu to done (which
 * stamps completed_at), edited and deleted, with the progress following; money shown exactly as
 * the API returns it; and a member, who writes both as an owner does.
 */

const browser = useChromium();

/** Items, projects and tasks made 13 to a request: the API allows 15 aliases in a document. */
const BATCH = 13;

/** Runs `field(i)` (a mutation field with its selection) for i in 0..count-1, BATCH to a request. */
async function seed(gql: Gql, count: number, field: (i: number) => string): Promise<void> {
  await inBatches(
    gql,
    Array.from({ length: count }, (_, i) => field(i)),
    BATCH,
  );
}

/** The rows of a table (its header row left out), by its caption. */
const rowsOf = (page: Page, caption: string) =>
  page
    .getByRole("region", { name: caption })
    .getByRole("row")
    .filter({ has: page.getByRole("cell") });

/** The text of each cell of a row, by column header (a closed menu's items left out). */
const cellsOf = (row: Locator) =>
  row.evaluate((tr) =>
    Object.fromEntries(
      [...tr.querySelectorAll("td")].map((td) => {
        const shown = td.cloneNode(true) as HTMLElement;
        for (const menu of shown.querySelectorAll("[popover]")) menu.remove();
        return [td.dataset.label ?? "", shown.textContent?.trim() ?? ""];
      }),
    ),
  );

const currentUrl = (page: Page) => {
  const url = new URL(page.url());
  return `${url.pathname}${url.search}`;
};

e2e("the dashboard's inventory and projects", (server) => {
  let owner: TestUser;
  let member: TestUser;
  let ownerApi: Gql;

  beforeAll(async () => {
    // Pro: seeding and the screens' requests stay far from a plan's rate limit.
    owner = await createUser(server(), { label: "ops-owner", plan: "pro", workspaceName: "Stock & Work" });
    member = await createUser(server(), { label: "ops-member", workspaceName: "Member's own" });
    await addMember(server(), owner, member, "member");
    ownerApi = await userGraphql(server(), owner);
  });

  /** Signed in, in the owner's workspace, on the screen the navigation link leads to. */
  const open = async (user: TestUser, nav: "Inventory" | "Projects", width: number = WIDTHS.desktop) => {
    const dashboard = await openSignedIn(browser(), server(), user, {
      width,
      workspace: user === owner ? undefined : `${owner.workspaceName} (member)`,
    });
    const { page } = dashboard;
    if (width === WIDTHS.desktop) await page.getByRole("link", { name: nav, exact: true }).click();
    else await dashboard.goto(`/dashboard/${nav.toLowerCase()}`);
    await page.getByRole("heading", { level: 1, name: nav }).waitFor();
    return dashboard;
  };

  const itemOf = (id: string) =>
    ownerApi<{ inventoryItem: Record<string, unknown> }>(
      `query($id: ID!) { inventoryItem(id: $id) { name sku quantity min_stock_threshold status cost_price sale_price currency
        suppliers { name email phone supplier_sku cost_price } } }`,
      { id },
    ).then((data) => data.inventoryItem);

  const itemsNamed = async (search: string) =>
    (
      await ownerApi<{ inventoryItems: { data: { id: string; name: string }[] } }>(
        "query($search: String) { inventoryItems(search: $search, limit: 100) { data { id name } } }",
        { search },
      )
    ).inventoryItems.data;

  it("lists the inventory with the API's stock badges and money as returned, filters it in the URL (one click for low stock), and shows more", async () => {
    await seed(
      ownerApi,
      23,
      (i) =>
        `createInventoryItem(name: "Filler ${String(i).padStart(2, "0")}", category: "filler", quantity: 100, min_stock_threshold: 1) { id }`,
    );
    const { m0: widget } = await ownerApi<{ m0: { id: string; cost_price: number; sale_price: number } }>(
      `mutation {
        m0: createInventoryItem(name: "Widget", sku: "WID-1", category: "parts", quantity: 50, unit_of_measure: "pcs",
          min_stock_threshold: 10, cost_price: 1234567.89, sale_price: 0.1, currency: "EUR",
          suppliers: [{ name: "Acme Supply", email: "Orders@Acme.example", phone: "+1 555 0100", cost_price: 1234567.8 },
                      { name: "Backup Co" }]) { id cost_price sale_price }
        m1: createInventoryItem(name: "Gasket", quantity: 3, min_stock_threshold: 5, unit_of_measure: "kg") { id }
        m2: createInventoryItem(name: "Bolt", quantity: 0, min_stock_threshold: 5) { id }
      }`,
    );
    // The API's numbers, which the screen must show to the cent.
    expect([widget.cost_price, widget.sale_price]).toEqual([1234567.89, 0.1]);

    const dashboard = await open(owner, "Inventory");
    const { page } = dashboard;
    const rows = rowsOf(page, "Inventory items");
    // Newest first, 25 to a page: the 26th is behind "Show more".
    await expect.poll(() => rows.count()).toBe(25);
    expect(await cellsOf(rows.filter({ hasText: "Widget" }))).toEqual({
      Item: "WidgetWID-1 · parts",
      Status: "In stock",
      Quantity: "50 pcsReorder at 10 pcs",
      "Unit cost": "€1,234,567.89",
      "Unit price": "€0.10",
      Supplier: "Acme Supplyorders@acme.example+1 555 0100+1 more supplier",
      Actions: "Adjust quantityDelete",
    });
    expect((await cellsOf(rows.filter({ hasText: "Gasket" }))).Status).toBe("Low stock");
    expect((await cellsOf(rows.filter({ hasText: "Bolt" }))).Status).toBe("Out of stock");
    expect(await expectLabelled(page)).toEqual(["Workspace", "Search", "Stock status", "Category"]);
    await page.getByRole("button", { name: "Show more items" }).click();
    await expect.poll(() => rows.count()).toBe(26);
    await page.getByRole("button", { name: "Show more items" }).waitFor({ state: "detached" });
    await rows.filter({ hasText: "Filler 00" }).waitFor();
    await screenshots(page, "inventory-list");

    // One click: the low-stock items, in the URL, kept on a reload.
    const low = page.getByRole("button", { name: "Low stock", exact: true });
    await low.click();
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/inventory?status=low_stock");
    await expect.poll(() => rows.count()).toBe(1);
    expect(await low.getAttribute("aria-pressed")).toBe("true");
    await dashboard.goto("/dashboard/inventory?status=low_stock");
    await expect.poll(() => rows.count()).toBe(1);
    expect((await cellsOf(rows.first())).Item).toBe("Gasket");
    expect(await page.getByLabel("Stock status").inputValue()).toBe("low_stock");
    await page.getByRole("button", { name: "Low stock", exact: true }).click();
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/inventory");

    // Status, category and search, each in the URL.
    await page.getByLabel("Stock status").selectOption("out_of_stock");
    await expect.poll(() => rows.count()).toBe(1);
    expect((await cellsOf(rows.first())).Item).toBe("Bolt");
    await page.getByLabel("Stock status").selectOption("");
    await page.getByLabel("Category").fill("filler");
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/inventory?category=filler");
    await expect.poll(() => rows.count()).toBe(23);
    await page.getByLabel("Search").fill("filler 1");
    await page.getByLabel("Search").press("Enter");
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/inventory?category=filler&search=filler+1");
    await expect.poll(() => rows.count()).toBe(10);
    await page.getByLabel("Search").fill("nothing like it");
    await page.getByText("No item matches these filters.").waitFor();
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/inventory");
    expect(await page.getByLabel("Search").inputValue()).toBe("");
    await expect.poll(() => rows.count()).toBe(25);

    // The item's own screen shows the same money, and its suppliers with their contact.
    await rows.filter({ hasText: "Widget" }).getByRole("link", { name: "Widget" }).click();
    await page.getByRole("heading", { level: 1, name: "Widget" }).waitFor();
    expect(currentUrl(page)).toBe(`/dashboard/inventory/${widget.id}`);
    expect(await page.getByTestId("item-cost").textContent()).toBe("€1,234,567.89");
    expect(await page.getByTestId("item-price").textContent()).toBe("€0.10");
    const suppliers = rowsOf(page, "Suppliers of Widget");
    expect(await cellsOf(suppliers.first())).toEqual({
      Supplier: "Acme Supply",
      Contact: "orders@acme.example+1 555 0100",
      "Their code": "—",
      "Unit cost": "€1,234,567.80",
    });
    expect(await cellsOf(suppliers.nth(1))).toEqual({
      Supplier: "Backup Co",
      Contact: "No contact",
      "Their code": "—",
      "Unit cost": "—",
    });
    await screenshots(page, "inventory-item");
    await dashboard.close();
  });

  it("adds an item (a taken SKU refused under its field only), moves its badge from in stock to low to out by its quantity, edits it on its screen and deletes it after a confirmation", async () => {
    await ownerApi(`mutation { createInventoryItem(name: "Sprocket holder", sku: "SPR-1") { id } }`);
    const dashboard = await open(owner, "Inventory");
    const { page } = dashboard;
    const rows = rowsOf(page, "Inventory items");

    await page.getByRole("button", { name: "Add item" }).click();
    const form = page.getByRole("form", { name: "Add an inventory item" });
    await form.getByLabel("Name").fill("Sprocket");
    await form.getByLabel("SKU (optional)").fill("SPR-1");
    await form.getByLabel("Quantity in stock").fill("12");
    await form.getByLabel("Reorder threshold").fill("5");
    await form.getByLabel("Currency").fill("eur");
    await form.getByLabel("Unit cost (optional)").fill("2.5");
    await form.getByLabel("Unit price (optional)").fill("999999999999.99");
    await form.getByRole("button", { name: "Add a supplier" }).click();
    await form.getByLabel("Supplier name").fill("Gears Ltd");
    await form.getByLabel("Supplier e-mail (optional)").fill("sales@gears.example");
    await form.getByLabel("Supplier's unit cost (optional)").fill("2.25");
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining(["Name", "SKU (optional)", "Supplier name", "Description (optional)"]),
    );
    await screenshots(page, "inventory-add");
    dashboard.allowErrors(/status of 409/);
    await form.getByRole("button", { name: "Add item" }).click();
    const sku = form.getByLabel("SKU (optional)");
    await expect.poll(() => sku.getAttribute("aria-invalid")).toBe("true");
    expect(await form.locator(".field-error").allTextContents()).toEqual([
      "Another inventory item in this workspace has the sku 'SPR-1'.",
    ]);
    // Shown once: under the field, not in a banner too.
    expect(await page.locator(".banner-error").count()).toBe(0);
    expect((await itemsNamed("Sprocket")).map((item) => item.name)).toEqual(["Sprocket holder"]);

    await sku.fill("SPR-2");
    await form.getByRole("button", { name: "Add item" }).click();
    await page.getByRole("status").filter({ hasText: "Sprocket added: 12 pcs, in stock." }).waitFor();
    const [created] = (await itemsNamed("Sprocket")).filter((item) => item.name === "Sprocket");
    expect(await itemOf(created!.id)).toEqual({
      name: "Sprocket",
      sku: "SPR-2",
      quantity: 12,
      min_stock_threshold: 5,
      status: "in_stock",
      cost_price: 2.5,
      sale_price: 999999999999.99,
      currency: "EUR",
      suppliers: [
        {
          name: "Gears Ltd",
          email: "sales@gears.example",
          phone: null,
          supplier_sku: null,
          cost_price: 2.25,
        },
      ],
    });
    const row = rows.filter({ has: page.getByRole("link", { name: "Sprocket", exact: true }) });
    expect(await cellsOf(row)).toMatchObject({
      Status: "In stock",
      "Unit cost": "€2.50",
      "Unit price": "€999,999,999,999.99",
    });

    // The quantity moves the badge as the API computes it: 12 > 5 in stock, 5 low, 0 out.
    const adjust = async (quantity: string) => {
      await row.getByRole("button", { name: "Adjust quantity of Sprocket" }).click();
      const dialog = page.getByRole("form", { name: "Adjust the quantity of Sprocket" });
      await dialog.getByLabel("New quantity (pcs)").fill(quantity);
      await dialog.getByRole("button", { name: "Save quantity" }).click();
      await dialog.waitFor({ state: "hidden" });
    };
    await adjust("5");
    await expect.poll(async () => (await cellsOf(row)).Status).toBe("Low stock");
    expect(await itemOf(created!.id)).toMatchObject({ quantity: 5, status: "low_stock" });
    await page.getByRole("status").filter({ hasText: "Sprocket: 5 pcs, low stock." }).waitFor();
    await adjust("0");
    await expect.poll(async () => (await cellsOf(row)).Status).toBe("Out of stock");
    expect(await itemOf(created!.id)).toMatchObject({ quantity: 0, status: "out_of_stock" });
    await adjust("5.001");
    await expect.poll(async () => (await cellsOf(row)).Status).toBe("In stock");
    expect(await itemOf(created!.id)).toMatchObject({ quantity: 5.001, status: "in_stock" });

    // Edited on its own screen: only what changed is sent, so a quantity set meanwhile stays.
    await row.getByRole("link", { name: "Sprocket" }).click();
    await page.getByRole("heading", { level: 1, name: "Sprocket" }).waitFor();
    await ownerApi(`mutation($id: ID!) { updateInventoryItem(id: $id, quantity: 2) { id } }`, {
      id: created!.id,
    });
    await page.getByRole("button", { name: "Edit", exact: true }).click();
    const edit = page.getByRole("form", { name: "Edit Sprocket" });
    await edit.getByLabel("Unit price (optional)").fill("19.99");
    await edit.getByLabel("Category (optional)").fill("parts");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").filter({ hasText: "Sprocket saved." }).waitFor();
    expect(await page.getByTestId("item-price").textContent()).toBe("€19.99");
    expect(await itemOf(created!.id)).toMatchObject({ sale_price: 19.99, quantity: 2, status: "low_stock" });
    await expect.poll(() => page.getByTestId("item-quantity").textContent()).toBe("2 pcs");

    // Deleted after a confirmation: Cancel keeps it.
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const confirm = page.getByRole("dialog", { name: "Delete this item?" });
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await confirm.waitFor({ state: "hidden" });
    expect((await itemOf(created!.id)).name).toBe("Sprocket");
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    await confirm.getByRole("button", { name: "Delete item" }).click();
    await page.getByRole("heading", { level: 1, name: "Inventory" }).waitFor();
    await page.getByRole("status").filter({ hasText: "Sprocket deleted." }).waitFor();
    expect((await itemsNamed("Sprocket")).map((item) => item.name)).toEqual(["Sprocket holder"]);
    await dashboard.close();
  });

  const projectOf = (id: string) =>
    ownerApi<{ project: Record<string, unknown> }>(
      "query($id: ID!) { project(id: $id) { name status client_id start_date due_date budget currency } }",
      { id },
    ).then((data) => data.project);

  it("lists projects with client, dates and budget as returned, filters them in the URL, shows more, creates one (a due date before the start refused under its field) and edits one", async () => {
    const { createClient: client } = await ownerApi<{ createClient: { id: string } }>(
      `mutation { createClient(name: "Northwind", company_name: "Northwind Traders") { id } }`,
    );
    await seed(ownerApi, 25, (i) => `createProject(name: "Routine ${String(i).padStart(2, "0")}") { id }`);
    const { createProject: big } = await ownerApi<{ createProject: { id: string; budget: number } }>(
      `mutation($client: ID!) { createProject(name: "Harbour bridge", client_id: $client, status: on_hold,
        start_date: "2026-03-01", due_date: "2027-12-31", budget: 999999999999.99, currency: "USD") { id budget } }`,
      { client: client.id },
    );
    expect(big.budget).toBe(999999999999.99);

    const dashboard = await open(owner, "Projects");
    const { page } = dashboard;
    const rows = rowsOf(page, "Projects");
    await expect.poll(() => rows.count()).toBe(25);
    expect(await cellsOf(rows.first())).toEqual({
      Project: "Harbour bridge",
      Status: "On hold",
      Client: "Northwind",
      Dates: "Mar 1, 2026 – Dec 31, 2027",
      Budget: "$999,999,999,999.99",
      Actions: "Edit",
    });
    expect((await cellsOf(rows.nth(1))).Budget).toBe("—");
    await page.getByRole("button", { name: "Show more projects" }).click();
    await expect.poll(() => rows.count()).toBe(26);
    await rows.filter({ hasText: "Routine 00" }).waitFor();
    expect(await expectLabelled(page)).toEqual(["Workspace", "Search", "Status", "Client"]);
    await screenshots(page, "projects-list");

    await page.getByLabel("Status").selectOption("on_hold");
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/projects?status=on_hold");
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByLabel("Status").selectOption("");
    await page.getByLabel("Client").selectOption({ label: "Northwind (Northwind Traders)" });
    await expect.poll(() => currentUrl(page)).toBe(`/dashboard/projects?client_id=${client.id}`);
    await expect.poll(() => rows.count()).toBe(1);
    await dashboard.goto(`/dashboard/projects?search=routine+2`);
    await expect.poll(() => rows.count()).toBe(5);
    expect(await page.getByLabel("Search").inputValue()).toBe("routine 2");
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => currentUrl(page)).toBe("/dashboard/projects");

    // Edited from the list: the row shows what the API answered.
    const harbour = rows.filter({ hasText: "Harbour bridge" });
    await harbour.getByRole("button", { name: "Edit Harbour bridge" }).click();
    const edit = page.getByRole("form", { name: "Edit Harbour bridge" });
    expect(await edit.getByLabel("Budget (optional)").inputValue()).toBe("999999999999.99");
    await edit.getByLabel("Status").selectOption("active");
    await edit.getByLabel("Budget (optional)").fill("1500.5");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").filter({ hasText: "Harbour bridge saved." }).waitFor();
    expect(await cellsOf(harbour)).toMatchObject({ Status: "Active", Budget: "$1,500.50" });
    expect(await projectOf(big.id)).toMatchObject({ status: "active", budget: 1500.5, client_id: client.id });

    // Created: a due date before the start is refused under its field, and nothing is created.
    await page.getByRole("button", { name: "New project" }).click();
    const form = page.getByRole("form", { name: "New project" });
    await form.getByLabel("Name").fill("Website relaunch");
    await form.getByLabel("Client").selectOption({ label: "Northwind (Northwind Traders)" });
    await form.getByLabel("Start date (optional)").fill("2026-05-10");
    await form.getByLabel("Due date (optional)").fill("2026-05-01");
    await form.getByLabel("Budget (optional)").fill("12000");
    await form.getByLabel("Currency").fill("EUR");
    await screenshots(page, "projects-new");
    dashboard.allowErrors(/status of 400/);
    await form.getByRole("button", { name: "Create project" }).click();
    const due = form.getByLabel("Due date (optional)");
    await expect.poll(() => due.getAttribute("aria-invalid")).toBe("true");
    expect(await form.locator(".field-error").allTextContents()).toEqual([
      "due_date cannot be before start_date.",
    ]);
    expect(await page.locator(".banner-error").count()).toBe(0);
    const named = async () =>
      (
        await ownerApi<{ projects: { data: { id: string }[] } }>(
          `{ projects(search: "Website relaunch") { data { id } } }`,
        )
      ).projects.data;
    expect(await named()).toEqual([]);
    await due.fill("2026-06-30");
    await form.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { level: 1, name: "Website relaunch" }).waitFor();
    await page.getByRole("status").filter({ hasText: "Project Website relaunch created." }).waitFor();
    const [created] = await named();
    expect(currentUrl(page)).toBe(`/dashboard/projects/${created!.id}`);
    expect(await projectOf(created!.id)).toEqual({
      name: "Website relaunch",
      status: "active",
      client_id: client.id,
      start_date: "2026-05-10",
      due_date: "2026-06-30",
      budget: 12000,
      currency: "EUR",
    });
    expect(await page.getByTestId("project-budget").textContent()).toBe("€12,000.00");
    await dashboard.close();
  });

  const taskOf = (id: string) =>
    ownerApi<{ task: Record<string, unknown> | null }>(
      "query($id: ID!) { task(id: $id) { title description status priority assignee_email due_date completed_at } }",
      { id },
    ).then((data) => data.task);

  it("shows a project's tasks with their progress, adds one by keyboard, moves one to done from a keyboard menu (completed_at shown), filters, shows more, edits and deletes", async () => {
    const { createProject: project } = await ownerApi<{ createProject: { id: string } }>(
      `mutation { createProject(name: "Office move", description: "Everything to the new floor.") { id } }`,
    );
    await seed(
      ownerApi,
      26,
      (i) =>
        `createTask(project_id: "${project.id}", title: "Box ${String(i).padStart(2, "0")}"${i < 2 ? ", status: done" : ""}) { id }`,
    );
    const { createTask: plan } = await ownerApi<{ createTask: { id: string } }>(
      `mutation($id: ID!) { createTask(project_id: $id, title: "Book the movers", priority: urgent,
        assignee_email: "Ops@Example.com", due_date: "2026-07-01") { id } }`,
      { id: project.id },
    );

    const dashboard = await open(owner, "Projects");
    const { page } = dashboard;
    await page.getByRole("link", { name: "Office move" }).click();
    await page.getByRole("heading", { level: 1, name: "Office move" }).waitFor();
    const progress = page.getByTestId("project-progress");
    await expect.poll(() => progress.textContent()).toBe("Progress: 2 of 27 tasks done (7 %)");
    const rows = rowsOf(page, "Tasks");
    await expect.poll(() => rows.count()).toBe(25);
    const movers = rows.filter({ hasText: "Book the movers" });
    expect(await cellsOf(movers)).toEqual({
      Task: "Book the movers",
      Status: "To do▾",
      Priority: "Urgent",
      Due: "Jul 1, 2026",
      Assignee: "ops@example.com",
      Actions: "EditDelete",
    });
    await page.getByRole("button", { name: "Show more tasks" }).click();
    await expect.poll(() => rows.count()).toBe(27);

    // The status menu by keyboard: Escape closes it with nothing changed, Enter on "Done" moves it.
    const status = page.getByRole("button", { name: "Status of Book the movers: To do" });
    await status.focus();
    await page.keyboard.press("Enter");
    const menu = page.getByRole("menu", { name: "Status of Book the movers" });
    await menu.waitFor();
    expect(await status.getAttribute("aria-expanded")).toBe("true");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("To do");
    await screenshots(page, "project-status-menu");
    await page.keyboard.press("Escape");
    await menu.waitFor({ state: "hidden" });
    expect(await status.evaluate((button) => button === document.activeElement)).toBe(true);
    await page.keyboard.press("ArrowDown");
    await menu.waitFor();
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Done");
    await page.keyboard.press("Enter");
    const done = page.getByRole("button", { name: "Status of Book the movers: Done" });
    await done.waitFor();
    await expect.poll(() => done.evaluate((button) => button === document.activeElement)).toBe(true);
    const completed = await taskOf(plan.id);
    expect(completed).toMatchObject({ status: "done", completed_at: expect.any(String) });
    const shown = await page.evaluate(
      (iso) =>
        new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso)),
      completed!.completed_at as string,
    );
    expect((await cellsOf(movers)).Status).toBe(`Done▾Completed ${shown}`);
    await expect.poll(() => progress.textContent()).toBe("Progress: 3 of 27 tasks done (11 %)");
    // Back to to do: the API clears completed_at, and so does the row.
    // By mouse: a second click on the button closes the menu.
    await done.click();
    await menu.waitFor();
    await done.click();
    await menu.waitFor({ state: "hidden" });
    await done.click();
    await menu.getByRole("menuitemradio", { name: "In progress" }).click();
    await page.getByRole("button", { name: "Status of Book the movers: In progress" }).waitFor();
    expect(await taskOf(plan.id)).toMatchObject({ status: "in_progress", completed_at: null });
    expect((await cellsOf(movers)).Status).toBe("In progress▾");
    await expect.poll(() => progress.textContent()).toBe("Progress: 2 of 27 tasks done (7 %)");

    // A task added by keyboard alone: Tab, typing and Enter.
    await page.getByRole("button", { name: "Add task" }).focus();
    await page.keyboard.press("Enter");
    const form = page.getByRole("form", { name: "Add a task" });
    await form.waitFor();
    // The dialog puts focus on its first field.
    expect(await form.getByLabel("Title").evaluate((input) => input === document.activeElement)).toBe(true);
    await page.keyboard.type("Label the boxes");
    await page.keyboard.press("Tab");
    await page.keyboard.type("Room and floor on each.");
    await page.keyboard.press("Tab");
    await page.keyboard.press("i"); // Status: In progress
    await page.keyboard.press("Tab");
    await page.keyboard.press("h"); // Priority: High
    await page.keyboard.press("Tab");
    await page.keyboard.type("Sam@Example.com");
    await page.keyboard.press("Tab");
    await page.keyboard.type("06152026");
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "Task Label the boxes added." }).waitFor();
    const added = rows.filter({ hasText: "Label the boxes" });
    await expect.poll(async () => (await cellsOf(added)).Due).toBe("Jun 15, 2026");
    const listed = await ownerApi<{ tasks: { data: { id: string; title: string }[] } }>(
      `query($id: ID!) { tasks(project_id: $id, limit: 1) { data { id title } } }`,
      { id: project.id },
    );
    const newest = listed.tasks.data[0]!;
    expect(newest.title).toBe("Label the boxes");
    expect(await taskOf(newest.id)).toEqual({
      title: "Label the boxes",
      description: "Room and floor on each.",
      status: "in_progress",
      priority: "high",
      assignee_email: "sam@example.com",
      due_date: "2026-06-15",
      completed_at: null,
    });
    await expect.poll(() => progress.textContent()).toBe("Progress: 2 of 28 tasks done (7 %)");
    await screenshots(page, "project-detail");

    // Filters in the URL, kept by the project's own path.
    await page.getByLabel("Task status").selectOption("done");
    await expect.poll(() => currentUrl(page)).toBe(`/dashboard/projects/${project.id}?task_status=done`);
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByLabel("Task status").selectOption("");
    await page.getByLabel("Priority", { exact: true }).selectOption("high");
    await page.getByLabel("Assignee").fill("SAM@example.com");
    await expect
      .poll(() => currentUrl(page))
      .toBe(`/dashboard/projects/${project.id}?priority=high&assignee=SAM%40example.com`);
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => rows.count()).toBe(25);

    // Edited: only what changed is sent; deleted after a confirmation.
    await added.getByRole("button", { name: "Edit task Label the boxes" }).click();
    const edit = page.getByRole("form", { name: "Edit task Label the boxes" });
    await edit.getByLabel("Title").fill("Label every box");
    await edit.getByLabel("Due date (optional)").fill("");
    await edit.getByRole("button", { name: "Save task" }).click();
    await page.getByRole("status").filter({ hasText: "Task Label every box saved." }).waitFor();
    expect(await taskOf(newest.id)).toMatchObject({
      title: "Label every box",
      due_date: null,
      status: "in_progress",
    });
    const renamed = rows.filter({ hasText: "Label every box" });
    expect((await cellsOf(renamed)).Due).toBe("—");
    await renamed.getByRole("button", { name: "Delete task Label every box" }).click();
    await page
      .getByRole("dialog", { name: "Delete this task?" })
      .getByRole("button", { name: "Delete task" })
      .click();
    await page.getByRole("status").filter({ hasText: "Task Label every box deleted." }).waitFor();
    expect(await renamed.count()).toBe(0);
    expect(await taskOf(newest.id).catch((error: Error) => error.message)).toMatch(/not_found/);
    await expect.poll(() => progress.textContent()).toBe("Progress: 2 of 27 tasks done (7 %)");
    await dashboard.close();
  });

  it("a member reads and writes inventory, projects and tasks as an owner does, at a phone's width", async () => {
    const { m0: item, m1: project } = await ownerApi<{ m0: { id: string }; m1: { id: string } }>(
      `mutation {
        m0: createInventoryItem(name: "Paper reams", quantity: 40, min_stock_threshold: 10, unit_of_measure: "box") { id }
        m1: createProject(name: "Member's project") { id }
      }`,
    );
    const { createTask: task } = await ownerApi<{ createTask: { id: string } }>(
      `mutation($id: ID!) { createTask(project_id: $id, title: "Order paper") { id } }`,
      { id: project.id },
    );
    const dashboard = await open(member, "Inventory", WIDTHS.phone);
    const { page } = dashboard;
    expect(await page.getByRole("button", { name: "Add item" }).getAttribute("aria-disabled")).toBeNull();
    expect(await page.getByText("can read the inventory but not change it").count()).toBe(0);
    await page.getByLabel("Search").fill("paper");
    const row = rowsOf(page, "Inventory items").filter({ hasText: "Paper reams" });
    await expect.poll(() => rowsOf(page, "Inventory items").count()).toBe(1);
    await row.getByRole("button", { name: "Adjust quantity of Paper reams" }).click();
    const dialog = page.getByRole("form", { name: "Adjust the quantity of Paper reams" });
    await dialog.getByLabel("New quantity (box)").fill("8");
    await screenshots(page, "inventory-adjust-member");
    await dialog.getByRole("button", { name: "Save quantity" }).click();
    await expect.poll(async () => (await cellsOf(row)).Status).toBe("Low stock");
    expect(await itemOf(item.id)).toMatchObject({ quantity: 8, status: "low_stock" });
    await screenshots(page, "inventory-member");

    await dashboard.goto(`/dashboard/projects/${project.id}`);
    await page.getByRole("heading", { level: 1, name: "Member's project" }).waitFor();
    await page.getByRole("button", { name: "Status of Order paper: To do" }).click();
    await page.getByRole("menuitemradio", { name: "Done" }).click();
    await page.getByRole("button", { name: "Status of Order paper: Done" }).waitFor();
    await expect
      .poll(() => page.getByTestId("project-progress").textContent())
      .toBe("Progress: 1 of 1 task done (100 %)");
    expect(await taskOf(task.id)).toMatchObject({ status: "done", completed_at: expect.any(String) });
    await screenshots(page, "project-member");

    // The member's changes are the workspace's: the owner's API sees the project edited too.
    await page.getByRole("button", { name: "Edit project" }).click();
    const edit = page.getByRole("form", { name: "Edit Member's project" });
    await edit.getByLabel("Status").selectOption("completed");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await page.getByRole("status").filter({ hasText: "Member's project saved." }).waitFor();
    expect(await projectOf(project.id)).toMatchObject({ status: "completed" });
    await dashboard.close();
  });
});
