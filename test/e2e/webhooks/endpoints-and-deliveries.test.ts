import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { call, rest, type ApiResponse } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import { eventually, startReceiver, type Received, type Receiver } from "../../support/receiver.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { EVENT_RETENTION_DAYS } from "../../../schema/events.ts";
import { maxTextLength } from "../../../schema/lib/limits.ts";
import { deleteExpiredEvents } from "../../../server/webhooks/store.ts";

/**
 * Webhooks end to end (docs/api/webhooks.md and "The API in short"): endpoints over REST and GraphQL,
 * and real deliveries to a loopback receiver through the production code path, with a short retry
 * schedule and timeout set through the server's configuration.
 */

const RETRY_SCHEDULE_MS = [300, 600];
const TIMEOUT_MS = 1000;
const ENV = {
  KONTOR_WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE_MS.map((ms) => `${ms}ms`).join(","),
  KONTOR_WEBHOOK_JITTER: "0",
  KONTOR_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
};
/** Longer than the embedded worker's poll (500 ms) plus an attempt: what did not arrive by then is not coming. */
const QUIET_MS = 1500;

const ULID = "[0-9A-HJKMNP-TV-Z]{26}";
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const ENDPOINT_ID = new RegExp(`^we_${ULID}$`);
const DELIVERY_ID = new RegExp(`^whd_${ULID}$`);
const EVENT_ID = new RegExp(`^evt_${ULID}$`);
const NEVER_ENDPOINT = "we_01J00000000000000000000000";
const NEVER_DELIVERY = "whd_01J00000000000000000000000";
const NEVER_EVENT = "evt_01J00000000000000000000000";
/** An endpoint's description: long text (docs/api/limits.md), the bound the OpenAPI document states. */
const DESCRIPTION = maxTextLength("Mutation.createWebhookEndpoint", "description");

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const header = (request: Received, name: string) => {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
};

/** `Kontor-Signature` computed the way a user would: HMAC-SHA256 keyed by the whole secret string. */
function kontorSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

function standardHeaders(request: Received, body = request.body) {
  return {
    body,
    headers: {
      "webhook-id": header(request, "webhook-id"),
      "webhook-timestamp": header(request, "webhook-timestamp"),
      "webhook-signature": header(request, "webhook-signature"),
    },
  };
}

/** Both signatures of a received request check out with `secret`. */
function expectSignedWith(request: Received, secret: string) {
  const { body, headers } = standardHeaders(request);
  expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
  expect(header(request, "Kontor-Signature")).toBe(kontorSignature(secret, header(request, "Kontor-Timestamp"), request.body));
}

/** Neither signature of a received request checks out with `secret`. */
function expectNotSignedWith(request: Received, secret: string) {
  const { body, headers } = standardHeaders(request);
  expect(() => new Webhook(secret).verify(body, headers)).toThrow();
  expect(header(request, "Kontor-Signature")).not.toBe(kontorSignature(secret, header(request, "Kontor-Timestamp"), request.body));
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

let receiver: Receiver;
/** Answers every POST with a 307 to the same path on the receiver, which must never be followed. */
let redirector: Server;
let redirectorBase: string;
const redirected: string[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
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
  await receiver?.close();
  redirector?.closeAllConnections();
  await new Promise<void>((resolve) => (redirector ? redirector.close(() => resolve()) : resolve()));
});

afterEach(() => {
  receiver.answer = () => ({ status: 200 });
});

e2e(
  "webhooks",
  (server, stack) => {
    type Api = ReturnType<typeof rest>;
    interface Workspace extends Tenant {
      api: Api;
    }

    /** A receiver path of this stack's test: no other test or stack sees its requests. */
    const at = (name: string) => `/${stack}/${name}`;
    const prisma = () => server().running.db.prisma;

    /** A fresh workspace: its endpoints see only the events the test makes. */
    async function workspace(): Promise<Workspace> {
      const tenant = await server().tenant();
      return { ...tenant, api: rest(server().api, tenant.key) };
    }

    async function createEndpoint(api: Api, body: Record<string, unknown>) {
      const res = await api.post("/webhook-endpoints", body);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body as { id: string; secret: string } & Record<string, any>;
    }

    /** An endpoint receiving on the receiver's `path`. */
    const listen = (api: Api, path: string, events: string[] = ["lead.created"]) => createEndpoint(api, { url: receiver.url(path), events });

    async function newLead(api: Api, body: Record<string, unknown> = { first_name: "Ada", last_name: "Lovelace" }) {
      const res = await api.post("/leads", body);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body as { id: string } & Record<string, any>;
    }

    const deliveriesOf = (endpointId: string) => prisma().webhookDelivery.findMany({ where: { endpointId }, orderBy: { id: "asc" } });

    /** Waits (via the database, to spare the rate limit) until the endpoint has `count` deliveries that all satisfy `done`. */
    async function deliveriesWhen(endpointId: string, count: number, done: (row: Awaited<ReturnType<typeof deliveriesOf>>[number]) => boolean) {
      const rows = await eventually(
        () => deliveriesOf(endpointId),
        (list) => list.length === count && list.every(done),
      );
      expect(rows.map((row) => [row.status, row.attempts]), `deliveries of ${endpointId}`).toHaveLength(count);
      for (const row of rows) expect(done(row), JSON.stringify(row)).toBe(true);
      return rows;
    }

    /** The REST view of a delivery once its row satisfies `done`. */
    async function deliveryWhen(api: Api, id: string, done: (row: { status: string; attempts: number }) => boolean) {
      const row = await eventually(
        () => prisma().webhookDelivery.findUniqueOrThrow({ where: { id } }),
        done,
      );
      expect(done(row), JSON.stringify(row)).toBe(true);
      const res = await api.get(`/webhook-deliveries/${id}`);
      expect(res.status).toBe(200);
      return res.body;
    }

    const finished = (row: { status: string }) => row.status === "succeeded" || row.status === "failed";

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
        expect(row.secretSealed).not.toContain(Buffer.from(secret.slice("whsec_".length), "base64").toString("hex"));

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
        expect(patched.body).toMatchObject({ ...shown, description: "renamed", updated_at: expect.stringMatching(ISO) });
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
        for (const name of ["first", "second", "third"]) made.push(await createEndpoint(own.api, { url: receiver.url(at(name)), events: ["*"], description: name }));
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
        expectError(await own.api.get("/webhook-endpoints?cursor=nonsense"), 400, "validation_failed", "cursor");
      });

      it("updates url, events, description and is_active, and deletes", async () => {
        const created = await createEndpoint(ws.api, { url: receiver.url(at("update-a")), events: ["lead.created"], description: "old" });
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
        expect(new Date(moved.body.updated_at).getTime()).toBeGreaterThanOrEqual(new Date(endpoint.updated_at).getTime());

        const all = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { events: ["*"], description: null });
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
        expectError(await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { description: "x" }), 404, "not_found");
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
        [`a description over ${DESCRIPTION} characters`, { description: "d".repeat(DESCRIPTION + 1) }, "description"],
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
        const https = await createEndpoint(ws.api, { url: "https://127.0.0.1:8443/kontor?x=1", events: ["*"] });
        expect(https.url).toBe("https://127.0.0.1:8443/kontor?x=1");
        const repeated = await createEndpoint(ws.api, { ...good(), events: ["lead.created", "lead.created", "invoice.paid"] });
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

    describe("scopes and tenancy", () => {
      let owner: Workspace;
      let endpointId: string;
      let deliveryId: string;
      let eventId: string;

      beforeAll(async () => {
        owner = await workspace();
        endpointId = (await listen(owner.api, at("scopes"))).id;
        await newLead(owner.api);
        const [delivery] = await deliveriesWhen(endpointId, 1, finished);
        deliveryId = delivery!.id;
        eventId = delivery!.eventId;
      });

      const reads = (api: Api) => [
        () => api.get("/webhook-endpoints"),
        () => api.get(`/webhook-endpoints/${endpointId}`),
        () => api.get("/webhook-deliveries"),
        () => api.get(`/webhook-deliveries?endpoint_id=${endpointId}`),
        () => api.get(`/webhook-deliveries/${deliveryId}`),
        () => api.get("/events"),
        () => api.get(`/events/${eventId}`),
      ];
      const writes = (api: Api) => [
        () => api.post("/webhook-endpoints", { url: receiver.url(at("scopes-new")), events: ["*"] }),
        () => api.patch(`/webhook-endpoints/${endpointId}`, { description: "changed" }),
        () => api.post(`/webhook-endpoints/${endpointId}/rotate-secret`),
        () => api.post(`/webhook-endpoints/${endpointId}/test`),
        () => api.post(`/webhook-deliveries/${deliveryId}/replay`),
        () => api.delete(`/webhook-endpoints/${endpointId}`),
      ];

      async function snapshot() {
        return {
          endpoints: await prisma().webhookEndpoint.findMany({ where: { workspaceId: owner.workspaceId }, orderBy: { id: "asc" } }),
          deliveries: await prisma().webhookDelivery.count({ where: { workspaceId: owner.workspaceId } }),
          events: await prisma().event.count({ where: { workspaceId: owner.workspaceId } }),
        };
      }

      it("needs webhooks.read for every read, even with webhooks.write", async () => {
        const writeOnly = rest(server().api, (await server().key(owner.workspaceId, ["webhooks.write", "leads.read", "leads.write"])).key);
        for (const read of reads(writeOnly)) {
          const res = await read();
          expectError(res, 403, "insufficient_scope");
          expect(res.body.error).toMatchObject({ type: "permission_error", required_scope: "webhooks.read" });
        }
      });

      it("needs webhooks.write for every write, and a refused write changes nothing", async () => {
        const readOnly = rest(server().api, (await server().key(owner.workspaceId, ["webhooks.read", "leads.read", "leads.write"])).key);
        const before = await snapshot();
        for (const write of writes(readOnly)) {
          const res = await write();
          expectError(res, 403, "insufficient_scope");
          expect(res.body.error).toMatchObject({ type: "permission_error", required_scope: "webhooks.write" });
        }
        expect(await snapshot()).toEqual(before);
        const none = rest(server().api, (await server().key(owner.workspaceId, ["leads.read"])).key);
        for (const read of reads(none)) expect((await read()).body.error.required_scope).toBe("webhooks.read");
        for (const write of writes(none)) expect((await write()).body.error.required_scope).toBe("webhooks.write");
        expect(await snapshot()).toEqual(before);
      });

      it("lets a write-only key create (with its secret), update and test", async () => {
        const writeOnly = rest(server().api, (await server().key(owner.workspaceId, ["webhooks.write"])).key);
        const created = await writeOnly.post("/webhook-endpoints", { url: receiver.url(at("scopes-write-only")), events: ["invoice.paid"] });
        expect(created.status).toBe(201);
        expect(created.body.secret).toMatch(SECRET);
        const patched = await writeOnly.patch(`/webhook-endpoints/${created.body.id}`, { description: "by a write-only key" });
        expect(patched.status).toBe(200);
        expect(patched.body.description).toBe("by a write-only key");
        const tested = await writeOnly.post(`/webhook-endpoints/${created.body.id}/test`);
        expect(tested.status).toBe(201);
        const [request] = await receiver.waitFor(at("scopes-write-only"), 1);
        expectSignedWith(request!, created.body.secret);
        expect((await writeOnly.delete(`/webhook-endpoints/${created.body.id}`)).status).toBe(200);
      });

      it("replays a create or rotation under the same Idempotency-Key instead of making a second secret", async () => {
        const own = await workspace();
        const body = { url: receiver.url(at("idempotent")), events: ["lead.created"] };
        const key = `create-${Date.now()}-${Math.random()}`;
        const post = (path: string, payload?: unknown, apiKey = own.key, idempotencyKey = key) =>
          call("POST", server().api + path, { key: apiKey, body: payload, headers: { "Idempotency-Key": idempotencyKey } });
        const first = await post("/webhook-endpoints", body);
        expect(first.status).toBe(201);
        const again = await post("/webhook-endpoints", body);
        expect(again.status).toBe(201);
        expect(again.headers.get("idempotent-replay")).toBe("true");
        expect(again.body).toEqual(first.body);
        expect(await prisma().webhookEndpoint.count({ where: { workspaceId: own.workspaceId } })).toBe(1);

        const rotateKey = `rotate-${Date.now()}-${Math.random()}`;
        const rotated = await post(`/webhook-endpoints/${first.body.id}/rotate-secret`, undefined, own.key, rotateKey);
        expect(rotated.status).toBe(200);
        const sealed = (await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: first.body.id } })).secretSealed;
        const rotatedAgain = await post(`/webhook-endpoints/${first.body.id}/rotate-secret`, undefined, own.key, rotateKey);
        expect(rotatedAgain.body.secret).toBe(rotated.body.secret);
        // A retried rotation must not replace the secret the caller has just been given.
        expect((await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: first.body.id } })).secretSealed).toBe(sealed);
        await newLead(own.api);
        const [request] = await receiver.waitFor(at("idempotent"), 1);
        expectSignedWith(request!, rotated.body.secret);
      });

      it("an idempotent replay never hands an endpoint's secret to another key of the workspace", async () => {
        const own = await workspace();
        const body = { url: receiver.url(at("idempotent-scope")), events: ["lead.created"] };
        const key = `scope-${Date.now()}-${Math.random()}`;
        const post = (path: string, payload: unknown, apiKey: string) =>
          call("POST", server().api + path, { key: apiKey, body: payload, headers: { "Idempotency-Key": key } });
        const created = await post("/webhook-endpoints", body, own.key);
        expect(created.status).toBe(201);
        // Without the header this key is refused (see "needs webhooks.write for every write").
        const leadsOnly = (await server().key(own.workspaceId, ["leads.read"])).key;
        const replayed = await post("/webhook-endpoints", body, leadsOnly);
        expect(JSON.stringify(replayed.body)).not.toContain(created.body.secret);
        expectError(replayed, 409, "idempotency_conflict");
        expect(replayed.headers.get("idempotent-replay")).toBeNull();
      });

      it("hides another workspace's endpoints, deliveries and events behind 404 on every route", async () => {
        const other = await workspace();
        const before = await snapshot();
        const ownerView = (await owner.api.get(`/webhook-endpoints/${endpointId}`)).body;
        for (const [res, id] of [
          [await other.api.get(`/webhook-endpoints/${endpointId}`), endpointId],
          [await other.api.patch(`/webhook-endpoints/${endpointId}`, { is_active: false }), endpointId],
          [await other.api.delete(`/webhook-endpoints/${endpointId}`), endpointId],
          [await other.api.post(`/webhook-endpoints/${endpointId}/rotate-secret`), endpointId],
          [await other.api.post(`/webhook-endpoints/${endpointId}/test`), endpointId],
          [await other.api.get(`/webhook-deliveries/${deliveryId}`), deliveryId],
          [await other.api.post(`/webhook-deliveries/${deliveryId}/replay`), deliveryId],
          [await other.api.get(`/events/${eventId}`), eventId],
        ] as const) {
          expectError(res, 404, "not_found");
          expect(res.body.error.message).toContain(id);
        }
        // Filters and lists show nothing of the owner's either.
        const filtered = await other.api.get(`/webhook-deliveries?endpoint_id=${endpointId}`);
        expect(filtered.body).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
        expect((await other.api.get("/webhook-endpoints")).body.data).toEqual([]);
        expect((await other.api.get("/webhook-deliveries")).body.data).toEqual([]);
        expect((await other.api.get("/events")).body.data).toEqual([]);
        expect(await snapshot()).toEqual(before);
        expect((await owner.api.get(`/webhook-endpoints/${endpointId}`)).body).toEqual(ownerView);
      });

      it("never sends a workspace's events to another workspace's endpoints", async () => {
        const mine = await workspace();
        const theirs = await workspace();
        const mineAll = await listen(mine.api, at("tenancy-mine"), ["*"]);
        await listen(theirs.api, at("tenancy-theirs"), ["*"]);
        const lead = await newLead(theirs.api);
        const [request] = await receiver.waitFor(at("tenancy-theirs"), 1);
        expect(request!.json).toMatchObject({ workspace_id: theirs.workspaceId, data: { object: { id: lead.id } } });
        await sleep(QUIET_MS);
        expect(receiver.on(at("tenancy-mine"))).toEqual([]);
        expect(await deliveriesOf(mineAll.id)).toEqual([]);
        expect((await mine.api.get("/events")).body.data).toEqual([]);
      });
    });

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
          data: { id: `whd_01J${Date.now().toString().padStart(23, "0")}`, workspaceId: ws.workspaceId, endpointId: endpoint.id, eventId: old.id, eventType: "lead.created", status: "succeeded", attempts: 1 },
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
        const elsewhere = await listen(ws.api, at("deliver-invoices"), ["invoice.created", "lead.stage_changed"]);
        const lead = await newLead(ws.api, { full_name: "Grace Hopper", estimated_value: 1200.5, stage: "qualified" });

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
        expect(new Date(body.created_at).getTime()).toBeGreaterThanOrEqual(new Date(lead.created_at).getTime());
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
        expect(all.body.data.map((e: { type: string }) => e.type)).toEqual(["client.created", "lead.created"]);
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
        expect(header(request!, "Kontor-Signature")).not.toBe(kontorSignature(endpoint.secret, header(request!, "Kontor-Timestamp"), tamperedBody));

        const shifted = String(Number(headers["webhook-timestamp"]) + 1);
        expect(() => new Webhook(endpoint.secret).verify(request!.body, { ...headers, "webhook-timestamp": shifted })).toThrow();
        expect(header(request!, "Kontor-Signature")).not.toBe(kontorSignature(endpoint.secret, shifted, request!.body));

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
        expect(rotated.body).toEqual({ ...endpoint, secret: expect.stringMatching(SECRET), updated_at: expect.stringMatching(ISO) });
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
      });

      it("gives up after the schedule runs out: failed, no further attempt", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("always-500"));
        receiver.answer = (request) => (request.path === at("always-500") ? { status: 500, body: "nope" } : { status: 200 });
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
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toMatchObject({ is_active: true, status: "active" });
      });

      it("counts a receiver slower than the timeout as a timeout and retries", async () => {
        const ws = await workspace();
        await listen(ws.api, at("slow"));
        let seen = 0;
        receiver.answer = (request) => {
          if (request.path !== at("slow")) return { status: 200 };
          seen += 1;
          if (seen === 1) return { status: 200, body: "too late", delayMs: TIMEOUT_MS + 700 };
          if (seen === 2) return { status: 200, body: "in time", delayMs: 400 };
          return { status: 200, body: "in time" };
        };
        await newLead(ws.api);
        const [first] = await receiver.waitFor(at("slow"), 1);
        const deliveryId = header(first!, "Kontor-Delivery");
        await receiver.waitFor(at("slow"), 2, 10_000);
        const meanwhile = (await ws.api.get(`/webhook-deliveries/${deliveryId}`)).body;
        expect(meanwhile).toMatchObject({ status: "retrying", last_error: "timeout", response_status: null, response_body: null });
        expect(meanwhile.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);

        const done = await deliveryWhen(ws.api, deliveryId, finished);
        expect(done).toMatchObject({ status: "succeeded", attempts: 2, response_status: 200, response_body: "in time", last_error: null });
        expect(done.duration_ms).toBeLessThan(TIMEOUT_MS);
      });

      it("records connection_refused for a port nothing listens on, and retries until failed", async () => {
        const ws = await workspace();
        const endpoint = await createEndpoint(ws.api, { url: `http://127.0.0.1:${await closedPort()}/hook`, events: ["lead.created"] });
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
      });

      it("does not follow a redirect: a 3xx is a failed attempt and the target receives nothing", async () => {
        const ws = await workspace();
        const endpoint = await createEndpoint(ws.api, { url: redirectorBase + at("redirect"), events: ["lead.created"] });
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
        expect(redirected.filter((path) => path === at("redirect"))).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
        expect(receiver.on(at("redirect"))).toEqual([]);
      });

      it("keeps exactly the first 2048 bytes of a long response body", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("long-body"));
        const long = "0123456789abcdef".repeat(400); // 6400 bytes
        receiver.answer = (request) => (request.path === at("long-body") ? { status: 200, body: long } : { status: 200 });
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
        receiver.answer = (request) => (request.path === at("short-body") ? { status: 202, body: bodies.shift() ?? "" } : { status: 200 });
        await newLead(ws.api);
        await newLead(ws.api);
        const rows = await deliveriesWhen(endpoint.id, 2, finished);
        const records = await Promise.all(rows.map(async (row) => (await ws.api.get(`/webhook-deliveries/${row.id}`)).body));
        expect(records.map((r) => [r.status, r.response_status]).sort()).toEqual([["succeeded", 202], ["succeeded", 202]]);
        expect(records.map((r) => r.response_body).sort()).toEqual(["", "x".repeat(2048)]);
      });
    });

    describe("410 Gone", () => {
      it("fails the delivery without retrying, pauses the endpoint, and holds later events until resumed", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("gone"));
        const other = await listen(ws.api, at("gone-bystander"));
        let gone = true;
        receiver.answer = (request) => (request.path === at("gone") && gone ? { status: 410, body: "gone for good" } : { status: 200 });
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
        expect((await ws.api.get(`/webhook-endpoints/${other.id}`)).body).toMatchObject({ is_active: true, disabled_reason: null });

        await newLead(ws.api, { first_name: "Later" });
        const held = await eventually(
          () => deliveriesOf(endpoint.id),
          (list) => list.length === 2,
        );
        await sleep(QUIET_MS);
        expect(receiver.on(at("gone")), "no retry, nothing while paused").toHaveLength(1);
        await receiver.waitFor(at("gone-bystander"), 2);
        const heldRecord = (await ws.api.get(`/webhook-deliveries/${held[1]!.id}`)).body;
        expect(heldRecord).toMatchObject({ status: "pending", attempts: 0, next_attempt_at: null, response_status: null });

        gone = false;
        const resumed = await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        expect(resumed.body).toMatchObject({ is_active: true, status: "active", disabled_reason: null });
        const requests = await receiver.waitFor(at("gone"), 2);
        expect(requests[1]!.json.data.object.first_name).toBe("Later");
        expect(requests[0]!.json.data.object.id).toBe(lead.id);
        expect(await deliveryWhen(ws.api, held[1]!.id, finished)).toMatchObject({ status: "succeeded", attempts: 1 });
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
        expect(pending.body.data.map((d: { id: string }) => d.id).sort()).toEqual(rows.map((row) => row.id).sort());

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
        expect((await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false })).status).toBe(200);
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
        expect(await deliveryWhen(ws.api, row!.id, finished)).toMatchObject({ status: "succeeded", attempts: 2, response_status: 200 });
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
        expect(await deliveryWhen(ws.api, res.body.id, finished)).toMatchObject({ status: "succeeded", attempts: 1 });
        // The original is left as it was.
        expect((await ws.api.get(`/webhook-deliveries/${originalId}`)).body).toMatchObject({ status: "succeeded", attempts: 1 });
        const list = await ws.api.get(`/webhook-deliveries?endpoint_id=${endpoint.id}`);
        expect(list.body.data.map((d: { id: string }) => d.id)).toEqual([res.body.id, originalId]);

        expectError(await ws.api.post(`/webhook-deliveries/${NEVER_DELIVERY}/replay`), 404, "not_found");
      });

      it("replays a failed delivery, and holds a replay to a paused endpoint", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("replay-failed"));
        let failing = true;
        receiver.answer = (request) => (request.path === at("replay-failed") && failing ? { status: 500 } : { status: 200 });
        await newLead(ws.api);
        const [failed] = await deliveriesWhen(endpoint.id, 1, finished);
        expect(failed!.status).toBe("failed");
        failing = false;

        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        const replay = await ws.api.post(`/webhook-deliveries/${failed!.id}/replay`);
        expect(replay.status).toBe(201);
        expect(replay.body).toMatchObject({ status: "pending", next_attempt_at: null, event_id: failed!.eventId });
        await sleep(QUIET_MS);
        expect(receiver.on(at("replay-failed"))).toHaveLength(RETRY_SCHEDULE_MS.length + 1);

        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true });
        const requests = await receiver.waitFor(at("replay-failed"), RETRY_SCHEDULE_MS.length + 2);
        expect(header(requests.at(-1)!, "Kontor-Delivery")).toBe(replay.body.id);
        expect(await deliveryWhen(ws.api, replay.body.id, finished)).toMatchObject({ status: "succeeded", attempts: 1 });
        expect((await ws.api.get(`/webhook-deliveries/${failed!.id}`)).body.status).toBe("failed");
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
        expect(await deliveryWhen(ws.api, res.body.id, finished)).toMatchObject({ status: "succeeded", attempts: 1, response_status: 200 });

        // Paused: the test is still sent.
        const paused = (await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false })).body;
        const whilePaused = await ws.api.post(`/webhook-endpoints/${endpoint.id}/test`);
        expect(whilePaused.status).toBe(201);
        const [, second] = await receiver.waitFor(at("test-target"), 2);
        expect(second!.json.data.object).toEqual(paused);
        expect(second!.json.data.object).toMatchObject({ is_active: false, status: "paused" });
        expect(await deliveryWhen(ws.api, whilePaused.body.id, finished)).toMatchObject({ status: "succeeded" });

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
        const replay = await latency(async () => expect((await ws.api.post(`/webhook-deliveries/${deliveryId}/replay`)).status).toBe(201));
        const test = await latency(async () => expect((await ws.api.post(`/webhook-endpoints/${endpoint.id}/test`)).status).toBe(201));
        await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: false });
        await newLead(ws.api);
        await eventually(
          () => deliveriesOf(endpoint.id),
          (list) => list.length === 4,
        );
        const resume = await latency(async () => expect((await ws.api.patch(`/webhook-endpoints/${endpoint.id}`, { is_active: true })).status).toBe(200));
        for (const [cause, ms] of Object.entries({ lead, replay, test, resume })) {
          // The receiver may record the request a moment before the API's answer reaches the test.
          expect(ms, `${cause}: ms from the API's answer to the delivery`).toBeGreaterThan(-250);
          expect(ms, `${cause}: ms from the API's answer to the delivery`).toBeLessThan(1000);
        }
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
        (await prisma().webhookDelivery.findMany({ where: { workspaceId: ws.workspaceId }, orderBy: { id: "desc" } })).map((d) => d);

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
        expect(await expectIds(`endpoint_id=${leadsOnly}`, (d) => d.endpointId === leadsOnly)).toHaveLength(1);
        expect(await expectIds("event_type=client.created", (d) => d.eventType === "client.created")).toHaveLength(2);
        expect(await expectIds("event_type=lead.created", (d) => d.eventType === "lead.created")).toHaveLength(2);
        expect(await expectIds("status=failed", (d) => d.endpointId === goneClients)).toHaveLength(1);
        expect(await expectIds("status=succeeded", (d) => d.endpointId !== goneClients)).toHaveLength(3);
        expect(await expectIds("status=pending", () => false)).toEqual([]);
        expect(await expectIds("status=retrying", () => false)).toEqual([]);
        expect(
          await expectIds(`endpoint_id=${all}&event_type=client.created&status=succeeded`, (d) => d.endpointId === all && d.eventType === "client.created"),
        ).toHaveLength(1);
        expect(await expectIds(`endpoint_id=${NEVER_ENDPOINT}`, () => false)).toEqual([]);
        expect(await expectIds("event_type=invoice.paid", () => false)).toEqual([]);
      });

      it("rejects an unknown status with 400 validation_failed", async () => {
        expectError(await ws.api.get("/webhook-deliveries?status=bogus"), 400, "validation_failed", "status");
        expectError(await ws.api.get("/webhook-deliveries?status=SUCCEEDED"), 400, "validation_failed", "status");
        expectError(await ws.api.get("/webhook-deliveries?limit=101"), 400, "validation_failed", "limit");
      });
    });

    describe("GraphQL", () => {
      const ENDPOINT_FIELDS = "object id url events description is_active status disabled_reason created_at updated_at";
      const DELIVERY_FIELDS = "object id endpoint_id event_id event_type status attempts response_status response_body last_error duration_ms next_attempt_at delivered_at";

      it("creates an endpoint with its secret, and shows the same objects as REST", async () => {
        const ws = await workspace();
        const gql = graphql(server().url, ws.key);
        const created = await gql(
          `mutation ($url: String!) { createWebhookEndpoint(url: $url, events: ["lead.created"], description: "gql") { ${ENDPOINT_FIELDS} secret } }`,
          { url: receiver.url(at("graphql")) },
        );
        expect(created.errors).toBeUndefined();
        const { secret, ...endpoint } = created.data.createWebhookEndpoint;
        expect(secret).toMatch(SECRET);
        expect(endpoint).toMatchObject({ object: "webhook_endpoint", id: expect.stringMatching(ENDPOINT_ID), status: "active", is_active: true });
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(endpoint);

        // The secret is not a field of the endpoint once created.
        const noSecret = await gql(`query ($id: ID!) { webhookEndpoint(id: $id) { id secret } }`, { id: endpoint.id });
        expect(noSecret.errors?.[0]?.message).toMatch(/secret/);

        const listed = await gql(`{ webhookEndpoints { object has_more data { ${ENDPOINT_FIELDS} } } }`);
        expect(listed.data.webhookEndpoints).toEqual({ object: "list", has_more: false, data: [endpoint] });

        const lead = await newLead(ws.api);
        const [request] = await receiver.waitFor(at("graphql"), 1);
        expectSignedWith(request!, secret);
        await deliveriesWhen(endpoint.id, 1, finished);

        const deliveries = await gql(`query ($id: ID!) { webhookDeliveries(endpoint_id: $id, status: succeeded) { data { ${DELIVERY_FIELDS} } } }`, {
          id: endpoint.id,
        });
        expect(deliveries.errors).toBeUndefined();
        const [delivery] = deliveries.data.webhookDeliveries.data;
        const restDelivery = (await ws.api.get(`/webhook-deliveries/${delivery.id}`)).body;
        const { created_at: _c, updated_at: _u, ...restFields } = restDelivery;
        expect(delivery).toEqual(restFields);
        expect(delivery).toMatchObject({ status: "succeeded", event_type: "lead.created", attempts: 1 });

        const events = await gql(`{ events(type: "lead.created") { data { id object type workspace_id created_at data { object } } } }`);
        expect(events.data.events.data).toEqual([request!.json]);
        expect(events.data.events.data[0].data.object).toEqual(lead);
        const one = await gql(`query ($id: ID!) { event(id: $id) { id type } }`, { id: request!.json.id });
        expect(one.data.event).toEqual({ id: request!.json.id, type: "lead.created" });
      });

      it("replays a delivery and tests an endpoint through mutations", async () => {
        const ws = await workspace();
        const gql = graphql(server().url, ws.key);
        const endpoint = await listen(ws.api, at("graphql-mutations"));
        await newLead(ws.api);
        const [original] = await receiver.waitFor(at("graphql-mutations"), 1);

        const replay = await gql(`mutation ($id: ID!) { replayWebhookDelivery(id: $id) { ${DELIVERY_FIELDS} } }`, {
          id: header(original!, "Kontor-Delivery"),
        });
        expect(replay.errors).toBeUndefined();
        expect(replay.data.replayWebhookDelivery).toMatchObject({ event_id: original!.json.id, status: "pending", endpoint_id: endpoint.id });
        const [, replayed] = await receiver.waitFor(at("graphql-mutations"), 2);
        expect(header(replayed!, "Kontor-Delivery")).toBe(replay.data.replayWebhookDelivery.id);
        expect(header(replayed!, "webhook-id")).toBe(original!.json.id);

        const test = await gql(`mutation ($id: ID!) { testWebhookEndpoint(id: $id) { id event_type endpoint_id } }`, { id: endpoint.id });
        expect(test.errors).toBeUndefined();
        expect(test.data.testWebhookEndpoint).toMatchObject({ event_type: "webhook.test", endpoint_id: endpoint.id });
        const [, , tested] = await receiver.waitFor(at("graphql-mutations"), 3);
        expect(tested!.json).toMatchObject({ type: "webhook.test", data: { object: { id: endpoint.id, object: "webhook_endpoint" } } });

        const rotated = await gql(`mutation ($id: ID!) { rotateWebhookEndpointSecret(id: $id) { id secret } }`, { id: endpoint.id });
        expect(rotated.data.rotateWebhookEndpointSecret.secret).toMatch(SECRET);
        expect(rotated.data.rotateWebhookEndpointSecret.secret).not.toBe(endpoint.secret);

        const missing = await gql(`mutation { replayWebhookDelivery(id: "${NEVER_DELIVERY}") { id } }`);
        expect(missing.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
        const bad = await gql(`mutation { createWebhookEndpoint(url: "ftp://x", events: ["*"]) { id } }`);
        expect(bad.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "url" });
      });

      it("answers insufficient_scope to a key without the webhooks scopes", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("graphql-scope"), ["invoice.paid"]);
        const gql = graphql(server().url, (await server().key(ws.workspaceId, ["leads.read", "leads.write"])).key);
        for (const [query, scope] of [
          ["{ webhookEndpoints { data { id } } }", "webhooks.read"],
          ["{ webhookDeliveries { data { id } } }", "webhooks.read"],
          ["{ events { data { id } } }", "webhooks.read"],
          [`mutation { createWebhookEndpoint(url: "${receiver.url(at("graphql-scope"))}", events: ["*"]) { id } }`, "webhooks.write"],
          [`mutation { testWebhookEndpoint(id: "${endpoint.id}") { id } }`, "webhooks.write"],
          [`mutation { updateWebhookEndpoint(id: "${endpoint.id}", is_active: false) { id } }`, "webhooks.write"],
        ] as const) {
          const res = await gql(query);
          expect(res.errors?.[0]?.extensions, query).toMatchObject({ code: "insufficient_scope", required_scope: scope });
        }
        expect(await prisma().webhookEndpoint.count({ where: { workspaceId: ws.workspaceId } })).toBe(1);
        expect(await deliveriesOf(endpoint.id)).toEqual([]);
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body.is_active).toBe(true);
      });
    });
  },
  ENV,
);
