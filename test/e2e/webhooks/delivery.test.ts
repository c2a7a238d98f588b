import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { EVENT_RETENTION_DAYS } from "../../../schema/events.ts";
import { deleteExpiredEvents } from "../../../server/webhooks/store.ts";
import { expectError } from "../../support/invoicing.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import {
  DELIVERY_ID,
  ENV,
  EVENT_ID,
  expectNotSignedWith,
  expectSignedWith,
  header,
  ISO,
  kontorSignature,
  QUIET_MS,
  receiver,
  SECRET,
  sleep,
  standardHeaders,
  TIMEOUT_MS,
  useReceiver,
  webhookHelpers,
} from "./support.ts";

/**
 * Webhooks end to end (docs/api/webhooks.md and "The API in short"): endpoints over REST and GraphQL,
 * and real deliveries to a loopback receiver through the production code path, with a short retry
 * schedule and timeout set through the server's configuration (./support.ts).
 *
 * This part: what a delivery carries and how it is signed, event retention, the test event, and how promptly deliveries go out.
 */

useReceiver();

e2e(
  "webhooks: delivery",
  (server, stack) => {
    const { at, prisma, workspace, listen, newLead, deliveriesOf, deliveriesWhen, deliveryWhen, finished } =
      webhookHelpers(server, stack);

    describe("delivery", () => {
      it("deletes events older than 30 days with their deliveries, and keeps younger ones", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("retention"), ["lead.created"]);
        const lead = await newLead(ws.api);
        await receiver.waitFor(at("retention"), 1);
        const [young] = await deliveriesWhen(endpoint.id, 1, (row) => row.status === "succeeded");
        const day = 86_400_000;
        const old = await prisma().event.create({
          data: {
            id: `evt_01J${Date.now().toString().padStart(23, "0")}`,
            workspaceId: ws.workspaceId,
            type: "lead.created",
            data: { object: "lead", id: "lead_old" },
            createdAt: new Date(Date.now() - 31 * day),
            dispatchedAt: new Date(Date.now() - 31 * day),
          },
        });
        const oldDelivery = await prisma().webhookDelivery.create({
          data: {
            id: `whd_01J${Date.now().toString().padStart(23, "0")}`,
            workspaceId: ws.workspaceId,
            endpointId: endpoint.id,
            eventId: old.id,
            eventType: "lead.created",
            status: "succeeded",
            attempts: 1,
          },
        });
        const deleted = await deleteExpiredEvents(prisma(), EVENT_RETENTION_DAYS);
        expect(deleted).toBeGreaterThanOrEqual(1);
        expectError(await ws.api.get(`/events/${old.id}`), 404, "not_found");
        expectError(await ws.api.get(`/webhook-deliveries/${oldDelivery.id}`), 404, "not_found");
        expect((await ws.api.get(`/events/${young!.eventId}`)).body.data.object.id).toBe(lead.id);
        expect((await ws.api.get(`/webhook-deliveries/${young!.id}`)).status).toBe(200);
      });

      it("sends an endpoint only the events that happened after it was created", async () => {
        const ws = await workspace();
        // An event committed before the endpoint existed and not yet fanned out when it appeared.
        const earlier = await prisma().event.create({
          data: {
            id: `evt_${"0".repeat(10)}${Date.now().toString(36).toUpperCase().padStart(16, "0").slice(-16)}`,
            workspaceId: ws.workspaceId,
            type: "lead.created",
            data: { object: "lead", id: "lead_before" },
            createdAt: new Date(Date.now() - 60_000),
            dispatchedAt: null,
          },
        });
        const endpoint = await listen(ws.api, at("only-later"), ["lead.created"]);
        const lead = await newLead(ws.api);
        const [request] = await receiver.waitFor(at("only-later"), 1);
        expect(request!.json.data.object.id).toBe(lead.id);
        const dispatched = await eventually(
          () => prisma().event.findUniqueOrThrow({ where: { id: earlier.id } }),
          (event) => event.dispatchedAt !== null,
        );
        expect(dispatched.dispatchedAt).not.toBeNull();
        expect((await deliveriesOf(endpoint.id)).map((d) => d.eventId)).not.toContain(earlier.id);
        await sleep(QUIET_MS);
        expect(receiver.on(at("only-later"))).toHaveLength(1);
      });

      it("delivers lead.created once, signed, with the lead exactly as the API returned it", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("deliver-lead"), ["lead.created"]);
        const everything = await listen(ws.api, at("deliver-all"), ["*"]);
        const elsewhere = await listen(ws.api, at("deliver-invoices"), [
          "invoice.created",
          "lead.stage_changed",
        ]);
        const lead = await newLead(ws.api, {
          full_name: "Grace Hopper",
          estimated_value: 1200.5,
          stage: "qualified",
        });

        const [request] = await receiver.waitFor(at("deliver-lead"), 1);
        const now = Date.now();
        const body = request!.json;
        expect(body).toEqual({
          id: expect.stringMatching(EVENT_ID),
          object: "event",
          type: "lead.created",
          created_at: expect.stringMatching(ISO),
          workspace_id: ws.workspaceId,
          data: { object: lead },
        });
        expect(Object.keys(body)).toEqual(["id", "object", "type", "created_at", "workspace_id", "data"]);
        // Exactly as POST /v1/leads answered: the same keys, in the same order.
        expect(Object.keys(body.data.object)).toEqual(Object.keys(lead));
        expect(new Date(body.created_at).getTime()).toBeGreaterThanOrEqual(
          new Date(lead.created_at).getTime(),
        );
        expect(request!.headers["content-type"]).toMatch(/^application\/json/);

        expect(header(request!, "Kontor-Event")).toBe("lead.created");
        expect(header(request!, "Kontor-Delivery")).toMatch(DELIVERY_ID);
        const timestamp = header(request!, "Kontor-Timestamp");
        expect(timestamp).toMatch(/^\d{10}$/);
        expect(Math.abs(Number(timestamp) - now / 1000)).toBeLessThan(5);
        expect(header(request!, "Kontor-Signature")).toMatch(/^sha256=[0-9a-f]{64}$/);
        expect(header(request!, "webhook-id")).toBe(body.id);
        expect(header(request!, "webhook-timestamp")).toBe(timestamp);
        expect(header(request!, "webhook-signature")).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
        expectSignedWith(request!, endpoint.secret);
        // The standardwebhooks library accepts it and hands back the payload.
        const { headers } = standardHeaders(request!);
        expect(new Webhook(endpoint.secret).verify(request!.body, headers)).toEqual(body);

        // ["*"] gets it too, signed with its own secret; another type's endpoint does not.
        const [all] = await receiver.waitFor(at("deliver-all"), 1);
        expect(all!.body).toBe(request!.body);
        expect(header(all!, "webhook-id")).toBe(body.id);
        expect(header(all!, "Kontor-Delivery")).not.toBe(header(request!, "Kontor-Delivery"));
        expectSignedWith(all!, everything.secret);
        expectNotSignedWith(all!, endpoint.secret);

        await sleep(QUIET_MS);
        expect(receiver.on(at("deliver-lead")), "exactly one POST").toHaveLength(1);
        expect(receiver.on(at("deliver-all"))).toHaveLength(1);
        expect(receiver.on(at("deliver-invoices"))).toEqual([]);
        expect(await deliveriesOf(elsewhere.id)).toEqual([]);

        // The delivery record.
        const deliveryId = header(request!, "Kontor-Delivery");
        const delivery = await deliveryWhen(ws.api, deliveryId, finished);
        expect(delivery).toEqual({
          object: "webhook_delivery",
          id: deliveryId,
          endpoint_id: endpoint.id,
          event_id: body.id,
          event_type: "lead.created",
          status: "succeeded",
          attempts: 1,
          response_status: 200,
          response_body: "ok",
          last_error: null,
          duration_ms: expect.any(Number),
          next_attempt_at: null,
          delivered_at: expect.stringMatching(ISO),
          created_at: expect.stringMatching(ISO),
          updated_at: expect.stringMatching(ISO),
        });
        expect(Number.isInteger(delivery.duration_ms)).toBe(true);
        expect(delivery.duration_ms).toBeGreaterThanOrEqual(0);
        expect(delivery.duration_ms).toBeLessThan(TIMEOUT_MS);

        // The outbox shows the same event as was delivered.
        const event = await ws.api.get(`/events/${body.id}`);
        expect(event.status).toBe(200);
        expect(event.body).toEqual(body);
        expect(JSON.stringify(event.body)).toBe(request!.body);
      });

      it("lists events newest first, filtered by type", async () => {
        const ws = await workspace();
        const lead = await newLead(ws.api);
        const client = await ws.api.post("/clients", { name: "Acme" });
        expect(client.status).toBe(201);
        const all = await ws.api.get("/events");
        expect(all.status).toBe(200);
        expect(all.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        expect(all.body.data.map((e: { type: string }) => e.type)).toEqual([
          "client.created",
          "lead.created",
        ]);
        expect(all.body.data[1]).toEqual({
          id: expect.stringMatching(EVENT_ID),
          object: "event",
          type: "lead.created",
          created_at: expect.stringMatching(ISO),
          workspace_id: ws.workspaceId,
          data: { object: lead },
        });
        const leads = await ws.api.get("/events?type=lead.created");
        expect(leads.body.data).toEqual([all.body.data[1]]);
        const clients = await ws.api.get("/events?type=client.created");
        expect(clients.body.data).toEqual([all.body.data[0]]);
        expect(clients.body.data[0].data.object).toEqual(client.body);
        expect((await ws.api.get("/events?type=invoice.paid")).body.data).toEqual([]);
        const paged = await ws.api.get("/events?limit=1");
        expect(paged.body).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
        expect(paged.body.data).toEqual([all.body.data[0]]);
        const rest2 = await ws.api.get(`/events?limit=1&cursor=${paged.body.next_cursor}`);
        expect(rest2.body).toMatchObject({ has_more: false, next_cursor: null, data: [all.body.data[1]] });
      });

      it("fails verification of a tampered body, a tampered timestamp or a wrong secret", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("tamper"));
        await newLead(ws.api);
        const [request] = await receiver.waitFor(at("tamper"), 1);
        expectSignedWith(request!, endpoint.secret);

        const tamperedBody = request!.body.replace('"lead.created"', '"lead.deleted"');
        expect(tamperedBody).not.toBe(request!.body);
        const { headers } = standardHeaders(request!);
        expect(() => new Webhook(endpoint.secret).verify(tamperedBody, headers)).toThrow();
        expect(header(request!, "Kontor-Signature")).not.toBe(
          kontorSignature(endpoint.secret, header(request!, "Kontor-Timestamp"), tamperedBody),
        );

        const shifted = String(Number(headers["webhook-timestamp"]) + 1);
        expect(() =>
          new Webhook(endpoint.secret).verify(request!.body, { ...headers, "webhook-timestamp": shifted }),
        ).toThrow();
        expect(header(request!, "Kontor-Signature")).not.toBe(
          kontorSignature(endpoint.secret, shifted, request!.body),
        );

        const stranger = (await listen(ws.api, at("tamper-other"), ["invoice.paid"])).secret;
        expectNotSignedWith(request!, stranger);
      });

      it("signs with the new secret at once after rotate-secret, and not with the old one", async () => {
        const ws = await workspace();
        const created = await listen(ws.api, at("rotate"));
        await newLead(ws.api);
        const [before] = await receiver.waitFor(at("rotate"), 1);
        expectSignedWith(before!, created.secret);

        const rotated = await ws.api.post(`/webhook-endpoints/${created.id}/rotate-secret`);
        expect(rotated.status).toBe(200);
        const { secret: _old, ...endpoint } = created;
        expect(rotated.body).toEqual({
          ...endpoint,
          secret: expect.stringMatching(SECRET),
          updated_at: expect.stringMatching(ISO),
        });
        expect(rotated.body.secret).not.toBe(created.secret);
        const shown = await ws.api.get(`/webhook-endpoints/${created.id}`);
        expect(shown.body).not.toHaveProperty("secret");
        const row = await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: created.id } });
        expect(row.secretSealed).not.toContain(rotated.body.secret);

        await newLead(ws.api);
        const [, after] = await receiver.waitFor(at("rotate"), 2);
        expectSignedWith(after!, rotated.body.secret);
        expectNotSignedWith(after!, created.secret);

        // A retry or replay of the earlier delivery is signed with the current secret too.
        const replay = await ws.api.post(`/webhook-deliveries/${header(before!, "Kontor-Delivery")}/replay`);
        expect(replay.status).toBe(201);
        const [, , again] = await receiver.waitFor(at("rotate"), 3);
        expect(again!.body).toBe(before!.body);
        expectSignedWith(again!, rotated.body.secret);
        expectNotSignedWith(again!, created.secret);
      });
    });

    describe("test event", () => {
      it("sends webhook.test with the endpoint as data to that endpoint only, even while paused", async () => {
        const ws = await workspace();
        const created = await listen(ws.api, at("test-target"), ["lead.created"]);
        const everything = await listen(ws.api, at("test-bystander"), ["*"]);
        const { secret, ...endpoint } = created;

        const res = await ws.api.post(`/webhook-endpoints/${endpoint.id}/test`);
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({
          object: "webhook_delivery",
          id: expect.stringMatching(DELIVERY_ID),
          endpoint_id: endpoint.id,
          event_id: expect.stringMatching(EVENT_ID),
          event_type: "webhook.test",
          status: "pending",
          attempts: 0,
        });
        const [request] = await receiver.waitFor(at("test-target"), 1);
        expect(request!.json).toEqual({
          id: res.body.event_id,
          object: "event",
          type: "webhook.test",
          created_at: expect.stringMatching(ISO),
          workspace_id: ws.workspaceId,
          data: { object: endpoint },
        });
        expect(request!.body).not.toContain(secret);
        expect(request!.json.data.object).not.toHaveProperty("secret");
        expect(header(request!, "Kontor-Event")).toBe("webhook.test");
        expect(header(request!, "Kontor-Delivery")).toBe(res.body.id);
        expect(header(request!, "webhook-id")).toBe(res.body.event_id);
        expectSignedWith(request!, secret);
        expect(await deliveryWhen(ws.api, res.body.id, finished)).toMatchObject({
          status: "succeeded",
          attempts: 1,
          response_status: 200,
        });

        // Paused: the test is still sent.
        const paused = (await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false })).body;
        const whilePaused = await ws.api.post(`/webhook-endpoints/${endpoint.id}/test`);
        expect(whilePaused.status).toBe(201);
        const [, second] = await receiver.waitFor(at("test-target"), 2);
        expect(second!.json.data.object).toEqual(paused);
        expect(second!.json.data.object).toMatchObject({ is_active: false, status: "paused" });
        expect(await deliveryWhen(ws.api, whilePaused.body.id, finished)).toMatchObject({
          status: "succeeded",
        });

        // Nobody else gets it, not even ["*"].
        await sleep(QUIET_MS);
        expect(receiver.on(at("test-bystander"))).toEqual([]);
        expect(await deliveriesOf(everything.id)).toEqual([]);
        expect(receiver.on(at("test-target"))).toHaveLength(2);
      });
    });

    describe("promptness", () => {
      /**
       * The request that makes a delivery due wakes the worker: it does not wait for a poll or for
       * the queue's sweep of overdue deliveries (every 2 s, for deliveries 2 s overdue).
       */
      it("sends within a second of the event, the replay, the test or the resume that caused it", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("prompt"));
        const path = at("prompt");
        const latency = async (cause: () => Promise<unknown>) => {
          const before = receiver.on(path).length;
          await cause();
          const answered = Date.now();
          const requests = await receiver.waitFor(path, before + 1, 5_000);
          return requests[before]!.at - answered;
        };
        const lead = await latency(() => newLead(ws.api));
        const deliveryId = header(receiver.on(path)[0]!, "Kontor-Delivery");
        await deliveryWhen(ws.api, deliveryId, finished);
        const replay = await latency(async () =>
          expect((await ws.api.post(`/webhook-deliveries/${deliveryId}/replay`)).status).toBe(201),
        );
        const test = await latency(async () =>
          expect((await ws.api.post(`/webhook-endpoints/${endpoint.id}/test`)).status).toBe(201),
        );
        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        await newLead(ws.api);
        await eventually(
          () => deliveriesOf(endpoint.id),
          (list) => list.length === 4,
        );
        const resume = await latency(async () =>
          expect((await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true })).status).toBe(
            200,
          ),
        );
        for (const [cause, ms] of Object.entries({ lead, replay, test, resume })) {
          // The receiver may record the request a moment before the API's answer reaches the test.
          expect(ms, `${cause}: ms from the API's answer to the delivery`).toBeGreaterThan(-250);
          expect(ms, `${cause}: ms from the API's answer to the delivery`).toBeLessThan(1000);
        }
      });
    });
  },
  ENV,
);
