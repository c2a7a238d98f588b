import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import {
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  openDashboard,
  pollUntil,
  screenshots,
  sessionGraphql,
  sessionGraphqlRaw,
  signInApi,
  signInUi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The API keys screen in headless Chromium: a key made with chosen scopes and shown once (with
 * its copy button), the list, revocation that takes effect on /v1 within 5 seconds, rotation with
 * and without a grace period, and a member kept from all of it.
 */

const browser = useChromium();

/** How long a revoked key may keep working (the contract: every process within 5 s). */
const REVOCATION_BOUND_MS = 5_000;

e2e("the dashboard's API keys", (server) => {
  let owner: TestUser;

  beforeAll(async () => {
    owner = await createUser(server(), { label: "keys-owner", workspaceName: "Key Holders" });
  });

  const v1 = (secret: string, path: string, init: RequestInit = {}) =>
    fetch(`${server().api}${path}`, {
      ...init,
      headers: { Authorization: `Bearer ${secret}`, "Content-Type": "application/json", ...init.headers },
    });

  /** A key made through the API with the owner's session (for tests whose subject is not creation). */
  const keyViaApi = async (name: string, scopes = ["leads.read"]) => {
    const session = await signInApi(server(), owner.email);
    const { createApiKey } = await sessionGraphql<{
      createApiKey: { api_key: { id: string; prefix: string }; secret: string };
    }>(
      server(),
      session,
      "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { api_key { id prefix } secret } }",
      { input: { name, scopes } },
    );
    return createApiKey;
  };

  const openKeys = async (): Promise<DashboardPage> => {
    const dashboard = await openDashboard(browser(), server());
    await signInUi(dashboard, owner.email);
    await dashboard.page.getByRole("link", { name: "API keys", exact: true }).click();
    await dashboard.page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
    return dashboard;
  };

  const row = (dashboard: DashboardPage, name: string) =>
    dashboard.page.getByRole("row").filter({ hasText: name });

  it("creates a key with the chosen scopes, shows its secret once with a copy button, and lists it (name, prefix, scopes, created, last used)", async () => {
    const dashboard = await openKeys();
    const { page } = dashboard;
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: server().url });
    await page.getByText("No keys yet").waitFor();
    await screenshots(page, "keys-empty");

    await page.getByRole("button", { name: "Create key" }).click();
    const dialog = page.getByRole("dialog", { name: "Create an API key" });
    await dialog.waitFor();
    const labels = await expectLabelled(page);
    expect(labels).toEqual(expect.arrayContaining(["Name", ...SCOPES]));
    // Read scopes are preselected; a write scope is added by hand.
    expect(await dialog.getByLabel("leads.read", { exact: true }).isChecked()).toBe(true);
    expect(await dialog.getByLabel("leads.write", { exact: true }).isChecked()).toBe(false);
    await dialog.getByLabel("Name").fill("Billing sync");
    await dialog.getByLabel("leads.write", { exact: true }).check();
    await screenshots(page, "keys-create");

    // A name too long for the API: its message, under the field.
    dashboard.allowErrors(/status of 400/);
    await dialog.getByLabel("Name").evaluate((input) => input.removeAttribute("maxlength"));
    await dialog.getByLabel("Name").fill("x".repeat(201));
    await dialog.getByRole("button", { name: "Create key" }).click();
    await expect.poll(() => dialog.getByLabel("Name").getAttribute("aria-invalid")).toBe("true");
    await dialog.getByLabel("Name").fill("Billing sync");
    await dialog.getByRole("button", { name: "Create key" }).click();

    const secretBox = page.getByLabel("Secret of Billing sync");
    await secretBox.waitFor();
    const secret = await secretBox.inputValue();
    expect(secret).toMatch(/^ktr_live_[A-Za-z0-9]{20,}$/);
    await page.getByRole("button", { name: "Copy" }).click();
    await page.getByText("Copied.").waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await screenshots(page, "keys-created");

    // The row: its name, its prefix (the secret's start), its scopes, created now, never used.
    const created = row(dashboard, "Billing sync");
    await created.waitFor();
    const prefix = (await created.locator("code").textContent())!.replace("…", "");
    expect(secret.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeGreaterThanOrEqual(12);
    const cells = await created.locator("td").allTextContents();
    expect(cells[2]).toContain("leads.write");
    expect(cells[2]).toContain("invoices.read");
    expect(cells[2]).not.toContain("invoices.write");
    expect(cells[3]).toContain(String(new Date().getUTCFullYear()));
    expect(cells[4]).toBe("Never");
    expect(cells[5]).toBe("Active");

    // The key does what its scopes allow, and no more.
    expect((await v1(secret, "/leads")).status).toBe(200);
    const lead = await v1(secret, "/leads", {
      method: "POST",
      body: JSON.stringify({ full_name: "Keyed Lead" }),
    });
    expect(lead.status).toBe(201);
    const refused = await v1(secret, "/clients", {
      method: "POST",
      body: JSON.stringify({ name: "No Scope" }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("insufficient_scope");

    // Tried from the browser: the key alone (not the session) gets the workspace, as the API answers it.
    await page.getByRole("button", { name: "Send GET /v1/workspace with this key" }).click();
    await expect.poll(() => page.getByTestId("try-key-status").textContent()).toBe("200 OK");
    const tried = JSON.parse((await page.getByTestId("try-key-body").textContent())!);
    expect(tried).toMatchObject({ object: "workspace", id: owner.workspaceId, name: "Key Holders" });
    expect(await page.getByRole("link", { name: "API reference" }).first().getAttribute("href")).toBe(
      "/docs",
    );

    // Shown once: gone from the page once dismissed, and nowhere after a reload; the list now says when it was used.
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.content()).not.toContain(secret);
    await expect
      .poll(
        async () => {
          await page.reload();
          await row(dashboard, "Billing sync").waitFor();
          return (await row(dashboard, "Billing sync").locator("td").nth(4).textContent()) ?? "";
        },
        { timeout: 10_000 },
      )
      .not.toBe("Never");
    expect(await page.content()).not.toContain(secret);
    await dashboard.close();
  });

  it("revokes a key from its row: /v1 refuses it within 5 seconds, and it moves to the revoked keys", async () => {
    const { secret } = await keyViaApi("Soon revoked");
    expect((await v1(secret, "/leads")).status).toBe(200);
    const dashboard = await openKeys();
    const { page } = dashboard;
    await page.getByRole("button", { name: "Revoke “Soon revoked”" }).click();
    const dialog = page.getByRole("dialog", { name: "Revoke “Soon revoked”?" });
    await dialog.waitFor();
    await screenshots(page, "keys-revoke");
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await page.getByRole("status").filter({ hasText: "Key “Soon revoked” revoked" }).waitFor();
    const revokedAt = Date.now();
    const took = await pollUntil(
      async () => (await v1(secret, "/leads")).status === 401,
      REVOCATION_BOUND_MS,
    );
    expect(took).toBeLessThanOrEqual(REVOCATION_BOUND_MS);
    expect(Date.now() - revokedAt).toBeLessThanOrEqual(REVOCATION_BOUND_MS + 1_000);
    const body = (await (await v1(secret, "/leads")).json()) as { error: { code: string } };
    expect(body.error.code).toBe("invalid_token");

    await expect.poll(() => row(dashboard, "Soon revoked").count()).toBe(0);
    await page.getByLabel("Show revoked keys").check();
    await row(dashboard, "Soon revoked").waitFor();
    const cells = await row(dashboard, "Soon revoked").locator("td").allTextContents();
    expect(cells[5]).toMatch(/^Revoked /);
    expect(await row(dashboard, "Soon revoked").getByRole("button").count()).toBe(0);
    await screenshots(page, "keys-with-revoked");
    await dashboard.close();
  });

  it("rotates a key: with a grace period the old one works until then; rotated at once, the old one fails within 5 seconds", async () => {
    const first = await keyViaApi("Rotating");
    const dashboard = await openKeys();
    const { page } = dashboard;

    await page.getByRole("button", { name: "Rotate “Rotating”" }).click();
    const dialog = page.getByRole("dialog", { name: "Rotate “Rotating”" });
    await dialog.waitFor();
    expect(await expectLabelled(page)).toContain("Revoke the old key");
    await dialog.getByLabel("Revoke the old key").selectOption({ label: "In 1 hour" });
    await screenshots(page, "keys-rotate");
    await dialog.getByRole("button", { name: "Rotate key" }).click();
    const secretBox = page.getByLabel("Secret of Rotating");
    await secretBox.waitFor();
    const second = await secretBox.inputValue();
    expect(second).not.toBe(first.secret);
    await page.getByText(/The old key .* keeps working until /).waitFor();
    // Both work during the grace period; the old one's row says when it ends.
    expect((await v1(first.secret, "/leads")).status).toBe(200);
    expect((await v1(second, "/leads")).status).toBe(200);
    await expect.poll(() => page.getByText(/expires in/).count()).toBe(1);
    await page.getByRole("button", { name: "Done" }).click();

    // The new key rotated at once: it stops working, the newest works.
    const rows = page.getByRole("row").filter({ hasText: "Rotating" }).filter({ hasText: "Active" });
    await expect.poll(() => rows.count()).toBe(1);
    await rows.getByRole("button", { name: "Rotate “Rotating”" }).click();
    await dialog.waitFor();
    expect(await dialog.getByLabel("Revoke the old key").inputValue()).toBe("0");
    await dialog.getByRole("button", { name: "Rotate key" }).click();
    await secretBox.waitFor();
    const third = await secretBox.inputValue();
    expect(new Set([first.secret, second, third]).size).toBe(3);
    await page.getByText(/The old key .* was revoked\./).waitFor();
    const took = await pollUntil(
      async () => (await v1(second, "/leads")).status === 401,
      REVOCATION_BOUND_MS,
    );
    expect(took).toBeLessThanOrEqual(REVOCATION_BOUND_MS);
    expect((await v1(third, "/leads")).status).toBe(200);
    // The first key is still in its grace period.
    expect((await v1(first.secret, "/leads")).status).toBe(200);
    await dashboard.close();
  });

  it('after a rotation with a grace period, tells the old key from the new one ("old key", the time left, buttons named by prefix), and the table fits 1280 px with its Actions in view', async () => {
    const scopes = [
      "leads.read",
      "leads.write",
      "clients.read",
      "clients.write",
      "invoices.read",
      "invoices.write",
    ];
    const first = await keyViaApi("Grace sync", scopes);
    const session = await signInApi(server(), owner.email);
    const { rotateApiKey } = await sessionGraphql<{ rotateApiKey: { api_key: { prefix: string } } }>(
      server(),
      session,
      "mutation($id: ID!) { rotateApiKey(id: $id, grace_seconds: 86400) { api_key { prefix } } }",
      { id: first.api_key.id },
    );
    const dashboard = await openKeys();
    const { page } = dashboard;
    const rows = row(dashboard, "Grace sync");
    await expect.poll(() => rows.count()).toBe(2);

    // The old one says so, with the time it has left; the new one is plainly active.
    const old = rows.filter({ hasText: first.api_key.prefix });
    const fresh = rows.filter({ hasText: rotateApiKey.api_key.prefix });
    expect(await old.textContent()).toMatch(/old key/i);
    expect(await old.textContent()).toMatch(/expires in 2[34] h/);
    expect(await fresh.textContent()).not.toMatch(/old key/i);
    // Their buttons have names of their own: the prefix, and "old key" for the old one.
    const revokeOld = page.getByRole("button", {
      name: `Revoke “Grace sync” (old key ${first.api_key.prefix}…)`,
      exact: true,
    });
    const revokeNew = page.getByRole("button", {
      name: `Revoke “Grace sync” (${rotateApiKey.api_key.prefix}…)`,
      exact: true,
    });
    expect(await revokeOld.count()).toBe(1);
    expect(await revokeNew.count()).toBe(1);
    await revokeOld.click();
    const dialog = page.getByRole("dialog", { name: /old key/ });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(first.api_key.prefix);
    await dialog.getByRole("button", { name: "Cancel" }).click();

    // No sideways scroll inside the table at 1280 px, and every action button is on screen.
    await page.setViewportSize({ width: 1280, height: 900 });
    const region = page
      .locator(".table-scroll")
      .filter({ has: page.getByRole("table", { name: "API keys" }) });
    const overflow = await region.evaluate((element) => element.scrollWidth - element.clientWidth);
    expect(overflow, "the keys table scrolls sideways at 1280 px").toBeLessThanOrEqual(0);
    for (const button of [revokeOld, revokeNew]) {
      const box = (await button.boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(1280);
    }
    await screenshots(page, "keys-grace");
    await dashboard.close();
  });

  it("refuses a blank name once, in plain words, under the Name field", async () => {
    const dashboard = await openKeys();
    const { page } = dashboard;
    dashboard.allowErrors(/status of 400/);
    await page.getByRole("button", { name: "Create key" }).click();
    const dialog = page.getByRole("dialog", { name: "Create an API key" });
    await dialog.getByLabel("Name").fill("   ");
    await dialog.getByRole("button", { name: "Create key" }).click();
    const under = dialog
      .locator(".field")
      .filter({ has: page.getByLabel("Name", { exact: true }) })
      .locator(".field-error");
    await under.waitFor();
    expect(await under.textContent()).toBe("Name is required.");
    expect(await page.getByText("is required").count()).toBe(1);
    expect(await dialog.locator(".banner-error").count()).toBe(0);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dashboard.close();
  });

  describe("as a member", () => {
    it("sees no keys and cannot create one; a forced attempt shows the API's owner_required message", async () => {
      const member = await createUser(server(), { label: "keys-member" });
      await addMember(server(), owner, member, "member");
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, member.email);
      await page.getByLabel("Workspace").selectOption({ label: "Key Holders (member)" });
      await page.getByRole("link", { name: "API keys", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
      await page
        .getByRole("note")
        .filter({ hasText: "Only owners of the workspace can create, rotate and revoke API keys." })
        .waitFor();
      const create = page.getByRole("button", { name: "Create key" });
      expect(await create.getAttribute("aria-disabled")).toBe("true");
      expect(await page.getByRole("table").count()).toBe(0);
      await screenshots(page, "keys-member");

      // A click on it does nothing…
      await create.click({ force: true });
      expect(await page.getByRole("dialog").count()).toBe(0);
      // …but the button is only marked disabled: forced, the request goes out and the server refuses it.
      dashboard.allowErrors(/status of 403/);
      await create.evaluate((button) => button.removeAttribute("aria-disabled"));
      await create.click();
      const dialog = page.getByRole("dialog", { name: "Create an API key" });
      await dialog.getByLabel("Name").fill("Sneaky");
      await dialog.getByRole("button", { name: "Create key" }).click();
      const alert = dialog.getByRole("alert");
      await alert.waitFor();
      expect(await alert.getAttribute("data-code")).toBe("owner_required");
      expect(await alert.textContent()).toContain("Only an owner of the workspace may do this");
      await dialog.getByRole("button", { name: "Cancel" }).click();

      // Nor can the member list the keys, even by asking directly.
      const session = await signInApi(server(), member.email);
      const listed = await sessionGraphqlRaw(
        server(),
        session,
        "{ apiKeys { data { id } } }",
        {},
        owner.workspaceId,
      );
      expect(listed.body.errors?.[0]?.extensions.code).toBe("owner_required");
      const ownerSession = await signInApi(server(), owner.email);
      const keys = await sessionGraphql<{ apiKeys: { data: { name: string }[] } }>(
        server(),
        ownerSession,
        "{ apiKeys(include_revoked: true) { data { name } } }",
      );
      expect(keys.apiKeys.data.map((key) => key.name)).not.toContain("Sneaky");
      await dashboard.close();
    });
  });
});
