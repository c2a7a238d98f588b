import { beforeAll, describe, expect, it } from "vitest";
import { ISO } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import type { ApiResponse } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import { e2e } from "../../support/suite.ts";
import {
  DESCRIPTION,
  ENDPOINT_ID,
  ENV,
  NEVER_DELIVERY,
  NEVER_ENDPOINT,
  NEVER_EVENT,
  receiver,
  SECRET,
  sleep,
  useReceiver,
  type Workspace,
  webhookHelpers,
} from "./support.ts";

/**
 * Webhooks end to end (docs/api/webhooks.md and "The API in short"): endpoints over REST and GraphQL,
 * and real deliveries to a loopback receiver through the production code path, with a short retry
 * schedule and timeout set through the server's configuration (./support.ts).
 *
 * This part: creating, listing, updating and deleting endpoints, their validation, and the list of deliveries.
 */

useReceiver();

e2e(
  "webhooks: endpoints",
  (server, stack) => {
    const { at, prisma, workspace, createEndpoint, listen, newLead, deliveriesOf, deliveriesWhen, finished } =
      webhookHelpers(server, stack);

    describe("endpoints", () => {
      let ws: Workspace;

      beforeAll(async () => {
        ws = await workspace();
      });

      it("creates an endpoint with 201 and its secret, shown once and stored sealed", async () => {
        const res = await ws.api.post("/webhook-endpoints", {
          url: receiver.url(at("never-called")),
          events: ["invoice.paid", "lead.created"],
          description: "  Accounting sync ",
        });
        expect(res.status).toBe(201);
        expect(res.body).toEqual({
          object: "webhook_endpoint",
          id: expect.stringMatching(ENDPOINT_ID),
          url: receiver.url(at("never-called")),
          events: ["invoice.paid", "lead.created"],
          description: "Accounting sync",
          is_active: true,
          status: "active",
          disabled_reason: null,
          created_at: expect.stringMatching(ISO),
          updated_at: expect.stringMatching(ISO),
          secret: expect.stringMatching(SECRET),
        });
        const { secret, ...shown } = res.body;
        expect(Buffer.from(secret.slice("whsec_".length), "base64")).toHaveLength(32);

        const row = await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: shown.id } });
        expect(row.workspaceId).toBe(ws.workspaceId);
        expect(row.secretSealed).not.toContain(secret);
        expect(row.secretSealed).not.toContain(secret.slice("whsec_".length, -1));
        expect(row.secretSealed).not.toContain(
          Buffer.from(secret.slice("whsec_".length), "base64").toString("hex"),
        );

        const one = await ws.api.get(`/webhook-endpoints/${shown.id}`);
        expect(one.status).toBe(200);
        expect(one.body).toEqual(shown);
        const list = await ws.api.get("/webhook-endpoints");
        expect(list.status).toBe(200);
        expect(list.body.data.find((e: { id: string }) => e.id === shown.id)).toEqual(shown);
        for (const endpoint of list.body.data) expect(endpoint).not.toHaveProperty("secret");
        const patched = await ws.api.patch(`/webhook-endpoints/${shown.id}`, { description: "renamed" });
        expect(patched.status).toBe(200);
        expect(patched.body).not.toHaveProperty("secret");
        expect(patched.body).toMatchObject({
          ...shown,
          description: "renamed",
          updated_at: expect.stringMatching(ISO),
        });
        expect(JSON.stringify([one.body, list.body, patched.body])).not.toContain(secret);
      });

      it("gives every endpoint its own secret", async () => {
        const a = await listen(ws.api, at("never-called"));
        const b = await listen(ws.api, at("never-called"));
        expect(a.secret).not.toBe(b.secret);
        expect(a.id).not.toBe(b.id);
      });

      it("lists newest first, paged with limit and cursor", async () => {
        const own = await workspace();
        const empty = await own.api.get("/webhook-endpoints");
        expect(empty.body).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
        const made = [];
        for (const name of ["first", "second", "third"])
          made.push(
            await createEndpoint(own.api, { url: receiver.url(at(name)), events: ["*"], description: name }),
          );
        const newestFirst = made.map((endpoint) => endpoint.id).reverse();

        const all = await own.api.get("/webhook-endpoints");
        expect(all.status).toBe(200);
        expect(all.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        expect(all.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst);

        const first = await own.api.get("/webhook-endpoints?limit=2");
        expect(first.body).toMatchObject({ object: "list", has_more: true, next_cursor: expect.any(String) });
        expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 2));
        const second = await own.api.get(`/webhook-endpoints?limit=2&cursor=${first.body.next_cursor}`);
        expect(second.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        expect(second.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(2));

        expectError(await own.api.get("/webhook-endpoints?limit=0"), 400, "validation_failed", "limit");
        expectError(
          await own.api.get("/webhook-endpoints?cursor=nonsense"),
          400,
          "validation_failed",
          "cursor",
        );
      });

      it("updates url, events, description and is_active, and deletes", async () => {
        const created = await createEndpoint(ws.api, {
          url: receiver.url(at("update-a")),
          events: ["lead.created"],
          description: "old",
        });
        const { secret: _secret, ...endpoint } = created;

        const moved = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, {
          url: receiver.url(at("update-b")),
          events: ["invoice.created", "quote.created"],
        });
        expect(moved.status).toBe(200);
        expect(moved.body).toEqual({
          ...endpoint,
          url: receiver.url(at("update-b")),
          events: ["invoice.created", "quote.created"],
          updated_at: expect.stringMatching(ISO),
        });
        expect(new Date(moved.body.updated_at).getTime()).toBeGreaterThanOrEqual(
          new Date(endpoint.updated_at).getTime(),
        );

        const all = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, {
          events: ["*"],
          description: null,
        });
        expect(all.body).toMatchObject({ events: ["*"], description: null });

        const paused = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        expect(paused.status).toBe(200);
        expect(paused.body).toMatchObject({ is_active: false, status: "paused", disabled_reason: null });
        const resumed = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        expect(resumed.body).toMatchObject({ is_active: true, status: "active", disabled_reason: null });
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(resumed.body);

        const deleted = await ws.api.delete(`/webhook-endpoints/${endpoint.id}`);
        expect(deleted.status).toBe(200);
        expect(deleted.body).toEqual({ id: endpoint.id, object: "webhook_endpoint", deleted: true });
        expectError(await ws.api.get(`/webhook-endpoints/${endpoint.id}`), 404, "not_found");
        expectError(await ws.api.delete(`/webhook-endpoints/${endpoint.id}`), 404, "not_found");
        expectError(
          await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { description: "x" }),
          404,
          "not_found",
        );
        expect(await prisma().webhookEndpoint.count({ where: { id: endpoint.id } })).toBe(0);
      });

      it("answers 404 not_found for an unknown id on every route", async () => {
        for (const res of [
          await ws.api.get(`/webhook-endpoints/${NEVER_ENDPOINT}`),
          await ws.api.patch(`/webhook-endpoints/${NEVER_ENDPOINT}`, { description: "x" }),
          await ws.api.delete(`/webhook-endpoints/${NEVER_ENDPOINT}`),
          await ws.api.post(`/webhook-endpoints/${NEVER_ENDPOINT}/rotate-secret`),
          await ws.api.post(`/webhook-endpoints/${NEVER_ENDPOINT}/test`),
          await ws.api.get(`/webhook-deliveries/${NEVER_DELIVERY}`),
          await ws.api.post(`/webhook-deliveries/${NEVER_DELIVERY}/replay`),
          await ws.api.get(`/events/${NEVER_EVENT}`),
        ]) {
          expectError(res, 404, "not_found");
          expect(res.body.error.type).toBe("invalid_request_error");
        }
      });

      it("stops sending to a deleted endpoint", async () => {
        const own = await workspace();
        const kept = await listen(own.api, at("delete-kept"));
        const doomed = await listen(own.api, at("delete-doomed"));
        await newLead(own.api);
        await receiver.waitFor(at("delete-doomed"), 1);
        expect((await own.api.delete(`/webhook-endpoints/${doomed.id}`)).status).toBe(200);
        expect(await deliveriesOf(doomed.id)).toEqual([]);
        await newLead(own.api);
        await receiver.waitFor(at("delete-kept"), 2);
        await sleep(300);
        expect(receiver.on(at("delete-doomed"))).toHaveLength(1);
        expect(await deliveriesOf(kept.id)).toHaveLength(2);
      });
    });

    describe("validation", () => {
      let ws: Workspace;
      const count = () => prisma().webhookEndpoint.count({ where: { workspaceId: ws.workspaceId } });

      beforeAll(async () => {
        ws = await workspace();
      });

      const good = () => ({ url: receiver.url(at("validation")), events: ["lead.created"] });

      it.each([
        ["missing url", { url: undefined }, "url"],
        ["an empty url", { url: "" }, "url"],
        ["an ftp url", { url: "ftp://127.0.0.1/hook" }, "url"],
        ["a relative url", { url: "/hooks" }, "url"],
        ["not a url", { url: "not a url" }, "url"],
        ["a javascript: url", { url: "javascript:alert(1)" }, "url"],
        ["a data: url", { url: "data:text/plain,hi" }, "url"],
        ["a url with credentials", { url: "http://user:pass@127.0.0.1:9/hook" }, "url"],
        ["a url with a user name", { url: "https://user@example.com/hook" }, "url"],
        ["a url over 2048 characters", { url: `https://127.0.0.1/${"a".repeat(2048)}` }, "url"],
        ["missing events", { events: undefined }, "events"],
        ["no events", { events: [] }, "events"],
        ["an unknown event", { events: ["lead.created", "lead.exploded"] }, "events[1]"],
        ["a wrongly cased event", { events: ["Lead.Created"] }, "events[0]"],
        ["* with another event", { events: ["*", "lead.created"] }, "events"],
        ["webhook.test", { events: ["webhook.test"] }, "events[0]"],
        ["webhook.test among others", { events: ["lead.created", "webhook.test"] }, "events[1]"],
        ["events as a string", { events: "lead.created" }, "events"],
        [
          `a description over ${DESCRIPTION} characters`,
          { description: "d".repeat(DESCRIPTION + 1) },
          "description",
        ],
        ["an unknown field", { secret: "whsec_mine" }, "secret"],
        ["another unknown field", { enabled: true }, "enabled"],
      ])("rejects %s with 400 validation_failed and writes nothing", async (_name, change, param) => {
        const before = await count();
        const body: Record<string, unknown> = { ...good(), ...change };
        for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
        const res = await ws.api.post("/webhook-endpoints", body);
        expectError(res, 400, "validation_failed", param);
        expect(res.body).not.toHaveProperty("secret");
        expect(await count()).toBe(before);
      });

      it(`accepts a description of exactly ${DESCRIPTION} characters (emoji count once), https and explicit ports`, async () => {
        const long = await createEndpoint(ws.api, { ...good(), description: "d".repeat(DESCRIPTION) });
        expect(long.description).toHaveLength(DESCRIPTION);
        const emoji = await createEndpoint(ws.api, { ...good(), description: "😀".repeat(DESCRIPTION) });
        expect([...emoji.description].length).toBe(DESCRIPTION);
        const https = await createEndpoint(ws.api, {
          url: "https://127.0.0.1:8443/kontor?x=1",
          events: ["*"],
        });
        expect(https.url).toBe("https://127.0.0.1:8443/kontor?x=1");
        const repeated = await createEndpoint(ws.api, {
          ...good(),
          events: ["lead.created", "lead.created", "invoice.paid"],
        });
        expect(repeated.events).toEqual(["lead.created", "invoice.paid"]);
      });

      it("rejects bad PATCH input and leaves the endpoint unchanged", async () => {
        const { secret: _secret, ...endpoint } = await createEndpoint(ws.api, good());
        for (const [body, param] of [
          [{ events: null }, "events"],
          [{ is_active: null }, "is_active"],
          [{ url: null }, "url"],
          [{ events: [] }, "events"],
          [{ events: ["nope"] }, "events[0]"],
          [{ events: ["*", "invoice.paid"] }, "events"],
          [{ events: ["webhook.test"] }, "events[0]"],
          [{ url: "ftp://127.0.0.1" }, "url"],
          [{ url: "https://a:b@example.com" }, "url"],
          [{ description: "x".repeat(DESCRIPTION + 1) }, "description"],
          [{ is_active: "false" }, "is_active"],
          [{ secret: "whsec_x" }, "secret"],
          [{ status: "paused" }, "status"],
        ] as const) {
          const res = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, body);
          expectError(res, 400, "validation_failed", param);
        }
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(endpoint);
      });
    });

    describe("deliveries list", () => {
      let ws: Workspace;
      let leadsOnly: string;
      let all: string;
      let goneClients: string;

      beforeAll(async () => {
        ws = await workspace();
        leadsOnly = (await listen(ws.api, at("list-leads"), ["lead.created"])).id;
        all = (await listen(ws.api, at("list-all"), ["*"])).id;
        goneClients = (await listen(ws.api, at("list-gone"), ["client.created"])).id;
        receiver.answer = (request) => (request.path === at("list-gone") ? { status: 410 } : { status: 200 });
        await newLead(ws.api);
        expect((await ws.api.post("/clients", { name: "Acme" })).status).toBe(201);
        await deliveriesWhen(leadsOnly, 1, finished);
        await deliveriesWhen(all, 2, finished);
        await deliveriesWhen(goneClients, 1, finished);
        receiver.answer = () => ({ status: 200 });
      });

      const ids = (res: ApiResponse) => res.body.data.map((d: { id: string }) => d.id);
      const byId = async () =>
        (
          await prisma().webhookDelivery.findMany({
            where: { workspaceId: ws.workspaceId },
            orderBy: { id: "desc" },
          })
        ).map((d) => d);

      it("lists every delivery newest first in a list envelope", async () => {
        const rows = await byId();
        expect(rows).toHaveLength(4);
        const res = await ws.api.get("/webhook-deliveries");
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        expect(ids(res)).toEqual(rows.map((d) => d.id));
        for (const delivery of res.body.data) expect(delivery.object).toBe("webhook_delivery");

        const page = await ws.api.get("/webhook-deliveries?limit=3");
        expect(page.body).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
        const next = await ws.api.get(`/webhook-deliveries?limit=3&cursor=${page.body.next_cursor}`);
        expect(next.body).toMatchObject({ has_more: false, next_cursor: null });
        expect([...ids(page), ...ids(next)]).toEqual(rows.map((d) => d.id));
      });

      it("filters by endpoint_id, event_type and status, alone and together", async () => {
        const rows = await byId();
        const expectIds = async (query: string, keep: (row: (typeof rows)[number]) => boolean) => {
          const res = await ws.api.get(`/webhook-deliveries?${query}`);
          expect(res.status, query).toBe(200);
          const wanted = rows.filter(keep).map((d) => d.id);
          expect(ids(res), query).toEqual(wanted);
          return wanted;
        };
        expect(await expectIds(`endpoint_id=${all}`, (d) => d.endpointId === all)).toHaveLength(2);
        expect(await expectIds(`endpoint_id=${leadsOnly}`, (d) => d.endpointId === leadsOnly)).toHaveLength(
          1,
        );
        expect(
          await expectIds("event_type=client.created", (d) => d.eventType === "client.created"),
        ).toHaveLength(2);
        expect(
          await expectIds("event_type=lead.created", (d) => d.eventType === "lead.created"),
        ).toHaveLength(2);
        expect(await expectIds("status=failed", (d) => d.endpointId === goneClients)).toHaveLength(1);
        expect(await expectIds("status=succeeded", (d) => d.endpointId !== goneClients)).toHaveLength(3);
        expect(await expectIds("status=pending", () => false)).toEqual([]);
        expect(await expectIds("status=retrying", () => false)).toEqual([]);
        expect(
          await expectIds(
            `endpoint_id=${all}&event_type=client.created&status=succeeded`,
            (d) => d.endpointId === all && d.eventType === "client.created",
          ),
        ).toHaveLength(1);
        expect(await expectIds(`endpoint_id=${NEVER_ENDPOINT}`, () => false)).toEqual([]);
        expect(await expectIds("event_type=invoice.paid", () => false)).toEqual([]);
      });

      it("filters by event_id: that event's deliveries to every endpoint, alone and with other filters", async () => {
        const rows = await byId();
        const lead = rows.find((d) => d.eventType === "lead.created")!.eventId;
        const client = rows.find((d) => d.eventType === "client.created")!.eventId;
        const expectIds = async (query: string, keep: (row: (typeof rows)[number]) => boolean) => {
          const res = await ws.api.get(`/webhook-deliveries?${query}`);
          expect(res.status, query).toBe(200);
          expect(ids(res), query).toEqual(rows.filter(keep).map((d) => d.id));
          return ids(res);
        };
        // The lead reached leadsOnly and all; the client reached all and goneClients.
        expect(await expectIds(`event_id=${lead}`, (d) => d.eventId === lead)).toHaveLength(2);
        expect(await expectIds(`event_id=${client}`, (d) => d.eventId === client)).toHaveLength(2);
        expect(
          await expectIds(
            `event_id=${client}&status=failed`,
            (d) => d.eventId === client && d.endpointId === goneClients,
          ),
        ).toHaveLength(1);
        expect(await expectIds(`event_id=${NEVER_EVENT}`, () => false)).toEqual([]);
        const gql = await graphql(server().url, ws.key)(
          "query($id: ID) { webhookDeliveries(event_id: $id) { data { id event_id } } }",
          { id: lead },
        );
        expect(gql.errors).toBeUndefined();
        expect(gql.data.webhookDeliveries.data.map((d: { id: string }) => d.id)).toEqual(
          rows.filter((d) => d.eventId === lead).map((d) => d.id),
        );
      });

      it("rejects an unknown status with 400 validation_failed", async () => {
        expectError(await ws.api.get("/webhook-deliveries?status=bogus"), 400, "validation_failed", "status");
        expectError(
          await ws.api.get("/webhook-deliveries?status=SUCCEEDED"),
          400,
          "validation_failed",
          "status",
        );
        expectError(await ws.api.get("/webhook-deliveries?limit=101"), 400, "validation_failed", "limit");
      });
    });
  },
  ENV,
);
