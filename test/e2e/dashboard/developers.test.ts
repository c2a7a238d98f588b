import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiSession,
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  openSignedIn,
  screenshots,
  sessionGraphql,
  sessionGraphqlRaw,
  signInApi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The developers' screens in headless Chromium: Events (the workspace's events newest first, the
 * type filter in the URL, paging, each event's page with its JSON payload equal to the API's and
 * its deliveries to a receiver on loopback), for an owner and a member; and the audit log (owners
 * only: its filters in the URL, paging, actors named, a member refused with the API's message).
 */

const browser = useChromium();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

interface EventRow {
  id: string;
  type: string;
}

e2e("the dashboard's developer screens", (server, stack) => {
  let owner: TestUser;
  let member: TestUser;
  let session: ApiSession;
  let apiKey: string;
  let endpointUrl: string;
  /** The workspace's events, newest first, as the API lists them. */
  let events: EventRow[] = [];
  let dashboard: DashboardPage;

  const gql = <T>(query: string, variables: Record<string, unknown> = {}) =>
    sessionGraphql<T>(server(), session, query, variables, owner.workspaceId);

  beforeAll(async () => {
    owner = await createUser(server(), { label: "dev-owner", workspaceName: "Dev Desk", plan: "pro" });
    member = await createUser(server(), { label: "dev-member" });
    [session, { key: apiKey }] = await Promise.all([
      signInApi(server(), owner.email),
      server().key(owner.workspaceId, ["leads.write", "clients.write", "webhooks.read"]),
      addMember(server(), owner, member, "member"),
    ]);
    endpointUrl = receiver.url(`/${stack}/developers`);
    await gql(
      'mutation($url: String!) { createWebhookEndpoint(url: $url, events: ["lead.created"]) { id } }',
      {
        url: endpointUrl,
      },
    );
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${server().api}${path}`, {
        method: "POST",
        headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(201);
    };
    for (let i = 1; i <= 26; i++) await post("/leads", { full_name: `Dev Lead ${i}` });
    await post("/clients", { name: "Dev Client" });
    ({
      events: { data: events },
    } = await gql<{ events: { data: EventRow[] } }>("{ events(limit: 100) { data { id type } } }"));
    expect(events).toHaveLength(27);
    // Every lead.created reached the receiver.
    await receiver.waitFor(`/${stack}/developers`, 26, 15_000);
    dashboard = await openSignedIn(browser(), server(), owner);
  });

  afterAll(async () => {
    await dashboard?.close();
  });

  const shownEvents = () => dashboard.page.getByRole("link", { name: /^Event evt_/ }).allTextContents();

  describe("events", () => {
    it("lists the events newest first, 25 at a time with Show more, filtered by type in the URL (screenshots)", async () => {
      const { page } = dashboard;
      await page.getByRole("link", { name: "Events", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Events" }).waitFor();
      await expect.poll(shownEvents).toEqual(events.slice(0, 25).map((e) => e.id));
      const newest = await page
        .getByRole("row")
        .filter({ hasText: events[0]!.id })
        .locator("td")
        .allTextContents();
      expect(newest[0]).toBe(events[0]!.type);
      expect(await expectLabelled(page)).toEqual(["Workspace", "Type"]);
      await screenshots(page, "events");
      await page.getByRole("button", { name: "Show more" }).click();
      await expect.poll(shownEvents).toEqual(events.map((e) => e.id));
      expect(await page.getByRole("button", { name: "Show more" }).count()).toBe(0);

      // The type filter, by keyboard: focus, a key, and the URL holds it.
      await page.getByLabel("Type").focus();
      await page.keyboard.type("client.created");
      await expect.poll(() => new URL(page.url()).searchParams.get("type")).toBe("client.created");
      await expect
        .poll(shownEvents)
        .toEqual(events.filter((e) => e.type === "client.created").map((e) => e.id));
      // A link reproduces it.
      await dashboard.goto("/dashboard/events?type=lead.created");
      await expect.poll(shownEvents).toEqual(
        events
          .filter((e) => e.type === "lead.created")
          .slice(0, 25)
          .map((e) => e.id),
      );
      expect(await page.getByLabel("Type").inputValue()).toBe("lead.created");
    });

    it("opens an event's page: the JSON payload is the API's, its delivery to the loopback receiver is listed with its details; Back returns to the filtered list", async () => {
      const { page } = dashboard;
      await dashboard.goto("/dashboard/events?type=lead.created");
      const target = events.find((e) => e.type === "lead.created")!;
      await page.getByRole("link", { name: `Event ${target.id}` }).click();
      await page.getByRole("heading", { level: 1, name: "lead.created" }).waitFor();
      expect(new URL(page.url()).pathname).toBe(`/dashboard/events/${target.id}`);

      const api = await fetch(`${server().api}/events/${target.id}`, {
        headers: { Authorization: `Bearer ${apiKey}` },
      });
      expect(api.status).toBe(200);
      const held = await api.json();
      const shown = JSON.parse((await page.getByRole("region", { name: "JSON" }).textContent())!);
      expect(shown).toEqual(held);
      expect(held.data.object.full_name).toMatch(/^Dev Lead /);
      // The body the receiver got is that payload too.
      const got = receiver.on(`/${stack}/developers`).find((request) => request.json?.id === target.id);
      expect(got?.json).toEqual(held);

      // Its delivery: the endpoint, succeeded, HTTP 200, one attempt; the details as on the Webhooks screen.
      const { webhookDeliveries } = await gql<{
        webhookDeliveries: { data: { id: string; status: string }[] };
      }>("query($id: ID) { webhookDeliveries(event_id: $id) { data { id status } } }", { id: target.id });
      expect(webhookDeliveries.data).toEqual([{ id: expect.any(String), status: "succeeded" }]);
      const row = page.getByRole("region", { name: "Deliveries of this event" }).getByRole("row").nth(1);
      await expect
        .poll(() => row.locator("td").allTextContents())
        .toEqual([endpointUrl, "Succeeded", "HTTP 200", "1", expect.any(String), "Details"]);
      await screenshots(page, "event");
      await page
        .getByRole("button", { name: `Details of delivery ${webhookDeliveries.data[0]!.id}` })
        .click();
      const dialog = page.getByRole("dialog", { name: "Delivery of lead.created" });
      await dialog.getByText(webhookDeliveries.data[0]!.id).waitFor();
      // Its attempts, as the API keeps them: one, answered 200.
      const { webhookDelivery } = await gql<{
        webhookDelivery: {
          attempt_history: { number: number; response_status: number; duration_ms: number }[];
        };
      }>(
        "query($id: ID!) { webhookDelivery(id: $id) { attempt_history { number response_status duration_ms } } }",
        {
          id: webhookDeliveries.data[0]!.id,
        },
      );
      expect(webhookDelivery.attempt_history).toEqual([
        { number: 1, response_status: 200, duration_ms: expect.any(Number) },
      ]);
      const attemptCells = await dialog
        .getByRole("region", { name: "Attempts" })
        .getByRole("row")
        .nth(1)
        .locator("td")
        .allTextContents();
      expect(attemptCells.slice(0, 3)).toEqual([
        "1",
        "HTTP 200",
        `${webhookDelivery.attempt_history[0]!.duration_ms} ms`,
      ]);
      await screenshots(page, "event-delivery");
      await dialog.getByRole("button", { name: "Close" }).click();
      await expect.poll(() => dialog.count()).toBe(0);

      await page.goBack();
      await page.getByRole("heading", { level: 1, name: "Events" }).waitFor();
      expect(new URL(page.url()).searchParams.get("type")).toBe("lead.created");

      // The client.created event went to no endpoint: its page says so.
      const client = events.find((e) => e.type === "client.created")!;
      await dashboard.goto(`/dashboard/events/${client.id}`);
      await page.getByText("Not delivered: no endpoint listened for this event").waitFor();
    });

    it("shows a member the events and deliveries, with replay kept for owners", async () => {
      const view = await openSignedIn(browser(), server(), member, { workspace: "Dev Desk (member)" });
      const { page } = view;
      // The overview's recent activity leads to every event.
      await page.getByRole("link", { name: "All events" }).click();
      await page.getByRole("heading", { level: 1, name: "Events" }).waitFor();
      await expect
        .poll(() => page.getByRole("link", { name: /^Event evt_/ }).allTextContents())
        .toEqual(events.slice(0, 25).map((e) => e.id));
      const target = events.find((e) => e.type === "lead.created")!;
      await page.getByRole("link", { name: `Event ${target.id}` }).click();
      await page.getByRole("button", { name: /^Details of delivery / }).click();
      const dialog = page.getByRole("dialog", { name: "Delivery of lead.created" });
      await dialog.getByText("Only owners of the workspace").waitFor();
      expect(await dialog.getByRole("button", { name: "Replay" }).isDisabled()).toBe(true);
      await view.close();
    });
  });

  describe("audit log", () => {
    interface AuditRow {
      id: string;
      action: string;
      actor: { type: string; id: string | null; email: string | null };
      target: { type: string; id: string | null };
      client_ip: string | null;
      user_agent: string | null;
      request_id: string | null;
    }
    let audit: AuditRow[] = [];
    let robot: { id: string; secret: string };
    const shownAudit = () =>
      dashboard.page
        .getByRole("region", { name: "Audit events" })
        .getByRole("row")
        .filter({ has: dashboard.page.locator("td") })
        .evaluateAll((rows) => rows.map((row) => row.querySelector("td:nth-child(2)")!.textContent));

    beforeAll(async () => {
      // A key named "Hook robot" adds an endpoint (an API key as the actor); 24 more keys page the list.
      const { createApiKey } = await gql<{ createApiKey: { api_key: { id: string }; secret: string } }>(
        "mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { api_key { id } secret } }",
        { input: { name: "Hook robot", scopes: ["webhooks.write"] } },
      );
      robot = { id: createApiKey.api_key.id, secret: createApiKey.secret };
      const response = await fetch(`${server().api}/webhook-endpoints`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${robot.secret}`,
          "Content-Type": "application/json",
          "User-Agent": "hook-robot/1.0",
        },
        body: JSON.stringify({ url: receiver.url(`/${stack}/robot`), events: ["client.created"] }),
      });
      expect(response.status).toBe(201);
      for (let i = 1; i <= 24; i++)
        await gql("mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret } }", {
          input: { name: `Batch key ${i}`, scopes: ["leads.read"] },
        });
      ({
        auditEvents: { data: audit },
      } = await gql<{ auditEvents: { data: AuditRow[] } }>(
        "{ auditEvents(limit: 100) { data { id action actor { type id email } target { type id } client_ip user_agent request_id } } }",
      ));
      expect(audit.length).toBeGreaterThan(25);
    });

    it("lists the changes newest first with Show more, each with its actor named, target, IP, user agent and request id (screenshots)", async () => {
      const { page } = dashboard;
      await page.getByRole("link", { name: "Audit log", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Audit log" }).waitFor();
      await expect.poll(shownAudit).toEqual(audit.slice(0, 25).map((e) => e.action));
      await page.getByRole("button", { name: "Show more" }).click();
      await expect.poll(async () => (await shownAudit()).length).toBe(Math.min(audit.length, 50));

      // The key's change: the key by its name, the endpoint, the request's IP, user agent and id.
      const byKey = audit.find((e) => e.actor.type === "api_key")!;
      expect(byKey).toMatchObject({
        action: "webhook_endpoint.created",
        actor: { id: robot.id },
        user_agent: "hook-robot/1.0",
      });
      const cells = await page
        .getByRole("row")
        .filter({ hasText: byKey.request_id! })
        .locator("td")
        .allTextContents();
      expect(cells.slice(1)).toEqual([
        "webhook_endpoint.created",
        `Hook robot ${robot.id}`,
        `webhook_endpoint ${byKey.target.id}`,
        `${byKey.client_ip} hook-robot/1.0`,
        byKey.request_id,
      ]);
      // A user's change: their e-mail.
      const byOwner = audit.find((e) => e.action === "api_key.created")!;
      const ownerCells = await page
        .getByRole("row")
        .filter({ hasText: byOwner.request_id! })
        .locator("td")
        .allTextContents();
      expect(ownerCells[2]).toBe(owner.email);
      expect(await expectLabelled(page)).toEqual([
        "Workspace",
        "Action",
        "Actor id",
        "Target id",
        "From",
        "To",
      ]);
      await screenshots(page, "audit");
    });

    it("filters by action, actor and target with the keyboard, kept in the URL; Back and a link reproduce it", async () => {
      const { page } = dashboard;
      await dashboard.goto("/dashboard/audit");
      await expect.poll(async () => (await shownAudit()).length).toBe(25);
      // Keyboard only: focus the action, type, Tab to the actor, type, Enter.
      await page.getByLabel("Action", { exact: true }).focus();
      await page.keyboard.type("webhook_endpoint.created");
      await page.keyboard.press("Tab");
      await page.keyboard.type(robot.id);
      await page.keyboard.press("Enter");
      await expect.poll(shownAudit).toEqual(["webhook_endpoint.created"]);
      const url = new URL(page.url());
      expect([url.searchParams.get("action"), url.searchParams.get("actor")]).toEqual([
        "webhook_endpoint.created",
        robot.id,
      ]);

      const key = audit.find((e) => e.action === "api_key.created" && e.target.id)!;
      await dashboard.goto(`/dashboard/audit?target=${key.target.id}`);
      await expect
        .poll(shownAudit)
        .toEqual(audit.filter((e) => e.target.id === key.target.id).map((e) => e.action));
      expect(await page.getByLabel("Target id").inputValue()).toBe(key.target.id);
      // A time range after everything: nothing.
      await dashboard.goto(`/dashboard/audit?from=${encodeURIComponent("2999-01-01T00:00:00Z")}`);
      await page.getByText("No changes match these filters.").waitFor();
      await page.goBack();
      await expect.poll(() => page.getByLabel("Target id").inputValue()).toBe(key.target.id);
    });

    it("is the owners': a member has no entry, and the URL shows the API's owner_required message", async () => {
      const view = await openSignedIn(browser(), server(), member, { workspace: "Dev Desk (member)" });
      const { page } = view;
      const nav = page.getByRole("navigation", { name: "Dashboard" });
      await nav.getByRole("link", { name: "Members" }).waitFor();
      expect(await nav.getByRole("link", { name: "Audit log" }).count()).toBe(0);
      view.allowErrors(/status of 403/);
      await view.goto("/dashboard/audit");
      const { body } = await sessionGraphqlRaw(
        server(),
        await signInApi(server(), member.email),
        "{ auditEvents { data { id } } }",
        {},
        owner.workspaceId,
      );
      const message = (body as { errors: { message: string; extensions: { code: string } }[] }).errors[0]!;
      expect(message.extensions.code).toBe("owner_required");
      await page.getByText(message.message).waitFor();
      expect(await page.getByRole("region", { name: "Audit events" }).count()).toBe(0);
      await screenshots(page, "audit-member");
      await view.close();
    });
  });
});
