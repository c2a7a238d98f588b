import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { expectError } from "../../support/invoicing.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import {
  DELIVERY_ID,
  expectSignedWith,
  header,
  ISO,
  NEVER_DELIVERY,
  QUIET_MS,
  RETRY_SCHEDULE_MS,
  receiver,
  SHORT_TIMEOUT_ENV,
  SHORT_TIMEOUT_MS,
  sleep,
  useReceiver,
  webhookHelpers,
} from "./support.ts";

/**
 * Webhooks end to end (docs/api/webhooks.md and "The API in short"): endpoints over REST and GraphQL,
 * and real deliveries to a loopback receiver through the production code path, with a short retry
 * schedule and timeout set through the server's configuration (./support.ts).
 *
 * This part: retries, timeouts and refused connections, 410 Gone, pausing and resuming an endpoint, and replays.
 */

useReceiver();

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Answers every POST with a 307 to the same path on the receiver, which must never be followed. */
let redirector: Server;
let redirectorBase: string;
const redirected: string[] = [];

beforeAll(async () => {
  redirector = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      redirected.push(req.url ?? "");
      res.writeHead(307, { location: receiver.url(req.url ?? "/"), "content-type": "text/plain" });
      res.end("moved");
    });
  });
  await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
  redirectorBase = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`;
});

afterAll(async () => {
  redirector?.closeAllConnections();
  await new Promise<void>((resolve) => (redirector ? redirector.close(() => resolve()) : resolve()));
});

e2e(
  "webhooks: retries and replay",
  (server, stack) => {
    const {
      at,
      workspace,
      createEndpoint,
      listen,
      newLead,
      deliveriesOf,
      deliveriesWhen,
      deliveryWhen,
      finished,
    } = webhookHelpers(server, stack);

    describe("retries", () => {
      it("retries a 500 on the configured schedule with the same event, then succeeds", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("retry-then-ok"));
        let seen = 0;
        receiver.answer = (request) => {
          if (request.path !== at("retry-then-ok")) return { status: 200 };
          seen += 1;
          if (seen === 1) return { status: 500, body: "boom" };
          // The second answer waits, so the record of the first failure can be read meanwhile.
          if (seen === 2) return { status: 500, body: "still boom", delayMs: 400 };
          return { status: 200, body: "finally" };
        };
        await newLead(ws.api);
        await receiver.waitFor(at("retry-then-ok"), 2);
        const deliveryId = header(receiver.on(at("retry-then-ok"))[0]!, "Kontor-Delivery");
        const failing = await ws.api.get(`/webhook-deliveries/${deliveryId}`);
        expect(failing.body).toMatchObject({
          status: "retrying",
          attempts: 2, // the second attempt has started
          response_status: 500,
          response_body: "boom",
          last_error: null,
          next_attempt_at: expect.stringMatching(ISO),
          delivered_at: null,
        });

        const requests = await receiver.waitFor(at("retry-then-ok"), 3);
        const delivery = await deliveryWhen(ws.api, deliveryId, finished);
        expect(delivery).toMatchObject({
          status: "succeeded",
          attempts: 3,
          response_status: 200,
          response_body: "finally",
          last_error: null,
          next_attempt_at: null,
          delivered_at: expect.stringMatching(ISO),
        });
        expect(requests).toHaveLength(3);
        for (const request of requests) {
          expect(request.body).toBe(requests[0]!.body);
          expect(header(request, "webhook-id")).toBe(requests[0]!.json.id);
          expect(header(request, "Kontor-Delivery")).toBe(deliveryId);
          expectSignedWith(request, endpoint.secret);
        }
        // The waits follow KONTOR_WEBHOOK_RETRY_SCHEDULE (no jitter), counted from the end of the previous attempt.
        expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[0]! - 20);
        expect(requests[2]!.at - requests[1]!.at).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[1]! + 400 - 20);
        await sleep(300);
        expect(receiver.on(at("retry-then-ok"))).toHaveLength(3);

        // Every attempt is kept, oldest first, over GraphQL (REST bodies stay flat).
        const history = await graphql(server().url, ws.key)(
          "query($id: ID!) { webhookDelivery(id: $id) { attempt_history { number response_status response_body error duration_ms created_at } } }",
          { id: deliveryId },
        );
        expect(history.errors).toBeUndefined();
        const attempts = history.data.webhookDelivery.attempt_history;
        expect(attempts.map((a: any) => [a.number, a.response_status, a.response_body, a.error])).toEqual([
          [1, 500, "boom", null],
          [2, 500, "still boom", null],
          [3, 200, "finally", null],
        ]);
        expect(attempts[1].duration_ms).toBeGreaterThanOrEqual(380);
        expect(attempts[2].duration_ms).toBe(delivery.duration_ms);
        for (const attempt of attempts) expect(attempt.created_at).toMatch(ISO);
        expect(Date.parse(attempts[0].created_at)).toBeLessThanOrEqual(Date.parse(attempts[1].created_at));
        expect(delivery).not.toHaveProperty("attempt_history");
      });

      it("gives up after the schedule runs out: failed, no further attempt", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("always-500"));
        receiver.answer = (request) =>
          request.path === at("always-500") ? { status: 500, body: "nope" } : { status: 200 };
        await newLead(ws.api);
        const [row] = await deliveriesWhen(endpoint.id, 1, finished);
        const delivery = (await ws.api.get(`/webhook-deliveries/${row!.id}`)).body;
        expect(delivery).toMatchObject({
          status: "failed",
          attempts: RETRY_SCHEDULE_MS.length + 1,
          response_status: 500,
          response_body: "nope",
          next_attempt_at: null,
          delivered_at: null,
        });
        await sleep(QUIET_MS);
        expect(receiver.on(at("always-500"))).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
        // Failing deliveries do not pause the endpoint: only 410 does.
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toMatchObject({
          is_active: true,
          status: "active",
        });
      });

      it("counts a receiver slower than the timeout as a timeout and retries", async () => {
        const ws = await workspace();
        await listen(ws.api, at("slow"));
        let seen = 0;
        receiver.answer = (request) => {
          if (request.path !== at("slow")) return { status: 200 };
          seen += 1;
          if (seen === 1) return { status: 200, body: "too late", delayMs: SHORT_TIMEOUT_MS + 700 };
          if (seen === 2) return { status: 200, body: "in time", delayMs: 400 };
          return { status: 200, body: "in time" };
        };
        await newLead(ws.api);
        const [first] = await receiver.waitFor(at("slow"), 1);
        const deliveryId = header(first!, "Kontor-Delivery");
        await receiver.waitFor(at("slow"), 2, 10_000);
        const meanwhile = (await ws.api.get(`/webhook-deliveries/${deliveryId}`)).body;
        expect(meanwhile).toMatchObject({
          status: "retrying",
          last_error: "timeout",
          response_status: null,
          response_body: null,
        });
        expect(meanwhile.duration_ms).toBeGreaterThanOrEqual(SHORT_TIMEOUT_MS - 50);

        const done = await deliveryWhen(ws.api, deliveryId, finished);
        expect(done).toMatchObject({
          status: "succeeded",
          attempts: 2,
          response_status: 200,
          response_body: "in time",
          last_error: null,
        });
        expect(done.duration_ms).toBeLessThan(SHORT_TIMEOUT_MS);
      });

      it("records connection_refused for a port nothing listens on, and retries until failed", async () => {
        const ws = await workspace();
        const endpoint = await createEndpoint(ws.api, {
          url: `http://127.0.0.1:${await closedPort()}/hook`,
          events: ["lead.created"],
        });
        await newLead(ws.api);
        const [row] = await deliveriesWhen(endpoint.id, 1, finished);
        expect((await ws.api.get(`/webhook-deliveries/${row!.id}`)).body).toMatchObject({
          status: "failed",
          attempts: RETRY_SCHEDULE_MS.length + 1,
          last_error: "connection_refused",
          response_status: null,
          response_body: null,
          next_attempt_at: null,
          delivered_at: null,
          duration_ms: expect.any(Number),
        });
        const history = await graphql(server().url, ws.key)(
          "query($id: ID!) { webhookDelivery(id: $id) { attempt_history { number response_status error } } }",
          { id: row!.id },
        );
        expect(history.data.webhookDelivery.attempt_history).toEqual(
          Array.from({ length: RETRY_SCHEDULE_MS.length + 1 }, (_, i) => ({
            number: i + 1,
            response_status: null,
            error: "connection_refused",
          })),
        );
      });

      it("does not follow a redirect: a 3xx is a failed attempt and the target receives nothing", async () => {
        const ws = await workspace();
        const endpoint = await createEndpoint(ws.api, {
          url: redirectorBase + at("redirect"),
          events: ["lead.created"],
        });
        await newLead(ws.api);
        const [row] = await deliveriesWhen(endpoint.id, 1, finished);
        expect((await ws.api.get(`/webhook-deliveries/${row!.id}`)).body).toMatchObject({
          status: "failed",
          attempts: RETRY_SCHEDULE_MS.length + 1,
          response_status: 307,
          response_body: "moved",
          last_error: null,
          delivered_at: null,
        });
        expect(redirected.filter((path) => path === at("redirect"))).toHaveLength(
          RETRY_SCHEDULE_MS.length + 1,
        );
        expect(receiver.on(at("redirect"))).toEqual([]);
      });

      it("keeps exactly the first 2048 bytes of a long response body", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("long-body"));
        const long = "0123456789abcdef".repeat(400); // 6400 bytes
        receiver.answer = (request) =>
          request.path === at("long-body") ? { status: 200, body: long } : { status: 200 };
        await newLead(ws.api);
        const [row] = await deliveriesWhen(endpoint.id, 1, finished);
        const delivery = (await ws.api.get(`/webhook-deliveries/${row!.id}`)).body;
        expect(delivery).toMatchObject({ status: "succeeded", attempts: 1, response_status: 200 });
        expect(Buffer.byteLength(delivery.response_body)).toBe(2048);
        expect(delivery.response_body).toBe(long.slice(0, 2048));
      });

      it("keeps a short response body whole, and an empty one as empty", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("short-body"));
        const bodies = ["x".repeat(2048), ""];
        receiver.answer = (request) =>
          request.path === at("short-body") ? { status: 202, body: bodies.shift() ?? "" } : { status: 200 };
        await newLead(ws.api);
        await newLead(ws.api);
        const rows = await deliveriesWhen(endpoint.id, 2, finished);
        const records = await Promise.all(
          rows.map(async (row) => (await ws.api.get(`/webhook-deliveries/${row.id}`)).body),
        );
        expect(records.map((r) => [r.status, r.response_status]).sort()).toEqual([
          ["succeeded", 202],
          ["succeeded", 202],
        ]);
        expect(records.map((r) => r.response_body).sort()).toEqual(["", "x".repeat(2048)]);
      });
    });

    describe("410 Gone", () => {
      it("fails the delivery without retrying, pauses the endpoint, and holds later events until resumed", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("gone"));
        const other = await listen(ws.api, at("gone-bystander"));
        let gone = true;
        receiver.answer = (request) =>
          request.path === at("gone") && gone ? { status: 410, body: "gone for good" } : { status: 200 };
        const lead = await newLead(ws.api);
        const [row] = await deliveriesWhen(endpoint.id, 1, finished);
        expect((await ws.api.get(`/webhook-deliveries/${row!.id}`)).body).toMatchObject({
          status: "failed",
          attempts: 1,
          response_status: 410,
          response_body: "gone for good",
          next_attempt_at: null,
          delivered_at: null,
        });
        const paused = (await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body;
        expect(paused).toMatchObject({ is_active: false, status: "paused", disabled_reason: "gone" });
        // Only the endpoint that answered 410 is paused.
        expect((await ws.api.get(`/webhook-endpoints/${other.id}`)).body).toMatchObject({
          is_active: true,
          disabled_reason: null,
        });

        await newLead(ws.api, { first_name: "Later" });
        const held = await eventually(
          () => deliveriesOf(endpoint.id),
          (list) => list.length === 2,
        );
        await sleep(QUIET_MS);
        expect(receiver.on(at("gone")), "no retry, nothing while paused").toHaveLength(1);
        await receiver.waitFor(at("gone-bystander"), 2);
        const heldRecord = (await ws.api.get(`/webhook-deliveries/${held[1]!.id}`)).body;
        expect(heldRecord).toMatchObject({
          status: "pending",
          attempts: 0,
          next_attempt_at: null,
          response_status: null,
        });

        gone = false;
        const resumed = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        expect(resumed.body).toMatchObject({ is_active: true, status: "active", disabled_reason: null });
        const requests = await receiver.waitFor(at("gone"), 2);
        expect(requests[1]!.json.data.object.first_name).toBe("Later");
        expect(requests[0]!.json.data.object.id).toBe(lead.id);
        expect(await deliveryWhen(ws.api, held[1]!.id, finished)).toMatchObject({
          status: "succeeded",
          attempts: 1,
        });
        // The failed delivery stays failed: resuming does not retry it.
        await sleep(300);
        expect(receiver.on(at("gone"))).toHaveLength(2);
        expect((await ws.api.get(`/webhook-deliveries/${row!.id}`)).body.status).toBe("failed");
      });
    });

    describe("pause and resume", () => {
      it("holds deliveries while paused and sends them on resume", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("pause"));
        const paused = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        expect(paused.status).toBe(200);
        expect(paused.body).toMatchObject({ is_active: false, status: "paused", disabled_reason: null });

        const first = await newLead(ws.api, { first_name: "One" });
        const second = await newLead(ws.api, { first_name: "Two" });
        const rows = await eventually(
          () => deliveriesOf(endpoint.id),
          (list) => list.length === 2,
        );
        expect(rows).toHaveLength(2);
        await sleep(QUIET_MS);
        expect(receiver.on(at("pause"))).toEqual([]);
        for (const row of rows) {
          expect((await ws.api.get(`/webhook-deliveries/${row.id}`)).body).toMatchObject({
            status: "pending",
            attempts: 0,
            next_attempt_at: null,
            response_status: null,
            delivered_at: null,
          });
        }
        const pending = await ws.api.get(`/webhook-deliveries?endpoint_id=${endpoint.id}&status=pending`);
        expect(pending.body.data.map((d: { id: string }) => d.id).sort()).toEqual(
          rows.map((row) => row.id).sort(),
        );

        const resumed = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        expect(resumed.body).toMatchObject({ is_active: true, status: "active", disabled_reason: null });
        const requests = await receiver.waitFor(at("pause"), 2);
        expect(requests.map((r) => r.json.data.object.id).sort()).toEqual([first.id, second.id].sort());
        await deliveriesWhen(endpoint.id, 2, (row) => row.status === "succeeded" && row.attempts === 1);
        await sleep(300);
        expect(receiver.on(at("pause"))).toHaveLength(2);
      });

      it("holds a retry when the endpoint is paused during the attempt, until resumed", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("pause-retry"));
        let seen = 0;
        receiver.answer = (request) => {
          if (request.path !== at("pause-retry")) return { status: 200 };
          seen += 1;
          return seen === 1 ? { status: 503, body: "busy", delayMs: 500 } : { status: 200 };
        };
        await newLead(ws.api);
        await receiver.waitFor(at("pause-retry"), 1);
        expect((await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(
          200,
        );
        const [row] = await deliveriesWhen(endpoint.id, 1, (r) => r.responseStatus === 503);
        expect((await ws.api.get(`/webhook-deliveries/${row!.id}`)).body).toMatchObject({
          status: "retrying",
          attempts: 1,
          response_status: 503,
          next_attempt_at: null,
        });
        await sleep(QUIET_MS);
        expect(receiver.on(at("pause-retry"))).toHaveLength(1);

        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        await receiver.waitFor(at("pause-retry"), 2);
        expect(await deliveryWhen(ws.api, row!.id, finished)).toMatchObject({
          status: "succeeded",
          attempts: 2,
          response_status: 200,
        });
      });
    });

    describe("replay", () => {
      it("sends the event again as a new delivery with the same webhook-id", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("replay"));
        await newLead(ws.api);
        const [original] = await receiver.waitFor(at("replay"), 1);
        const originalId = header(original!, "Kontor-Delivery");
        await deliveryWhen(ws.api, originalId, finished);

        const res = await ws.api.post(`/webhook-deliveries/${originalId}/replay`);
        expect(res.status).toBe(201);
        expect(res.body).toMatchObject({
          object: "webhook_delivery",
          id: expect.stringMatching(DELIVERY_ID),
          endpoint_id: endpoint.id,
          event_id: original!.json.id,
          event_type: "lead.created",
          status: "pending",
          attempts: 0,
          response_status: null,
          delivered_at: null,
        });
        expect(res.body.id).not.toBe(originalId);

        const [, replayed] = await receiver.waitFor(at("replay"), 2);
        expect(header(replayed!, "webhook-id")).toBe(header(original!, "webhook-id"));
        expect(header(replayed!, "Kontor-Delivery")).toBe(res.body.id);
        expect(replayed!.body).toBe(original!.body);
        expectSignedWith(replayed!, endpoint.secret);
        expect(await deliveryWhen(ws.api, res.body.id, finished)).toMatchObject({
          status: "succeeded",
          attempts: 1,
        });
        // The original is left as it was.
        expect((await ws.api.get(`/webhook-deliveries/${originalId}`)).body).toMatchObject({
          status: "succeeded",
          attempts: 1,
        });
        const list = await ws.api.get(`/webhook-deliveries?endpoint_id=${endpoint.id}`);
        expect(list.body.data.map((d: { id: string }) => d.id)).toEqual([res.body.id, originalId]);

        expectError(await ws.api.post(`/webhook-deliveries/${NEVER_DELIVERY}/replay`), 404, "not_found");
      });

      it("replays a failed delivery, and holds a replay to a paused endpoint", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("replay-failed"));
        let failing = true;
        receiver.answer = (request) =>
          request.path === at("replay-failed") && failing ? { status: 500 } : { status: 200 };
        await newLead(ws.api);
        const [failed] = await deliveriesWhen(endpoint.id, 1, finished);
        expect(failed!.status).toBe("failed");
        failing = false;

        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        const replay = await ws.api.post(`/webhook-deliveries/${failed!.id}/replay`);
        expect(replay.status).toBe(201);
        expect(replay.body).toMatchObject({
          status: "pending",
          next_attempt_at: null,
          event_id: failed!.eventId,
        });
        await sleep(QUIET_MS);
        expect(receiver.on(at("replay-failed"))).toHaveLength(RETRY_SCHEDULE_MS.length + 1);

        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        const requests = await receiver.waitFor(at("replay-failed"), RETRY_SCHEDULE_MS.length + 2);
        expect(header(requests.at(-1)!, "Kontor-Delivery")).toBe(replay.body.id);
        expect(await deliveryWhen(ws.api, replay.body.id, finished)).toMatchObject({
          status: "succeeded",
          attempts: 1,
        });
        expect((await ws.api.get(`/webhook-deliveries/${failed!.id}`)).body.status).toBe("failed");
      });
    });
  },
  SHORT_TIMEOUT_ENV,
);
