import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CLAIM_GRANT_TYPE,
  decide,
  granted,
  identity,
  registerServiceAuth,
  tokenClient,
} from "../../support/agent-flow.ts";
import {
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  launchChromium,
  openDashboard,
  pollUntil,
  screenshots,
  sessionGraphql,
  sessionGraphqlRaw,
  signInApi,
  signInUi,
  type TestUser,
} from "../../support/dashboard.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The Agents screen in headless Chromium: agent access turned off and on (and POST /agent/identity
 * refused while it is off), the plan's agent limits, trusted ID-JAG providers added (a loopback
 * provider) and deleted, refusals shown as the API words them (a bad issuer under its field, the
 * free plan's cap of none), an agent claimed for the workspace listed with its scopes, live tokens
 * and last use, revoked from its row so that its token fails on /v1 within 5 seconds; and a member
 * who sees it all but can change nothing.
 */

let browser: Browser;
/** Two local ID-JAG providers on 127.0.0.1: an issuer trusted by two workspaces would mix their checks. */
let trustedThenDeleted: IdJagProvider;
let switchedOff: IdJagProvider;
beforeAll(async () => {
  [browser, trustedThenDeleted, switchedOff] = await Promise.all([
    launchChromium(),
    IdJagProvider.start(),
    IdJagProvider.start(),
  ]);
});
afterAll(async () => {
  await Promise.all([browser?.close(), trustedThenDeleted?.close(), switchedOff?.close()]);
});

/** How long a revoked agent token may keep working (the contract: every process within 5 s). */
const REVOCATION_BOUND_MS = 5_000;
const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";
const OWNER_REQUIRED = "Only an owner of the workspace may do this";

const CREATE_PROVIDER = `mutation($issuer: String!, $jwks_url: String!) { createTrustedProvider(issuer: $issuer, jwks_url: $jwks_url) { id } }`;

/** A real registration attempt with an ID-JAG of `provider` for `sub`: the status and OAuth error code. */
async function registerWithIdJag(
  server: TestServer,
  provider: IdJagProvider,
  sub: string,
  claims: Record<string, unknown> = {},
) {
  const assertion = await provider.idJag(server.url, sub, claims);
  const res = await identity(server, {
    type: "identity_assertion",
    assertion_type: ID_JAG,
    assertion,
    agent_name: "Provider agent",
  });
  return { status: res.status, error: (res.json as { error?: string } | null)?.error };
}

/** The value of one of the limits shown under "Agent access". */
const fact = (page: Page, term: string) =>
  page
    .locator(".facts > div")
    .filter({ has: page.getByText(term, { exact: true }) })
    .locator("dd")
    .textContent();

const fieldErrorOf = (page: Page, label: string) =>
  page
    .locator(".field")
    .filter({ has: page.getByLabel(label, { exact: true }) })
    .locator(".field-error");

e2e("the dashboard's agents", (server) => {
  let owner: TestUser;

  beforeAll(async () => {
    owner = await createUser(server(), { label: "agents-owner", plan: "plus", workspaceName: "Agent Works" });
  });

  const openAgents = async (user: TestUser, workspace?: string): Promise<DashboardPage> => {
    const dashboard = await openDashboard(browser, server());
    await signInUi(dashboard, user.email);
    if (workspace) await dashboard.page.getByLabel("Workspace").selectOption({ label: workspace });
    await dashboard.page.getByRole("link", { name: "Agents", exact: true }).click();
    await dashboard.page.getByRole("heading", { level: 1, name: "Agents" }).waitFor();
    await dashboard.page.locator(".facts").waitFor();
    return dashboard;
  };

  const providerRow = (page: Page, issuer: string) =>
    page.getByRole("table", { name: "Trusted providers" }).getByRole("row").filter({ hasText: issuer });
  const agentRow = (page: Page, name: string) =>
    page.getByRole("table", { name: "Agent registrations" }).getByRole("row").filter({ hasText: name });

  it("shows the plan's agent limits, trusts a loopback ID-JAG provider and deletes it; a bad issuer is refused under its field and nothing is created", async () => {
    const dashboard = await openAgents(owner);
    const { page } = dashboard;
    const provider = trustedThenDeleted;

    // Agent access is on by default on plus; the plan's caps, and what is used of them.
    await page.getByText("AI agents may register with this workspace").waitFor();
    expect(await fact(page, "Plan")).toBe("plus");
    expect(await fact(page, "Active agents")).toBe("0 of 10");
    expect(await fact(page, "Trusted providers")).toBe("0 of 1");
    expect(await fact(page, "Live tokens per agent")).toBe("Up to 5");
    expect(await fact(page, "Token lifetime")).toBe("4 hours");
    await page.getByText("No provider is trusted.").waitFor();
    await page.getByText("No agent has registered with this workspace yet.").waitFor();
    expect(await expectLabelled(page)).toEqual(
      expect.arrayContaining(["Issuer", "JWKS URL", "Maximum sign-in age (seconds)", "Show"]),
    );
    await screenshots(page, "agents-empty");

    // Not https and not a loopback http URL: the API's own message, under the Issuer field.
    const session = await signInApi(server(), owner.email);
    const bad = { issuer: "ftp://localhost/idp", jwks_url: provider.jwksUrl };
    const refusal = await sessionGraphqlRaw(server(), session, CREATE_PROVIDER, bad, owner.workspaceId);
    expect(refusal.body.errors?.[0]?.extensions).toMatchObject({
      code: "validation_failed",
      param: "issuer",
    });
    await page.getByLabel("Issuer", { exact: true }).fill(bad.issuer);
    await page.getByLabel("JWKS URL", { exact: true }).fill(bad.jwks_url);
    await page.getByRole("button", { name: "Trust provider" }).click();
    await expect
      .poll(() => page.getByLabel("Issuer", { exact: true }).getAttribute("aria-invalid"))
      .toBe("true");
    expect(await fieldErrorOf(page, "Issuer").textContent()).toBe(refusal.body.errors![0]!.message);
    expect(await fieldErrorOf(page, "JWKS URL").count()).toBe(0);
    // Once, under the field (read out as an alert there), and in no banner.
    expect(await page.getByRole("alert").count()).toBe(1);
    expect(await page.locator(".banner-error").count()).toBe(0);
    await screenshots(page, "agents-provider-error");
    const none = await sessionGraphql<{ trustedProviders: { data: unknown[] } }>(
      server(),
      session,
      "{ trustedProviders { data { id } } }",
      {},
      owner.workspaceId,
    );
    expect(none.trustedProviders.data).toEqual([]);
    expect(await fact(page, "Trusted providers")).toBe("0 of 1");

    // The loopback provider (http on 127.0.0.1 is allowed outside production), with a sign-in age.
    await page.getByLabel("Issuer", { exact: true }).fill(provider.issuer);
    await page.getByLabel("Maximum sign-in age (seconds)").fill("600");
    await page.getByRole("button", { name: "Trust provider" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `${provider.issuer} is trusted` })
      .waitFor();
    const row = providerRow(page, provider.issuer);
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    expect(cells.slice(0, 3)).toEqual([provider.issuer, provider.jwksUrl, "At most 10 minutes"]);
    expect(await page.getByLabel("Issuer", { exact: true }).inputValue()).toBe("");
    expect(await page.getByLabel("Issuer", { exact: true }).getAttribute("aria-invalid")).toBeNull();
    await expect.poll(() => fact(page, "Trusted providers")).toBe("1 of 1");
    // Trusted for real, sign-in age included: an ID-JAG without auth_time is refused, a fresh sign-in
    // gets the agent as far as the user's confirmation.
    expect(await registerWithIdJag(server(), provider, "deleted-later")).toEqual({
      status: 401,
      error: "login_required",
    });
    const signedIn = { auth_time: Math.floor(Date.now() / 1000) };
    expect(await registerWithIdJag(server(), provider, "deleted-later", signedIn)).toEqual({
      status: 401,
      error: "interaction_required",
    });
    await screenshots(page, "agents-provider");

    // Deleted after a confirmation: its ID-JAGs are refused from then on.
    await page.getByRole("button", { name: `Delete provider ${provider.issuer}` }).click();
    const dialog = page.getByRole("dialog", { name: "Stop trusting this provider?" });
    await dialog.waitFor();
    await dialog.getByRole("button", { name: "Delete provider" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `${provider.issuer} is no longer trusted` })
      .waitFor();
    await expect.poll(() => providerRow(page, provider.issuer).count()).toBe(0);
    await expect.poll(() => fact(page, "Trusted providers")).toBe("0 of 1");
    expect(await registerWithIdJag(server(), provider, "deleted-later", signedIn)).toEqual({
      status: 400,
      error: "issuer_not_enabled",
    });
    await dashboard.close();
  });

  it("turns agent access off after a confirmation and on again: while off, a real POST /agent/identity is refused with agent_auth_disabled", async () => {
    const pro = await createUser(server(), {
      label: "agents-switch",
      plan: "pro",
      workspaceName: "Switchboard",
    });
    const session = await signInApi(server(), pro.email);
    await sessionGraphql(
      server(),
      session,
      CREATE_PROVIDER,
      { issuer: switchedOff.issuer, jwks_url: switchedOff.jwksUrl },
      pro.workspaceId,
    );
    expect(await registerWithIdJag(server(), switchedOff, "switch-user")).toEqual({
      status: 401,
      error: "interaction_required",
    });

    const dashboard = await openAgents(pro);
    const { page } = dashboard;
    expect(await fact(page, "Token lifetime")).toBe("12 hours");
    // By keyboard: Enter on the button asks first; Escape closes the question, changing nothing, and focus returns.
    const turnOff = page.getByRole("button", { name: "Turn agent access off" });
    await turnOff.focus();
    await page.keyboard.press("Enter");
    const dialog = page.getByRole("dialog", { name: "Turn agent access off?" });
    await dialog.waitFor();
    expect(await dialog.evaluate((element) => element.contains(document.activeElement))).toBe(true);
    await screenshots(page, "agents-turn-off");
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("dialog").count()).toBe(0);
    expect(await turnOff.evaluate((button) => button === document.activeElement)).toBe(true);
    expect(await registerWithIdJag(server(), switchedOff, "switch-user")).toEqual({
      status: 401,
      error: "interaction_required",
    });

    await turnOff.click();
    await dialog.getByRole("button", { name: "Turn off" }).click();
    await page.getByRole("status").filter({ hasText: "Agent access is off" }).waitFor();
    await page.getByText("AI agents cannot register with this workspace").waitFor();
    expect(await registerWithIdJag(server(), switchedOff, "switch-user")).toEqual({
      status: 403,
      error: "agent_auth_disabled",
    });
    // Kept after a reload: it is the workspace's setting, not the page's.
    await page.reload();
    await page.getByRole("button", { name: "Turn agent access on" }).waitFor();
    await screenshots(page, "agents-off");

    await page.getByRole("button", { name: "Turn agent access on" }).click();
    await page.getByRole("status").filter({ hasText: "Agent access is on" }).waitFor();
    await page.getByRole("button", { name: "Turn agent access off" }).waitFor();
    expect(await registerWithIdJag(server(), switchedOff, "switch-user")).toEqual({
      status: 401,
      error: "interaction_required",
    });
    const { agentSettings } = await sessionGraphql<{ agentSettings: { agent_auth_enabled: boolean } }>(
      server(),
      session,
      "{ agentSettings { agent_auth_enabled } }",
      {},
      pro.workspaceId,
    );
    expect(agentSettings.agent_auth_enabled).toBe(true);
    await dashboard.close();
  });

  it("on the free plan: agent access is off by default, and trusting a provider shows the API's plan_limit_reached message", async () => {
    const free = await createUser(server(), {
      label: "agents-free",
      plan: "free",
      workspaceName: "Free Agents",
    });
    const dashboard = await openAgents(free);
    const { page } = dashboard;
    await page.getByRole("button", { name: "Turn agent access on" }).waitFor();
    await page.getByText("AI agents cannot register with this workspace").waitFor();
    expect(await fact(page, "Plan")).toBe("free");
    expect(await fact(page, "Active agents")).toBe("0 of 3");
    expect(await fact(page, "Trusted providers")).toBe("0 of 0");
    expect(await fact(page, "Live tokens per agent")).toBe("Up to 2");
    expect(await fact(page, "Token lifetime")).toBe("1 hour");
    await page.getByText("The free plan cannot trust providers").waitFor();

    dashboard.allowErrors(/status of 403/);
    await page.getByLabel("Issuer", { exact: true }).fill(trustedThenDeleted.issuer);
    await page.getByLabel("JWKS URL", { exact: true }).fill(trustedThenDeleted.jwksUrl);
    await page.getByRole("button", { name: "Trust provider" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.getAttribute("data-code")).toBe("plan_limit_reached");
    expect(await alert.locator(".banner-message").textContent()).toBe(
      "The free plan cannot trust ID-JAG providers; upgrade to add one.",
    );
    expect(await page.getByLabel("Issuer", { exact: true }).getAttribute("aria-invalid")).toBeNull();
    await screenshots(page, "agents-free-limit");

    const session = await signInApi(server(), free.email);
    const { trustedProviders } = await sessionGraphql<{ trustedProviders: { data: unknown[] } }>(
      server(),
      session,
      "{ trustedProviders { data { id } } }",
    );
    expect(trustedProviders.data).toEqual([]);
    expect(await page.getByText("No provider is trusted.").count()).toBe(1);
    await dashboard.close();
  });

  it("lists an agent claimed for the workspace with its scopes, live tokens and last use; revoking it makes its token fail on /v1 within 5 seconds and shows it revoked", async () => {
    // A real agent: registers for the owner, who confirms it for this workspace; it gets a token and calls /v1.
    const agent = await registerServiceAuth(server(), owner.email, {
      agent_name: "Ledger bot",
      scope: "leads.read clients.read",
    });
    expect(
      await decide(server(), agent.claim, owner.userId, { workspaceId: owner.workspaceId }),
    ).toMatchObject({ outcome: "approved" });
    const token = granted(
      await tokenClient(server().url)(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }),
    ).access_token;
    const v1 = () => fetch(`${server().api}/leads`, { headers: { Authorization: `Bearer ${token}` } });
    expect((await v1()).status).toBe(200);

    const dashboard = await openAgents(owner);
    const { page } = dashboard;
    const row = agentRow(page, "Ledger bot");
    // Last use is recorded after the answer: reload until the list shows it.
    await expect
      .poll(
        async () => {
          await row.waitFor();
          const lastUsed = (await row.locator("td").nth(4).textContent()) ?? "";
          if (lastUsed === "Never") await page.reload();
          return lastUsed;
        },
        { timeout: 10_000 },
      )
      .toMatch(new RegExp(String(new Date().getFullYear())));
    const cells = await row.locator("td").allTextContents();
    expect(cells[0]).toContain(`Service auth, for ${owner.email}`);
    expect(cells[0]).toContain(agent.registration_id);
    expect(cells[1]).toBe("Active");
    expect(await row.locator("td").nth(2).locator(".tag").allTextContents()).toEqual([
      "clients.read",
      "leads.read",
    ]);
    expect(cells[3]).toBe("1 of 5");
    expect(await fact(page, "Active agents")).toBe("1 of 10");
    await screenshots(page, "agents-registrations");

    // Revoked from its row, after a confirmation.
    await row.getByRole("button", { name: "Revoke “Ledger bot”" }).click();
    const dialog = page.getByRole("dialog", { name: "Revoke “Ledger bot”?" });
    await dialog.waitFor();
    await screenshots(page, "agents-revoke");
    await dialog.getByRole("button", { name: "Revoke agent" }).click();
    await page.getByRole("status").filter({ hasText: "Agent “Ledger bot” revoked" }).waitFor();
    const revokedAt = Date.now();
    const took = await pollUntil(async () => (await v1()).status === 401, REVOCATION_BOUND_MS);
    expect(took).toBeLessThanOrEqual(REVOCATION_BOUND_MS);
    expect(Date.now() - revokedAt).toBeLessThanOrEqual(REVOCATION_BOUND_MS + 1_000);
    expect(((await (await v1()).json()) as { error: { code: string } }).error.code).toBe("invalid_token");

    await expect.poll(() => row.locator("td").nth(1).textContent()).toMatch(/^Revoked /);
    expect(await row.locator("td").nth(3).textContent()).toBe("0 of 5");
    expect(await row.getByRole("button").count()).toBe(0);
    await expect.poll(() => fact(page, "Active agents")).toBe("0 of 10");
    // The status filter: among the revoked, not among the active.
    await page.getByLabel("Show", { exact: true }).selectOption({ label: "Revoked" });
    await expect.poll(() => agentRow(page, "Ledger bot").count()).toBe(1);
    await screenshots(page, "agents-revoked");
    await page.getByLabel("Show", { exact: true }).selectOption({ label: "Active" });
    await page.getByText("No agent registration has this status.").waitFor();
    await dashboard.close();
  });

  it("explains ID-JAG in a sentence where it appears, linking /auth.md and the API reference", async () => {
    const dashboard = await openAgents(owner);
    const { page } = dashboard;
    const intro = page.getByTestId("id-jag-intro");
    expect(await intro.textContent()).toMatch(/An ID-JAG \(Identity Assertion JWT Authorization Grant\) is /);
    const guide = intro.getByRole("link", { name: "the agents' guide (auth.md)" });
    expect(await guide.getAttribute("href")).toBe("/auth.md");
    expect(await intro.getByRole("link", { name: "API reference" }).getAttribute("href")).toBe("/docs");
    const served = await fetch(`${server().url}/auth.md`);
    expect(served.status).toBe(200);
    expect(await served.text()).toContain("identity_assertion");
    await dashboard.close();
  });

  it("gives the claim page (/agent/claim) the dashboard's look: its fonts, colours, card and buttons", async () => {
    const dashboard = await openAgents(owner);
    const { page } = dashboard;
    // The dashboard's look, read from its sign-in card…
    const claimed = await registerServiceAuth(server(), owner.email, { agent_name: "Styled agent" });
    const signedOut = await openDashboard(browser, server());
    await signedOut.goto("/dashboard/sign-in");
    const expected = await signedOut.page.evaluate(() => {
      const style = (selector: string) => getComputedStyle(document.querySelector(selector)!);
      const c = style(".auth-card");
      const b = style(".button-primary");
      const paper = getComputedStyle(document.body).backgroundColor;
      return {
        font: getComputedStyle(document.body).fontFamily,
        ink: getComputedStyle(document.body).color,
        page:
          paper === "rgba(0, 0, 0, 0)" ? getComputedStyle(document.documentElement).backgroundColor : paper,
        card: [c.backgroundColor, c.borderTopColor, c.borderTopWidth, c.borderTopLeftRadius],
        button: [b.backgroundColor, b.color, b.borderTopLeftRadius, b.fontWeight],
        brand: style(".auth-card .brand").color,
      };
    });
    await signedOut.close();

    // …and the claim page's, signed in with the same session: the agent asks the owner.
    const claim = new URL(claimed.claim.verification_uri);
    // The claim page links no icon (it loads nothing): Chromium asks for /favicon.ico and gets a 404.
    dashboard.allowErrors(/favicon\.ico/);
    await page.goto(`${claim.pathname}${claim.search}`);
    await page.getByRole("button", { name: "Approve" }).waitFor();
    const claimLook = await page.evaluate(() => {
      const style = (selector: string) => getComputedStyle(document.querySelector(selector)!);
      const c = style(".auth-card");
      const b = style("button.button-primary");
      const paper = getComputedStyle(document.body).backgroundColor;
      return {
        font: getComputedStyle(document.body).fontFamily,
        ink: getComputedStyle(document.body).color,
        page:
          paper === "rgba(0, 0, 0, 0)" ? getComputedStyle(document.documentElement).backgroundColor : paper,
        card: [c.backgroundColor, c.borderTopColor, c.borderTopWidth, c.borderTopLeftRadius],
        button: [b.backgroundColor, b.color, b.borderTopLeftRadius, b.fontWeight],
        brand: style(".brand").color,
      };
    });
    expect(claimLook).toEqual(expected);
    await screenshots(page, "claim-page");
    await dashboard.close();
  });

  describe("as a member", () => {
    it("sees agent access, the limits, providers and agents, with every change disabled and the reason given; forced, the API's owner_required message shows and nothing changes", async () => {
      const crewOwner = await createUser(server(), {
        label: "agents-crew-owner",
        plan: "pro",
        workspaceName: "Agent Crew",
      });
      const member = await createUser(server(), { label: "agents-member" });
      await addMember(server(), crewOwner, member, "member");
      const ownerSession = await signInApi(server(), crewOwner.email);
      const issuer = "http://127.0.0.1:9/crew-idp";
      await sessionGraphql(
        server(),
        ownerSession,
        CREATE_PROVIDER,
        { issuer, jwks_url: `${issuer}/jwks.json` },
        crewOwner.workspaceId,
      );
      const agent = await registerServiceAuth(server(), crewOwner.email, {
        agent_name: "Crew bot",
        scope: "leads.read",
      });
      expect(
        await decide(server(), agent.claim, crewOwner.userId, { workspaceId: crewOwner.workspaceId }),
      ).toMatchObject({ outcome: "approved" });

      const dashboard = await openAgents(member, "Agent Crew (member)");
      const { page } = dashboard;
      const note = page.getByRole("note").filter({
        hasText: "Only owners can turn agent access on or off, trust identity providers and revoke agents.",
      });
      await note.waitFor();
      const reason = await note.getAttribute("id");
      expect(reason).toBeTruthy();
      // Everything is shown…
      expect(await fact(page, "Plan")).toBe("pro");
      expect(await fact(page, "Trusted providers")).toBe("1 of 3");
      expect(await fact(page, "Active agents")).toBe("1 of 50");
      await providerRow(page, issuer).waitFor();
      const row = agentRow(page, "Crew bot");
      await row.waitFor();
      expect(await row.locator("td").nth(2).textContent()).toBe("leads.read");
      // …and every change is disabled, each button pointing at the reason.
      const buttons = [
        page.getByRole("button", { name: "Turn agent access off" }),
        page.getByRole("button", { name: `Delete provider ${issuer}` }),
        page.getByRole("button", { name: "Trust provider" }),
        row.getByRole("button", { name: "Revoke “Crew bot”" }),
      ];
      for (const button of buttons) {
        expect(await button.getAttribute("aria-disabled")).toBe("true");
        expect(await button.getAttribute("aria-describedby")).toBe(reason);
      }
      expect(await page.getByLabel("Issuer", { exact: true }).isDisabled()).toBe(true);
      await screenshots(page, "agents-member");

      // A click does nothing…
      await buttons[3]!.click({ force: true });
      await buttons[0]!.click({ force: true });
      expect(await page.getByRole("dialog").count()).toBe(0);
      // …but the buttons are only marked disabled: forced, the requests go out and the server refuses them.
      dashboard.allowErrors(/status of 403/);
      await buttons[3]!.evaluate((button) => button.removeAttribute("aria-disabled"));
      await buttons[3]!.click();
      const revoke = page.getByRole("dialog", { name: "Revoke “Crew bot”?" });
      await revoke.getByRole("button", { name: "Revoke agent" }).click();
      const alert = revoke.getByRole("alert");
      await alert.waitFor();
      expect(await alert.getAttribute("data-code")).toBe("owner_required");
      expect(await alert.textContent()).toContain(OWNER_REQUIRED);
      await revoke.getByRole("button", { name: "Cancel" }).click();

      await buttons[0]!.evaluate((button) => button.removeAttribute("aria-disabled"));
      await buttons[0]!.click();
      const turnOff = page.getByRole("dialog", { name: "Turn agent access off?" });
      await turnOff.getByRole("button", { name: "Turn off" }).click();
      await turnOff.getByRole("alert").filter({ hasText: OWNER_REQUIRED }).waitFor();
      expect(await turnOff.getByRole("alert").getAttribute("data-code")).toBe("owner_required");
      await turnOff.getByRole("button", { name: "Cancel" }).click();

      // Nothing changed.
      const after = await sessionGraphql<{
        agentSettings: { agent_auth_enabled: boolean };
        agentRegistration: { status: string };
      }>(
        server(),
        ownerSession,
        "query($id: ID!) { agentSettings { agent_auth_enabled } agentRegistration(id: $id) { status } }",
        { id: agent.registration_id },
        crewOwner.workspaceId,
      );
      expect(after).toEqual({
        agentSettings: { agent_auth_enabled: true },
        agentRegistration: { status: "active" },
      });
      await dashboard.close();
    });
  });
});
