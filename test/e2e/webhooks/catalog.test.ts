import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { EVENT_TYPES, type EventType } from "../../../schema/events.ts";
import { graphql } from "../../support/graphql.ts";
import { type ApiResponse, rest } from "../../support/http.ts";
import { type Api, SAMPLE_ITEMS } from "../../support/invoicing.ts";
import type { Received } from "../../support/receiver.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { catalogHarness, get, newClient, newDoc, ok, sorted } from "./support.ts";

/**
 * Every event of the catalog, delivered to a real receiver by the REST action that causes it:
 * signed (Standard Webhooks and Kontor-Signature), in the documented envelope, carrying the
 * resource exactly as the API returns it, and nothing else delivered for that action. Writes that
 * fail deliver nothing: catalog-failed-writes.test.ts.
 */

type Ctx = Record<string, any>;

interface Action {
  /** What the action needs; its own events are delivered before any endpoint exists. */
  setup?: (api: Api) => Promise<Ctx>;
  act: (api: Api, ctx: Ctx, server: TestServer, key: string) => Promise<ApiResponse>;
  /** Every type the action emits, once each. */
  emits: EventType[];
  /** data.object of each emitted type: the resource as the API returns it. */
  objects: (api: Api, ctx: Ctx, res: ApiResponse) => Promise<Partial<Record<EventType, unknown>>>;
}

/**
 * A payment's `invoice` is the invoice as GET returns it, without its `payments` (the REST
 * selection stops at the cycle payment → invoice → payments); that list holds the payment.
 */
function expectPaymentOf(payment: any, invoice: any) {
  const { payments, ...withoutPayments } = invoice;
  expect(payment.invoice).toEqual(withoutPayments);
  const { invoice: _, ...paymentAlone } = payment;
  expect(payments).toContainEqual(paymentAlone);
}

/** The action's answer is the resource. */
const answered =
  (type: EventType) =>
  async (_api: Api, _ctx: Ctx, res: ApiResponse): Promise<Partial<Record<EventType, unknown>>> => ({
    [type]: res.body,
  });

/** The resource as GET returns it now, checked against the action's answer too. */
const fetched =
  (type: EventType, path: (res: ApiResponse) => string) => async (api: Api, _ctx: Ctx, res: ApiResponse) => {
    const now = await get(api, path(res));
    expect(now).toEqual(res.body);
    return { [type]: now };
  };

/** One action per catalog type: the usual way that type comes about. */
const CAUSES: Record<EventType, Action> = {
  "lead.created": {
    act: (api) =>
      api.post("/leads", {
        full_name: "Ada Lovelace",
        email: "ada@example.com",
        estimated_value: 1200,
        stage: "contacted",
      }),
    emits: ["lead.created"],
    objects: fetched("lead.created", (res) => `/leads/${res.body.id}`),
  },
  "lead.stage_changed": {
    setup: async (api) => ({
      lead: await ok(api.post("/leads", { first_name: "Grace", last_name: "Hopper" })),
    }),
    act: (api, { lead }) => api.patch(`/leads/${lead.id}`, { stage: "proposal" }),
    emits: ["lead.stage_changed"],
    objects: fetched("lead.stage_changed", (res) => `/leads/${res.body.id}`),
  },
  "client.created": {
    act: (api) =>
      api.post("/clients", { name: "Acme", address: { city: "Lagos", country: "NG" }, tax_id: "NG-1" }),
    emits: ["client.created"],
    objects: fetched("client.created", (res) => `/clients/${res.body.id}`),
  },
  "client.updated": {
    setup: async (api) => ({ client: await newClient(api) }),
    act: (api, { client }) =>
      api.patch(`/clients/${client.id}`, { phone: "+234 1 234", notes: "prefers e-mail" }),
    emits: ["client.updated"],
    objects: fetched("client.updated", (res) => `/clients/${res.body.id}`),
  },
  "invoice.created": {
    setup: async (api) => ({ client: await newClient(api) }),
    act: (api, { client }) =>
      api.post("/invoices", {
        client_id: client.id,
        items: SAMPLE_ITEMS,
        tax_rate: 7.5,
        due_date: "2999-01-31",
      }),
    emits: ["invoice.created"],
    objects: fetched("invoice.created", (res) => `/invoices/${res.body.id}`),
  },
  "invoice.sent": {
    setup: (api) => newDoc(api),
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/send`),
    emits: ["invoice.sent"],
    objects: fetched("invoice.sent", (res) => `/invoices/${res.body.id}`),
  },
  "invoice.voided": {
    setup: (api) => newDoc(api),
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/void`),
    emits: ["invoice.voided"],
    objects: fetched("invoice.voided", (res) => `/invoices/${res.body.id}`),
  },
  "invoice.paid": {
    // A payment of the whole balance: the payment is recorded and the invoice is paid.
    setup: async (api) => {
      const made = await newDoc(api);
      await ok(api.post(`/invoices/${made.doc.id}/send`));
      return made;
    },
    act: (api, { doc }) =>
      api.post(`/invoices/${doc.id}/payments`, { amount: 100, payment_method: "card", reference: "ch_1" }),
    emits: ["payment.recorded", "invoice.paid"],
    objects: async (api, { doc }, res) => {
      const invoice = await get(api, `/invoices/${doc.id}`);
      expect(invoice).toMatchObject({ status: "paid", balance_due: 0, amount_paid: 100 });
      expectPaymentOf(res.body, invoice);
      return { "payment.recorded": res.body, "invoice.paid": invoice };
    },
  },
  "quote.created": {
    setup: async (api) => ({ client: await newClient(api) }),
    act: (api, { client }) =>
      api.post("/invoices", { document_type: "quote", client_id: client.id, items: SAMPLE_ITEMS }),
    emits: ["quote.created"],
    objects: fetched("quote.created", (res) => `/invoices/${res.body.id}`),
  },
  "quote.sent": {
    setup: (api) => newDoc(api, "quote"),
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/send`),
    emits: ["quote.sent"],
    objects: fetched("quote.sent", (res) => `/invoices/${res.body.id}`),
  },
  "quote.accepted": {
    setup: (api) => newDoc(api, "quote"),
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/accept`),
    emits: ["quote.accepted"],
    objects: fetched("quote.accepted", (res) => `/invoices/${res.body.id}`),
  },
  "quote.declined": {
    setup: (api) => newDoc(api, "quote"),
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/decline`),
    emits: ["quote.declined"],
    objects: fetched("quote.declined", (res) => `/invoices/${res.body.id}`),
  },
  "payment.recorded": {
    // Part of the balance: a payment, and no invoice.paid.
    setup: (api) => newDoc(api),
    act: (api, { doc }) =>
      api.post(`/invoices/${doc.id}/payments`, {
        amount: 40,
        payment_method: "bank_transfer",
        payer_email: "ap@ada.example",
      }),
    emits: ["payment.recorded"],
    objects: async (api, { doc }, res) => {
      expect(res.body).toMatchObject({ object: "payment", invoice_id: doc.id, amount: 40 });
      const invoice = await get(api, `/invoices/${doc.id}`);
      expect(invoice).toMatchObject({ status: "partially_paid", balance_due: 60 });
      expectPaymentOf(res.body, invoice);
      return { "payment.recorded": res.body };
    },
  },
  "inventory.low_stock": {
    setup: async (api) => ({
      item: await ok(
        api.post("/inventory/items", { name: "Bolts", sku: "B-1", quantity: 10, min_stock_threshold: 5 }),
      ),
    }),
    act: (api, { item }) => api.patch(`/inventory/items/${item.id}`, { quantity: 3 }),
    emits: ["inventory.low_stock"],
    objects: async (api, ctx, res) => {
      expect(ctx.item.status).toBe("in_stock");
      expect(res.body.status).toBe("low_stock");
      return fetched("inventory.low_stock", () => `/inventory/items/${res.body.id}`)(api, ctx, res);
    },
  },
  "inventory.out_of_stock": {
    setup: async (api) => ({
      item: await ok(api.post("/inventory/items", { name: "Nuts", quantity: 10, min_stock_threshold: 5 })),
    }),
    act: (api, { item }) => api.patch(`/inventory/items/${item.id}`, { quantity: 0 }),
    emits: ["inventory.out_of_stock"],
    objects: async (api, ctx, res) => {
      expect(res.body.status).toBe("out_of_stock");
      return fetched("inventory.out_of_stock", () => `/inventory/items/${res.body.id}`)(api, ctx, res);
    },
  },
  "task.completed": {
    setup: async (api) => {
      const project = await ok(api.post("/projects", { name: "Launch" }));
      return {
        task: await ok(
          api.post(`/projects/${project.id}/tasks`, { title: "Ship it", status: "in_progress" }),
        ),
      };
    },
    act: (api, { task }) => api.patch(`/tasks/${task.id}`, { status: "done" }),
    emits: ["task.completed"],
    objects: async (api, ctx, res) => {
      expect(res.body.completed_at).toEqual(expect.any(String));
      return fetched("task.completed", () => `/tasks/${res.body.id}`)(api, ctx, res);
    },
  },
  "file.uploaded": {
    setup: async (api) => ({ bucket: await ok(api.post("/buckets", { name: `files-${Date.now()}` })) }),
    act: (api, { bucket }) =>
      api.post(`/buckets/${bucket.id}/objects`, {
        file_name: "notes.txt",
        content_type: "text/plain",
        content_base64: Buffer.from("hello").toString("base64"),
      }),
    emits: ["file.uploaded"],
    objects: fetched("file.uploaded", (res) => `/objects/${res.body.id}`),
  },
  "file.deleted": {
    setup: async (api) => {
      const bucket = await ok(api.post("/buckets", { name: `files-${Date.now()}` }));
      const file = await ok(
        api.post(`/buckets/${bucket.id}/objects`, {
          file_name: "old.txt",
          content_type: "text/plain",
          content_base64: "b2xk",
        }),
      );
      return { file: await get(api, `/objects/${file.id}`) };
    },
    act: (api, { file }) => api.delete(`/objects/${file.id}`),
    emits: ["file.deleted"],
    objects: async (api, { file }, res) => {
      expect(res.body).toEqual({ id: file.id, object: "file", deleted: true });
      expect((await api.get(`/objects/${file.id}`)).status).toBe(404);
      return { "file.deleted": file };
    },
  },
};

/** Other actions that emit catalog events, each with exactly what it emits. */
const OTHER_ACTIONS: Record<string, Action> = {
  "converting a lead: client.created and lead.stage_changed": {
    setup: async (api) => ({
      lead: await ok(
        api.post("/leads", { full_name: "Hedy Lamarr", email: "hedy@example.com", stage: "qualified" }),
      ),
    }),
    act: (api, { lead }) => api.post(`/leads/${lead.id}/convert`),
    emits: ["client.created", "lead.stage_changed"],
    objects: async (api, _ctx, res) => {
      expect(res.body).toMatchObject({ stage: "won", client_id: expect.any(String) });
      const client = await get(api, `/clients/${res.body.client_id}`);
      expect(client).toMatchObject({ name: "Hedy Lamarr", email: "hedy@example.com" });
      const lead = await get(api, `/leads/${res.body.id}`);
      expect(lead).toEqual(res.body);
      return { "client.created": client, "lead.stage_changed": lead };
    },
  },
  "converting a lead already won: client.created alone (the stage does not change)": {
    setup: async (api) => ({ lead: await ok(api.post("/leads", { first_name: "Katherine", stage: "won" })) }),
    act: (api, { lead }) => api.post(`/leads/${lead.id}/convert`),
    emits: ["client.created"],
    objects: async (api, _ctx, res) => ({
      "client.created": await get(api, `/clients/${res.body.client_id}`),
    }),
  },
  "converting an accepted quote: invoice.created for the new invoice, nothing for the quote": {
    setup: async (api) => {
      const made = await newDoc(api, "quote");
      await ok(api.post(`/invoices/${made.doc.id}/accept`));
      return made;
    },
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/convert`),
    emits: ["invoice.created"],
    objects: async (api, { doc }, res) => {
      expect(res.body).toMatchObject({ document_type: "invoice", quote_id: doc.id, status: "draft" });
      expect((await get(api, `/invoices/${doc.id}`)).status).toBe("converted");
      return fetched("invoice.created", () => `/invoices/${res.body.id}`)(api, {}, res);
    },
  },
  "creating an item with no stock: inventory.out_of_stock": {
    act: (api) => api.post("/inventory/items", { name: "Washers", quantity: 0, min_stock_threshold: 2 }),
    emits: ["inventory.out_of_stock"],
    objects: answered("inventory.out_of_stock"),
  },
  "low stock running out: inventory.out_of_stock": {
    setup: async (api) => ({
      item: await ok(api.post("/inventory/items", { name: "Rivets", quantity: 3, min_stock_threshold: 5 })),
    }),
    act: (api, { item }) => api.patch(`/inventory/items/${item.id}`, { quantity: 0 }),
    emits: ["inventory.out_of_stock"],
    objects: answered("inventory.out_of_stock"),
  },
  "creating an item at its threshold: inventory.low_stock": {
    act: (api) => api.post("/inventory/items", { name: "Gaskets", quantity: 2, min_stock_threshold: 2 }),
    emits: ["inventory.low_stock"],
    objects: answered("inventory.low_stock"),
  },
  "restocking an empty item part-way: inventory.low_stock": {
    setup: async (api) => ({
      item: await ok(api.post("/inventory/items", { name: "Springs", quantity: 0, min_stock_threshold: 5 })),
    }),
    act: (api, { item }) => api.patch(`/inventory/items/${item.id}`, { quantity: 4 }),
    emits: ["inventory.low_stock"],
    objects: answered("inventory.low_stock"),
  },
  "raising the threshold above the quantity: inventory.low_stock": {
    setup: async (api) => ({
      item: await ok(api.post("/inventory/items", { name: "Seals", quantity: 8, min_stock_threshold: 2 })),
    }),
    act: (api, { item }) => api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 10 }),
    emits: ["inventory.low_stock"],
    objects: answered("inventory.low_stock"),
  },
  "staying low or restocking fully: nothing": {
    setup: async (api) => ({
      item: await ok(api.post("/inventory/items", { name: "Pins", quantity: 3, min_stock_threshold: 5 })),
    }),
    act: async (api, { item }) => {
      await ok(api.patch(`/inventory/items/${item.id}`, { quantity: 2 }));
      return api.patch(`/inventory/items/${item.id}`, { quantity: 50 });
    },
    emits: [],
    objects: async (_api, _ctx, res) => {
      expect(res.body.status).toBe("in_stock");
      return {};
    },
  },
  "editing without a stage, a status or a payment: nothing": {
    setup: async (api) => {
      const lead = await ok(api.post("/leads", { first_name: "Quiet", stage: "qualified" }));
      const project = await ok(api.post("/projects", { name: "Calm" }));
      const task = await ok(
        api.post(`/projects/${project.id}/tasks`, { title: "Done already", status: "done" }),
      );
      return { lead, task, ...(await newDoc(api)) };
    },
    act: async (api, { lead, task, doc }) => {
      await ok(api.patch(`/leads/${lead.id}`, { notes: "no stage", stage: "qualified" }));
      await ok(api.patch(`/tasks/${task.id}`, { status: "done", title: "Still done" }));
      await ok(api.patch(`/invoices/${doc.id}`, { notes: "draft edit" }));
      await ok(api.delete(`/leads/${lead.id}`));
      return api.get(`/invoices/${doc.id}`);
    },
    emits: [],
    objects: async () => ({}),
  },
  "creating a task as done: task.completed": {
    setup: async (api) => ({ project: await ok(api.post("/projects", { name: "Backlog" })) }),
    act: (api, { project }) =>
      api.post(`/projects/${project.id}/tasks`, { title: "Already done", status: "done" }),
    emits: ["task.completed"],
    objects: fetched("task.completed", (res) => `/tasks/${res.body.id}`),
  },
  "the last payment of several: payment.recorded and invoice.paid": {
    setup: async (api) => {
      const made = await newDoc(api);
      await ok(api.post(`/invoices/${made.doc.id}/payments`, { amount: 30, payment_method: "cash" }));
      return made;
    },
    act: (api, { doc }) => api.post(`/invoices/${doc.id}/payments`, { amount: 70, payment_method: "check" }),
    emits: ["payment.recorded", "invoice.paid"],
    objects: async (api, { doc }, res) => {
      const invoice = await get(api, `/invoices/${doc.id}`);
      expect(invoice.payments).toHaveLength(2);
      expect(invoice.status).toBe("paid");
      expectPaymentOf(res.body, invoice);
      return { "payment.recorded": res.body, "invoice.paid": invoice };
    },
  },
  "GraphQL createClient: the same client.created, in the REST shape": {
    act: async (_api, _ctx, server, key) => {
      const made = await graphql(
        server.url,
        key,
      )(`mutation { createClient(name: "Via GraphQL", email: "gql@example.com") { id name } }`);
      expect(made.errors).toBeUndefined();
      return { status: 200, headers: new Headers(), body: made.data.createClient };
    },
    emits: ["client.created"],
    objects: async (api, _ctx, res) => {
      const client = await get(api, `/clients/${res.body.id}`);
      expect(client).toMatchObject({ object: "client", name: "Via GraphQL", address: expect.any(Object) });
      return { "client.created": client };
    },
  },
  "GraphQL sendInvoice: the same invoice.sent as REST": {
    setup: (api) => newDoc(api),
    act: async (_api, { doc }, server, key) => {
      const sent = await graphql(server.url, key)(
        `mutation($id: ID!) { sendInvoice(id: $id) { id status } }`,
        { id: doc.id },
      );
      expect(sent.errors).toBeUndefined();
      expect(sent.data.sendInvoice.status).toBe("sent");
      return { status: 200, headers: new Headers(), body: sent.data.sendInvoice };
    },
    emits: ["invoice.sent"],
    objects: async (api, { doc }) => ({ "invoice.sent": await get(api, `/invoices/${doc.id}`) }),
  },
};

function kontorSignature(secret: string, request: Received): string {
  const timestamp = request.headers["kontor-timestamp"] as string;
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${request.body}`).digest("hex")}`;
}

/** Checks both signatures with the endpoint's secret and returns the verified envelope. */
function verify(request: Received, secret: string): any {
  const payload = new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  expect(request.headers["kontor-signature"]).toBe(kontorSignature(secret, request));
  expect(request.headers["kontor-timestamp"]).toBe(request.headers["webhook-timestamp"]);
  expect(Math.abs(Number(request.headers["kontor-timestamp"]) - Date.now() / 1000)).toBeLessThan(120);
  return payload;
}

e2e("webhooks: every catalog event, delivered by its action: each type and action", (server, stack) => {
  const { prisma, dispatched, settled, endpoint } = catalogHarness(server, stack);

  /** Runs `action` in a fresh workspace with a ["*"] endpoint (and one for `only`), and checks every delivery. */
  async function deliversExactly(action: Action, only?: EventType) {
    const tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    const ctx = (await action.setup?.(api)) ?? {};
    // The setup's events are fanned out before the endpoints exist: they go nowhere.
    await dispatched(tenant.workspaceId);
    const all = await endpoint(api, ["*"], "all");
    const one = only && (await endpoint(api, [only], only));
    const before = new Set(
      (
        await prisma().event.findMany({ where: { workspaceId: tenant.workspaceId }, select: { id: true } })
      ).map((e) => e.id),
    );

    const res = await action.act(api, ctx, server(), tenant.key);
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    const objects = await action.objects(api, ctx, res);
    expect(sorted(Object.keys(objects))).toEqual(sorted(action.emits));

    const events = (
      await prisma().event.findMany({ where: { workspaceId: tenant.workspaceId }, orderBy: { id: "asc" } })
    ).filter((e) => !before.has(e.id));
    expect(events.map((e) => e.type)).toEqual(action.emits);

    const { requests } = await settled(tenant.workspaceId, all.id, all.path);
    expect(sorted(requests.map((r) => r.json?.type))).toEqual(sorted(action.emits));
    const byType = new Map<string, any>();
    for (const request of requests) {
      const envelope = verify(request, all.secret);
      const type = envelope.type as EventType;
      const event = events.find((e) => e.type === type)!;
      expect(envelope).toEqual({
        id: event.id,
        object: "event",
        type,
        created_at: event.createdAt.toISOString(),
        workspace_id: tenant.workspaceId,
        data: { object: objects[type] },
      });
      // Same fields in the same order as the API's answer.
      expect(Object.keys(envelope.data.object)).toEqual(Object.keys(objects[type] as object));
      expect(request.headers).toMatchObject({
        "kontor-event": type,
        "webhook-id": event.id,
        "content-type": "application/json",
      });
      byType.set(type, envelope);
    }

    if (one) {
      const { requests: mine } = await settled(tenant.workspaceId, one.id, one.path);
      expect(mine.map((r) => r.json?.type)).toEqual([only]);
      const envelope = verify(mine[0]!, one.secret);
      // The same event as the ["*"] endpoint got, signed with this endpoint's own secret.
      expect(envelope).toEqual(byType.get(only!));
      expect(() =>
        new Webhook(all.secret).verify(mine[0]!.body, mine[0]!.headers as Record<string, string>),
      ).toThrow();
    }
  }

  it("has an action for every type of the catalog, and for nothing else", () => {
    expect(sorted(Object.keys(CAUSES))).toEqual(sorted(EVENT_TYPES));
    expect(new Set(EVENT_TYPES).size).toBe(18);
    for (const action of Object.values(OTHER_ACTIONS)) {
      for (const type of action.emits) expect(EVENT_TYPES).toContain(type);
    }
  });

  describe("each catalog type, to a ['*'] endpoint and to an endpoint subscribed to it alone", () => {
    it.each([...EVENT_TYPES])("%s", async (type) => {
      const action = CAUSES[type as EventType];
      expect(action, `no action causes ${type}: add one to CAUSES`).toBeDefined();
      expect(action.emits).toContain(type);
      await deliversExactly(action, type as EventType);
    });
  });

  describe("other actions deliver exactly what they emit", () => {
    it.each(Object.keys(OTHER_ACTIONS))("%s", async (name) => {
      await deliversExactly(OTHER_ACTIONS[name]!);
    });
  });
});
