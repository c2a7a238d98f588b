import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WEBHOOK_BODY_BUDGET_BYTES } from "../../../server/webhooks/attempt.ts";
import { call, rest } from "../../support/http.ts";
import { eventually, type Received, type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Thin events: an envelope above WEBHOOK_BODY_BUDGET_BYTES is delivered with only the resource's
 * object and id, `thin: true` and `event_url`, where GET returns the full snapshot.
 */

type Api = ReturnType<typeof rest>;

const header = (request: Received, name: string) => String(request.headers[name.toLowerCase()] ?? "");

/** Both signatures check out over the body exactly as it arrived. */
function expectSigned(request: Received, secret: string) {
  const timestamp = header(request, "kontor-timestamp");
  const kontor = `sha256=${createHmac("sha256", secret).update(`${timestamp}.${request.body}`).digest("hex")}`;
  expect(header(request, "kontor-signature")).toBe(kontor);
  const headers = {
    "webhook-id": header(request, "webhook-id"),
    "webhook-timestamp": header(request, "webhook-timestamp"),
    "webhook-signature": header(request, "webhook-signature"),
  };
  expect(() => new Webhook(secret).verify(request.body, headers)).not.toThrow();
  // A body changed by one byte does not verify: the signature covers what was sent.
  expect(() => new Webhook(secret).verify(`${request.body} `, headers)).toThrow();
}

/** `count` lines whose descriptions are `length` characters long, padded with `fill`. */
const lines = (count: number, length: number, fill = "x") =>
  Array.from({ length: count }, (_, i) => ({
    description: `${i}:`.padEnd(length, fill),
    quantity: 1,
    unit_price: 10,
  }));

e2e("thin webhook events", (server, stack) => {
  let receiver: Receiver;
  let api: Api;
  let secret: string;
  let workspaceId: string;
  let clientId: string;
  const path = `/${stack}/thin`;

  beforeAll(async () => {
    receiver = await startReceiver();
    const tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    workspaceId = tenant.workspaceId;
    const client = await api.post("/clients", { name: "Thin Events Ltd" });
    expect(client.status).toBe(201);
    clientId = client.body.id;
    const created = await api.post("/webhook-endpoints", {
      url: receiver.url(path),
      events: ["invoice.created"],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    secret = created.body.secret;
  });
  afterAll(async () => {
    await receiver?.close();
  });

  /** Creates an invoice and returns it with the one delivery of its invoice.created event. */
  async function invoiceDelivered(items: ReturnType<typeof lines>) {
    const invoice = await api.post("/invoices", { client_id: clientId, items });
    expect(invoice.status, JSON.stringify(invoice.body).slice(0, 500)).toBe(201);
    const [request] = (await receiver.waitFor(path, 1)).filter(
      (r) => r.json?.type === "invoice.created" && r.json.data.object.id === invoice.body.id,
    );
    receiver.received.splice(0);
    expect(request, "the invoice.created delivery").toBeDefined();
    return { invoice: invoice.body, request: request! };
  }

  it("delivers a small event in full, without a thin field", async () => {
    const { invoice, request } = await invoiceDelivered(lines(2, 20));
    expect(request.json.data.object).toEqual(invoice);
    expect(request.json).not.toHaveProperty("thin");
    expect(request.json).not.toHaveProperty("event_url");
    expectSigned(request, secret);
  });

  it("delivers a large event just under the budget in full", async () => {
    // 250 lines of 500 ASCII characters: the most lines of the longest descriptions, about 140 KB.
    const { invoice, request } = await invoiceDelivered(lines(250, 500));
    const size = Buffer.byteLength(request.body);
    expect(size).toBeGreaterThan(WEBHOOK_BODY_BUDGET_BYTES / 2);
    expect(size).toBeLessThanOrEqual(WEBHOOK_BODY_BUDGET_BYTES);
    expect(request.json).not.toHaveProperty("thin");
    expect(request.json.data.object).toEqual(invoice);
    expect(request.json.data.object.items).toHaveLength(250);
    expectSigned(request, secret);
  });

  it("delivers an event over the budget thin, signed, with an event_url that returns the full snapshot", async () => {
    // The same in "€" (3 bytes in UTF-8): about 390 KB.
    const { invoice, request } = await invoiceDelivered(lines(250, 500, "€"));
    const eventId = request.json.id;
    expect(eventId).toMatch(/^evt_/);
    expect(request.json).toEqual({
      id: eventId,
      object: "event",
      type: "invoice.created",
      created_at: expect.stringMatching(/Z$/),
      workspace_id: workspaceId,
      data: { object: { object: "invoice", id: invoice.id } },
      thin: true,
      event_url: `${server().api}/events/${eventId}`,
    });
    expect(header(request, "webhook-id")).toBe(eventId);
    expect(Buffer.byteLength(request.body)).toBeLessThan(1024);
    expectSigned(request, secret);

    // The full snapshot: what GET /v1/events/{id} returns, and what the envelope would have carried.
    const event = await api.get(`/events/${eventId}`);
    expect(event.status).toBe(200);
    expect(event.body).toMatchObject({
      object: "event",
      id: eventId,
      type: "invoice.created",
      workspace_id: workspaceId,
    });
    expect(event.body.data.object).toEqual(invoice);
    expect(event.body.data.object.items).toHaveLength(250);
    const full = JSON.stringify({
      ...request.json,
      data: event.body.data,
      thin: undefined,
      event_url: undefined,
    });
    expect(Buffer.byteLength(full)).toBeGreaterThan(WEBHOOK_BODY_BUDGET_BYTES);

    // event_url needs a key like any route: without one it is 401, with another workspace's it is 404.
    expect((await call("GET", request.json.event_url)).status).toBe(401);
    const stranger = await server().tenant();
    const hidden = await call("GET", request.json.event_url, { key: stranger.key });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe("not_found");

    const deliveries = await eventually(
      async () => (await api.get(`/webhook-deliveries?event_type=invoice.created`)).body.data,
      (rows: any[]) => rows.some((row) => row.event_id === eventId && row.status === "succeeded"),
    );
    expect(deliveries.find((row: any) => row.event_id === eventId)).toMatchObject({
      status: "succeeded",
      attempts: 1,
      response_status: 200,
    });
  });
});
