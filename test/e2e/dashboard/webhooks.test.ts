import { createHmac } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ALL_EVENTS, EVENT_TYPES, TEST_EVENT_TYPE } from "../../../schema/lib/event-types.ts";
import {
  type ApiSession,
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  launchChromium,
  openDashboard,
  screenshots,
  sessionGraphql,
  sessionGraphqlRaw,
  signInApi,
  signInUi,
  type TestUser,
  WIDTHS,
} from "../../support/dashboard.ts";
import { type Received, type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The webhooks screen in headless Chromium, against real deliveries to a receiver on loopback:
 * an endpoint added (refusals under their field, the secret shown once and checked against the
 * signature of a test event), a failing delivery with its answer and attempts and its replay once
 * the receiver recovers, rotation, pause and resume, deletion, and a member kept from all of it.
 */

let browser: Browser;
let receiver: Receiver;
beforeAll(async () => {
  [browser, receiver] = await Promise.all([launchChromium(), startReceiver()]);
});
afterAll(async () => {
  await Promise.all([browser?.close(), receiver?.close()]);
});
afterEach(() => {
  receiver.answer = () => ({ status: 200 });
});

const header = (request: Received, name: string) => {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
};

/** Kontor-Signature checked the way the README tells a receiver to: HMAC-SHA256 of "{timestamp}.{body}", keyed by the whole secret. */
const signedWith = (request: Received, secret: string) =>
  header(request, "Kontor-Signature") ===
  `sha256=${createHmac("sha256", secret)
    .update(`${header(request, "Kontor-Timestamp")}.${request.body}`)
    .digest("hex")}`;

function expectSignedWith(request: Received, secret: string) {
  expect(Math.abs(Date.now() / 1000 - Number(header(request, "Kontor-Timestamp")))).toBeLessThan(300);
  expect(signedWith(request, secret), "Kontor-Signature with the secret shown").toBe(true);
}

/** An attempt is due an hour after a failure: nothing is retried behind a test's back; replay re-sends. */
const ENV = { KONTOR_WEBHOOK_RETRY_SCHEDULE: "1h", KONTOR_WEBHOOK_JITTER: "0" };

e2e(
  "the dashboard's webhooks",
  (server, stack) => {
    let owner: TestUser;
    let session: ApiSession;
    let leadKey: string;

    beforeAll(async () => {
      // Pro: the tests add more endpoints than the free plan allows (docs/api/limits.md).
      owner = await createUser(server(), {
        label: "webhooks-owner",
        workspaceName: "Hook Makers",
        plan: "pro",
      });
      [session, { key: leadKey }] = await Promise.all([
        signInApi(server(), owner.email),
        server().key(owner.workspaceId, ["leads.write"]),
      ]);
    });

    /** A path of the receiver no other test (or stack) uses. */
    const path = (name: string) => `/${stack}/${name}`;

    const gql = <T>(query: string, variables: Record<string, unknown> = {}) =>
      sessionGraphql<T>(server(), session, query, variables, owner.workspaceId);

    /** An endpoint made through the API, for tests whose subject is not creation. */
    const endpointViaApi = async (url: string, events = ["lead.created"]) => {
      const { createWebhookEndpoint } = await gql<{ createWebhookEndpoint: { id: string; secret: string } }>(
        "mutation($url: String!, $events: [String!]!) { createWebhookEndpoint(url: $url, events: $events) { id secret } }",
        { url, events },
      );
      return createWebhookEndpoint;
    };

    /** A lead.created event, from /v1 with an API key. */
    const createLead = async (name: string) => {
      const response = await fetch(`${server().api}/leads`, {
        method: "POST",
        headers: { Authorization: `Bearer ${leadKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({ full_name: name }),
      });
      expect(response.status).toBe(201);
    };

    const openWebhooks = async (width: number = WIDTHS.desktop): Promise<DashboardPage> => {
      const dashboard = await openDashboard(browser, server(), width);
      await signInUi(dashboard, owner.email);
      if (width === WIDTHS.desktop)
        await dashboard.page.getByRole("link", { name: "Webhooks", exact: true }).click();
      else await dashboard.goto("/dashboard/webhooks");
      await dashboard.page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
      return dashboard;
    };

    const endpointRow = (page: Page, url: string) =>
      page.getByRole("region", { name: "Webhook endpoints" }).getByRole("row").filter({ hasText: url });
    const deliveryRow = (page: Page, id: string) =>
      page
        .getByRole("region", { name: "Webhook deliveries" })
        .getByRole("row")
        .filter({ has: page.getByRole("button", { name: `Details of delivery ${id}` }) });
    /** What a delivery's row shows (its columns: Event, Endpoint, Status with the next attempt, Response, Attempts, Actions); undefined while it is not listed. */
    const cells = async (page: Page, id: string) => {
      const row = deliveryRow(page, id);
      if ((await row.count()) === 0) return undefined;
      return row.evaluate((tr) => {
        const td = [...tr.querySelectorAll("td")].map((cell) => cell as HTMLElement);
        const text = (element: Element | null | undefined) => element?.textContent?.trim() ?? "";
        return {
          event: text(td[0]),
          endpoint: text(td[1]),
          status: text(td[2]?.querySelector(".tag")),
          next: text(td[2]?.querySelector(".webhooks-next")),
          response: text(td[3]),
          attempts: text(td[4]),
        };
      });
    };
    /** Presses Refresh until the delivery's row shows `status`; returns what the row shows. */
    const refreshUntil = async (page: Page, id: string, status: string) => {
      await expect
        .poll(
          async () => {
            if ((await cells(page, id))?.status === status) return status;
            await page.getByRole("button", { name: "Refresh", exact: true }).click();
            return (await cells(page, id))?.status;
          },
          { timeout: 15_000, interval: 250 },
        )
        .toBe(status);
      return (await cells(page, id))!;
    };

    it("adds an endpoint: a refused URL or no events shows the API's message under its field and adds nothing; the secret is shown once, and a test event arrives signed with it and is listed as succeeded, HTTP 200, 1 attempt", async () => {
      const dashboard = await openWebhooks();
      const { page } = dashboard;
      await page.getByText("No endpoints yet").waitFor();
      await page.getByText("No deliveries match").waitFor();
      await screenshots(page, "webhooks-empty");

      await page.getByRole("button", { name: "Add endpoint" }).click();
      const dialog = page.getByRole("dialog", { name: "Add a webhook endpoint" });
      await dialog.waitFor();
      expect(await expectLabelled(page)).toEqual(
        expect.arrayContaining([
          "URL",
          "Description (optional)",
          "Every event, including types added later",
          ...EVENT_TYPES,
        ]),
      );
      // Every event by default: the types are shown, but not chosen.
      expect(await dialog.getByLabel("Every event, including types added later").isChecked()).toBe(true);
      expect(await dialog.getByLabel("lead.created", { exact: true }).isDisabled()).toBe(true);

      // URLs the API refuses: its message, under the URL field.
      dashboard.allowErrors(/status of 400/);
      const url = dialog.getByLabel("URL", { exact: true });
      for (const [refused, message] of [
        ["ftp://127.0.0.1/hooks", "url must be an absolute http or https URL."],
        [
          "http://169.254.169.254/latest/meta-data",
          "url points to 169.254.169.254, a link-local address, which is never allowed.",
        ],
      ] as const) {
        await url.fill(refused);
        await dialog.getByRole("button", { name: "Add endpoint" }).click();
        await dialog.locator(".field-error").filter({ hasText: message }).waitFor();
        expect(await url.getAttribute("aria-invalid")).toBe("true");
        expect(await dialog.locator(".field-error").count()).toBe(1);
      }

      // No event chosen: the API's message, under the events.
      const target = receiver.url(path("created"));
      await url.fill(target);
      await dialog.getByLabel("Description (optional)").fill("Order sync");
      await dialog.getByLabel("Every event, including types added later").uncheck();
      await dialog.getByRole("button", { name: "Add endpoint" }).click();
      const eventsError = dialog.getByRole("group", { name: "Events" }).locator(".field-error");
      await eventsError.filter({ hasText: "events needs at least one event type" }).waitFor();
      expect(await url.getAttribute("aria-invalid")).toBeNull();
      await screenshots(page, "webhooks-create-refused");
      // Nothing was made by any of it.
      const none = await gql<{ webhookEndpoints: { data: unknown[] } }>(
        "{ webhookEndpoints { data { id } } }",
      );
      expect(none.webhookEndpoints.data).toEqual([]);

      await dialog.getByLabel("lead.created", { exact: true }).check();
      await dialog.getByLabel("invoice.paid", { exact: true }).check();
      await dialog.getByRole("button", { name: "Add endpoint" }).click();
      const secretBox = page.getByLabel(`Signing secret of ${target}`);
      await secretBox.waitFor();
      const secret = await secretBox.inputValue();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      await page
        .getByRole("status")
        .filter({ hasText: `Endpoint ${target} added` })
        .waitFor();
      const row = endpointRow(page, target);
      await row.waitFor();
      const [shownUrl, events, status] = (await row.locator("td").allTextContents()).map((text) =>
        text.trim(),
      );
      expect(shownUrl).toBe(`${target}Order sync`);
      expect(events).toBe("lead.createdinvoice.paid");
      expect(status).toBe("Active");
      await screenshots(page, "webhooks-created");
      const made = await gql<{
        webhookEndpoints: { data: { url: string; events: string[]; description: string }[] };
      }>("{ webhookEndpoints { data { url events description } } }");
      expect(made.webhookEndpoints.data).toEqual([
        { url: target, events: ["lead.created", "invoice.paid"], description: "Order sync" },
      ]);

      // Shown once: gone when dismissed, and after a reload.
      await page.getByRole("button", { name: "Done" }).click();
      expect(await page.content()).not.toContain(secret);
      await page.reload();
      await endpointRow(page, target).waitFor();
      expect(await page.content()).not.toContain(secret);

      // A test event from the row: the receiver gets webhook.test, signed with that secret.
      await page.getByRole("button", { name: `Send test event to ${target}` }).click();
      const notice = page
        .getByRole("status")
        .filter({ hasText: `A ${TEST_EVENT_TYPE} event is on its way to ${target}` });
      await notice.waitFor();
      const [request] = await receiver.waitFor(path("created"), 1);
      expect(header(request!, "Kontor-Event")).toBe(TEST_EVENT_TYPE);
      expect(request!.json).toMatchObject({
        type: TEST_EVENT_TYPE,
        data: { object: { object: "webhook_endpoint", url: target } },
      });
      expectSignedWith(request!, secret);
      const deliveryId = header(request!, "Kontor-Delivery");
      expect(await notice.textContent()).toContain(deliveryId);
      // The list follows the delivery while it is pending: no Refresh needed.
      await expect
        .poll(async () => (await cells(page, deliveryId))?.status, { timeout: 10_000 })
        .toBe("Succeeded");
      expect(await cells(page, deliveryId)).toEqual({
        event: expect.stringContaining(TEST_EVENT_TYPE),
        endpoint: target,
        status: "Succeeded",
        next: "",
        response: "HTTP 200",
        attempts: "1",
      });
      expect(receiver.on(path("created"))).toHaveLength(1);
      await dashboard.close();
    });

    it("shows a delivery the receiver answered 500 as retrying with the status, body, attempts and next attempt; replayed once the receiver recovers, the event arrives again, signed with the current secret, and succeeds", async () => {
      const target = receiver.url(path("failing"));
      const { secret } = await endpointViaApi(target);
      receiver.answer = (request) =>
        request.path === path("failing")
          ? { status: 500, body: "receiver down: database unavailable" }
          : { status: 200 };
      const dashboard = await openWebhooks();
      const { page } = dashboard;

      await createLead("Failing Lead");
      const [first] = await receiver.waitFor(path("failing"), 1);
      expect(header(first!, "Kontor-Event")).toBe("lead.created");
      const failedId = header(first!, "Kontor-Delivery");
      const failing = await refreshUntil(page, failedId, "Retrying");
      expect(failing).toMatchObject({
        event: expect.stringContaining("lead.created"),
        endpoint: target,
        response: "HTTP 500",
        attempts: "1",
      });
      expect(failing.next).toMatch(/^Next attempt .*\d/);
      await screenshots(page, "webhooks-deliveries-failing");

      // The detail: the answer's body, the error (none: an answer came), when the next attempt is due.
      await page.getByRole("button", { name: `Details of delivery ${failedId}` }).click();
      const detail = page.getByRole("dialog", { name: "Delivery of lead.created" });
      await detail
        .getByRole("region", { name: "Response body" })
        .filter({ hasText: "receiver down: database unavailable" })
        .waitFor();
      const facts = Object.fromEntries(
        await detail
          .locator("dl > div")
          .evaluateAll((items) =>
            items.map((item) => [
              item.querySelector("dt")!.textContent,
              item.querySelector("dd")!.textContent,
            ]),
          ),
      );
      expect(facts).toMatchObject({
        Status: "Retrying",
        "Response status": "HTTP 500",
        Attempts: "1",
        "Last error": "None",
        Delivered: "Not yet",
        Endpoint: target,
        "Delivery (Kontor-Delivery)": failedId,
        "Event (webhook-id)": header(first!, "webhook-id"),
      });
      expect(`Next attempt ${facts["Next attempt"]}`).toBe(failing.next);
      expect(facts.Took).toMatch(/^[\d,.\s]+ ms$/);
      await screenshots(page, "webhooks-delivery-detail");

      // The receiver recovers; the replay goes out at once (the retry would wait an hour).
      receiver.answer = () => ({ status: 200 });
      await detail.getByRole("button", { name: "Replay" }).click();
      const notice = page
        .getByRole("status")
        .filter({ hasText: `lead.created sent again to ${target} as delivery ` });
      await notice.waitFor();
      await detail.waitFor({ state: "hidden" });
      const [, again] = await receiver.waitFor(path("failing"), 2);
      const replayId = header(again!, "Kontor-Delivery");
      expect(replayId).not.toBe(failedId);
      expect(await notice.textContent()).toContain(replayId);
      // The same event (receivers de-duplicate on webhook-id), signed with the endpoint's secret.
      expect(header(again!, "webhook-id")).toBe(header(first!, "webhook-id"));
      expect(again!.json.id).toBe(first!.json.id);
      expect(again!.json.data.object.full_name).toBe("Failing Lead");
      expectSignedWith(again!, secret);
      await expect
        .poll(async () => (await cells(page, replayId))?.status, { timeout: 10_000 })
        .toBe("Succeeded");
      expect(await cells(page, replayId)).toMatchObject({ response: "HTTP 200", attempts: "1", next: "" });
      // The failed delivery stays as it was.
      expect(await cells(page, failedId)).toEqual(failing);
      await dashboard.close();
    });

    it("rotates the secret at a phone's width: the new one is shown once, and the next delivery is signed with it, not the old one", async () => {
      const target = receiver.url(path("rotated"));
      const { secret: old } = await endpointViaApi(target);
      const dashboard = await openWebhooks(WIDTHS.phone);
      const { page } = dashboard;

      await page.getByRole("button", { name: `Rotate secret of ${target}` }).click();
      const dialog = page.getByRole("dialog", { name: "Rotate the signing secret?" });
      await dialog.getByText("at once, with no overlap").waitFor();
      await screenshots(page, "webhooks-rotate");
      await dialog.getByRole("button", { name: "Rotate secret" }).click();
      const secretBox = page.getByLabel(`Signing secret of ${target}`);
      await secretBox.waitFor();
      const rotated = await secretBox.inputValue();
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(old);
      await page
        .getByRole("status")
        .filter({ hasText: `The secret of ${target} was replaced` })
        .waitFor();
      await page.getByRole("button", { name: "Done" }).click();
      expect(await page.content()).not.toContain(rotated);

      await page.getByRole("button", { name: `Send test event to ${target}` }).click();
      const [request] = await receiver.waitFor(path("rotated"), 1);
      expectSignedWith(request!, rotated);
      expect(signedWith(request!, old), "signed with the old secret").toBe(false);
      await dashboard.close();
    });

    it("pauses an endpoint: a new event is held for it (listed as held, nothing sent) while an active endpoint receives it; resumed, the held delivery is sent", async () => {
      const paused = receiver.url(path("paused"));
      const active = receiver.url(path("active"));
      await endpointViaApi(paused);
      await endpointViaApi(active);
      const dashboard = await openWebhooks();
      const { page } = dashboard;

      await page.getByRole("button", { name: `Pause ${paused}` }).click();
      await page
        .getByRole("status")
        .filter({ hasText: `${paused} paused` })
        .waitFor();
      await expect
        .poll(async () => (await endpointRow(page, paused).locator("td").nth(2).textContent())?.trim())
        .toBe("Paused");
      expect(await page.getByRole("button", { name: `Resume ${paused}` }).count()).toBe(1);
      expect((await endpointRow(page, active).locator("td").nth(2).textContent())?.trim()).toBe("Active");

      await createLead("Paused Lead");
      const [delivered] = await receiver.waitFor(path("active"), 1);
      const eventId = header(delivered!, "webhook-id");

      // The paused endpoint's delivery exists, held: so the fan-out is done and nothing was sent.
      await page.getByRole("button", { name: `Deliveries to ${paused}` }).click();
      const filter = page.getByLabel("Endpoint", { exact: true });
      await expect
        .poll(() => filter.evaluate((select: HTMLSelectElement) => select.selectedOptions[0]?.textContent))
        .toBe(paused);
      const deliveries = page.getByRole("region", { name: "Webhook deliveries" });
      await expect
        .poll(
          async () => {
            if ((await deliveries.getByRole("row").count()) < 2)
              await page.getByRole("button", { name: "Refresh", exact: true }).click();
            return deliveries.getByRole("row").count();
          },
          { timeout: 15_000, interval: 250 },
        )
        .toBe(2);
      const heldRow = (await deliveries.getByRole("row").nth(1).locator("td").allTextContents()).map((text) =>
        text.trim(),
      );
      expect(heldRow[0]).toMatch(/^lead\.created/);
      expect(heldRow.slice(1)).toEqual([
        paused,
        "Held: endpoint paused",
        "Not sent yet",
        "0",
        "DetailsReplay",
      ]);
      await screenshots(page, "webhooks-paused");
      expect(receiver.on(path("paused"))).toEqual([]);

      await page.getByRole("button", { name: `Resume ${paused}` }).click();
      await page
        .getByRole("status")
        .filter({ hasText: `${paused} resumed` })
        .waitFor();
      const [sent] = await receiver.waitFor(path("paused"), 1);
      expect(header(sent!, "webhook-id")).toBe(eventId);
      await expect
        .poll(async () => {
          const row = deliveries.getByRole("row").nth(1);
          const status = (await row.locator("td").nth(2).textContent())?.trim();
          if (status !== "Succeeded")
            await page.getByRole("button", { name: "Refresh", exact: true }).click();
          return status;
        })
        .toBe("Succeeded");
      expect(receiver.on(path("paused"))).toHaveLength(1);
      await dashboard.close();
    });

    it("deletes an endpoint after a confirmation, by keyboard: Escape keeps it; confirmed, it leaves the list and receives nothing more", async () => {
      const doomed = receiver.url(path("deleted"));
      const witness = receiver.url(path("witness"));
      const { id } = await endpointViaApi(doomed);
      await endpointViaApi(witness);
      const dashboard = await openWebhooks();
      const { page } = dashboard;

      const remove = page.getByRole("button", { name: `Delete ${doomed}` });
      await remove.focus();
      await page.keyboard.press("Enter");
      const dialog = page.getByRole("dialog", { name: "Delete this endpoint?" });
      await dialog.waitFor();
      // Focus is in the dialog; Escape closes it and gives focus back.
      expect(await dialog.evaluate((element) => element.contains(document.activeElement))).toBe(true);
      await screenshots(page, "webhooks-delete");
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden" });
      expect(await remove.evaluate((button) => button === document.activeElement)).toBe(true);
      expect(await endpointRow(page, doomed).count()).toBe(1);

      await page.keyboard.press("Enter");
      await dialog.waitFor();
      await dialog.getByRole("button", { name: "Delete endpoint" }).focus();
      await page.keyboard.press("Enter");
      await page
        .getByRole("status")
        .filter({ hasText: `Endpoint ${doomed} deleted` })
        .waitFor();
      await expect.poll(() => endpointRow(page, doomed).count()).toBe(0);
      const gone = await sessionGraphqlRaw(
        server(),
        session,
        "query($id: ID!) { webhookEndpoint(id: $id) { id } }",
        { id },
        owner.workspaceId,
      );
      expect(gone.body.errors?.[0]?.extensions.code).toBe("not_found");

      await createLead("After Delete");
      await receiver.waitFor(path("witness"), 1);
      expect(receiver.on(path("deleted"))).toEqual([]);
      await dashboard.close();
    });

    describe("as a member", () => {
      it("sees endpoints and deliveries with their details, every change disabled with the reason; a forced test event shows the API's owner_required message and sends nothing", async () => {
        const target = receiver.url(path("member"));
        const { id } = await endpointViaApi(target, [ALL_EVENTS]);
        const { testWebhookEndpoint } = await gql<{ testWebhookEndpoint: { id: string } }>(
          "mutation($id: ID!) { testWebhookEndpoint(id: $id) { id } }",
          {
            id,
          },
        );
        await receiver.waitFor(path("member"), 1);
        const member = await createUser(server(), { label: "webhooks-member" });
        await addMember(server(), owner, member, "member");

        const dashboard = await openDashboard(browser, server());
        const { page } = dashboard;
        await signInUi(dashboard, member.email);
        await page.getByLabel("Workspace").selectOption({ label: "Hook Makers (member)" });
        await page.getByRole("link", { name: "Webhooks", exact: true }).click();
        await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor();
        await page
          .getByRole("note")
          .filter({
            hasText:
              "Only owners of the workspace can add, pause, test, rotate and delete endpoints, and replay deliveries.",
          })
          .waitFor();
        await endpointRow(page, target).waitFor();
        await expect
          .poll(async () => (await cells(page, testWebhookEndpoint.id))?.status, { timeout: 10_000 })
          .toBe("Succeeded");

        const disabled = [
          "Add endpoint",
          `Send test event to ${target}`,
          `Pause ${target}`,
          `Rotate secret of ${target}`,
          `Delete ${target}`,
          `Replay delivery ${testWebhookEndpoint.id}`,
        ];
        for (const name of disabled)
          expect(
            await page.getByRole("button", { name, exact: true }).getAttribute("aria-disabled"),
            name,
          ).toBe("true");
        // Reading is theirs: the deliveries of one endpoint, and a delivery's detail.
        await page.getByRole("button", { name: `Deliveries to ${target}` }).click();
        await page.getByRole("button", { name: `Details of delivery ${testWebhookEndpoint.id}` }).click();
        const detail = page.getByRole("dialog", { name: `Delivery of ${TEST_EVENT_TYPE}` });
        await detail.getByRole("region", { name: "Response body" }).filter({ hasText: "ok" }).waitFor();
        expect(await detail.getByRole("button", { name: "Replay" }).getAttribute("aria-disabled")).toBe(
          "true",
        );
        await detail.getByRole("button", { name: "Close" }).click();
        await screenshots(page, "webhooks-member");

        // A click on a disabled action does nothing…
        const test = page.getByRole("button", { name: `Send test event to ${target}` });
        await test.click({ force: true });
        expect(await page.getByRole("status").filter({ hasText: "is on its way" }).count()).toBe(0);
        // …and forced, the server refuses it with its own message.
        dashboard.allowErrors(/status of 403/);
        await test.evaluate((button) => button.removeAttribute("aria-disabled"));
        await test.click();
        const alert = page.getByRole("alert");
        await alert.waitFor();
        expect(await alert.getAttribute("data-code")).toBe("owner_required");
        expect(await alert.textContent()).toContain("Only an owner of the workspace may do this");
        const { webhookDeliveries } = await gql<{ webhookDeliveries: { data: unknown[] } }>(
          "query($id: ID) { webhookDeliveries(endpoint_id: $id) { data { id } } }",
          { id },
        );
        expect(webhookDeliveries.data).toHaveLength(1);
        expect(receiver.on(path("member"))).toHaveLength(1);
        await dashboard.close();
      });
    });
  },
  ENV,
);
