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
  signInApi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The developers' screens in headless Chromium: Events (the workspace's events newest first, the
 * type filter in the URL, paging, each event's page with its JSON payload equal to the API's and
 * its deliveries to a receiver on loopback), for an owner and a member.
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
});
