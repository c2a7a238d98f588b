import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import {
  type Api,
  eventsOf,
  expectError,
  ISO,
  newClient,
  newDocument,
  newEvent,
  post,
  stored,
} from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

e2e("payments", (server) => {
  let tenant: Tenant;
  let api: Api;
  let clientId: string;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    clientId = await newClient(api);
  });

  /** A sent invoice of `total` (no tax). */
  async function invoiceOf(total: number, extra: Record<string, unknown> = {}) {
    const doc = await newDocument(api, {
      client_id: clientId,
      items: [{ description: "Work", quantity: 1, unit_price: total }],
      ...extra,
    });
    return post(api, `/invoices/${doc.id}/send`);
  }

  describe("record", () => {
    it("records a partial then a final payment: 201, the payment with the updated invoice, then paid", async () => {
      const invoice = await invoiceOf(1290);
      const first = await api.post(`/invoices/${invoice.id}/payments`, {
        amount: 500,
        payment_method: "bank_transfer",
        reference: "  TRX-1  ",
        payer_email: "AP@Client.example",
        paid_at: "2026-11-02T10:00:00+01:00",
        notes: "First instalment",
      });
      expect(first.status).toBe(201);
      const { invoice: after1, ...payment } = first.body;
      expect(payment).toEqual({
        object: "payment",
        id: expect.stringMatching(/^pay_[0-9A-HJKMNP-TV-Z]{26}$/),
        invoice_id: invoice.id,
        amount: 500,
        currency: "USD",
        payment_method: "bank_transfer",
        reference: "TRX-1",
        payer_email: "ap@client.example",
        paid_at: "2026-11-02T09:00:00.000Z",
        notes: "First instalment",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(after1).toMatchObject({
        id: invoice.id,
        status: "partially_paid",
        total: 1290,
        amount_paid: 500,
        balance_due: 790,
        paid_at: null,
      });

      const second = await api.post(`/invoices/${invoice.id}/payments`, {
        amount: 790,
        payment_method: "card",
      });
      expect(second.status).toBe(201);
      expect(second.body).toMatchObject({
        amount: 790,
        payment_method: "card",
        reference: null,
        payer_email: null,
        notes: null,
      });
      expect(Date.now() - Date.parse(second.body.paid_at)).toBeLessThan(60_000);
      expect(second.body.invoice).toMatchObject({
        status: "paid",
        amount_paid: 1290,
        balance_due: 0,
        overdue: false,
      });
      // Paid in full when the last of its payments was made.
      expect(second.body.invoice.paid_at).toBe(second.body.paid_at);

      const read = (await api.get(`/invoices/${invoice.id}`)).body;
      expect(read).toMatchObject({ status: "paid", amount_paid: 1290, balance_due: 0 });
      const { invoice: _i1, ...p1 } = first.body;
      const { invoice: _i2, ...p2 } = second.body;
      expect(read.payments).toEqual([p1, p2]);
      const { payments: _p, ...withoutHistory } = read;
      expect(second.body.invoice).toEqual(withoutHistory);
    });

    it("takes payments on a draft, and adds exactly (0.1 + 0.2 pays 0.30)", async () => {
      const draft = await newDocument(api, {
        client_id: clientId,
        items: [{ description: "Tiny", quantity: 3, unit_price: 0.1 }],
      });
      const first = await post(api, `/invoices/${draft.id}/payments`, {
        amount: 0.1,
        payment_method: "cash",
      });
      expect(first.invoice).toMatchObject({
        status: "partially_paid",
        amount_paid: 0.1,
        balance_due: 0.2,
        sent_at: null,
      });
      const second = await post(api, `/invoices/${draft.id}/payments`, {
        amount: 0.2,
        payment_method: "mobile_money",
      });
      expect(second.invoice).toMatchObject({ status: "paid", amount_paid: 0.3, balance_due: 0 });
    });

    it("settles an overdue invoice: it is no longer overdue", async () => {
      const late = await invoiceOf(50, { issue_date: "2020-01-01", due_date: "2020-02-01" });
      expect(late.overdue).toBe(true);
      const partly = await post(api, `/invoices/${late.id}/payments`, {
        amount: 20,
        payment_method: "check",
      });
      expect(partly.invoice.overdue).toBe(true);
      const paid = await post(api, `/invoices/${late.id}/payments`, {
        amount: 30,
        payment_method: "other",
        paid_at: "2020-03-01T00:00:00Z",
      });
      expect(paid.invoice).toMatchObject({ status: "paid", overdue: false });
      // A back-dated final payment: paid in full on the latest payment date.
      expect(paid.invoice.paid_at).toBe(partly.paid_at);
    });

    it("accepts every payment_method", async () => {
      const invoice = await invoiceOf(600);
      for (const method of ["bank_transfer", "card", "cash", "check", "mobile_money", "other"]) {
        expect(
          (await post(api, `/invoices/${invoice.id}/payments`, { amount: 100, payment_method: method }))
            .payment_method,
        ).toBe(method);
      }
      expect((await api.get(`/invoices/${invoice.id}`)).body).toMatchObject({
        status: "paid",
        amount_paid: 600,
      });
    });

    it("works over GraphQL", async () => {
      const invoice = await invoiceOf(100);
      const gql = graphql(server().url, tenant.key);
      const res = await gql(
        `mutation ($id: ID!) { recordPayment(invoice_id: $id, amount: 40, payment_method: card, reference: "R-9") {
          object amount reference invoice { status balance_due payments { amount reference } } } }`,
        { id: invoice.id },
      );
      expect(res.errors).toBeUndefined();
      expect(res.data.recordPayment).toEqual({
        object: "payment",
        amount: 40,
        reference: "R-9",
        invoice: { status: "partially_paid", balance_due: 60, payments: [{ amount: 40, reference: "R-9" }] },
      });
      const over = await gql(
        `mutation ($id: ID!) { recordPayment(invoice_id: $id, amount: 60.01, payment_method: card) { id } }`,
        { id: invoice.id },
      );
      expect(over.data).toBeNull();
      expect(over.errors?.[0]?.extensions).toMatchObject({ code: "amount_exceeds_balance", param: "amount" });
    });
  });

  describe("refuses", () => {
    let invoice: { id: string };

    beforeAll(async () => {
      invoice = await invoiceOf(100);
      await post(api, `/invoices/${invoice.id}/payments`, { amount: 40, payment_method: "cash" });
    });

    it.each([
      ["a zero amount", { amount: 0, payment_method: "cash" }, "amount"],
      ["a negative amount", { amount: -10, payment_method: "cash" }, "amount"],
      ["an amount as a string", { amount: "10", payment_method: "cash" }, "amount"],
      ["an amount with 3 decimals", { amount: 10.005, payment_method: "cash" }, "amount"],
      ["no amount", { payment_method: "cash" }, "amount"],
      ["no payment_method", { amount: 10 }, "payment_method"],
      ["an unknown payment_method", { amount: 10, payment_method: "bitcoin" }, "payment_method"],
      [
        "a bad payer_email",
        { amount: 10, payment_method: "cash", payer_email: "not-an-email" },
        "payer_email",
      ],
      [
        "a paid_at without time zone",
        { amount: 10, payment_method: "cash", paid_at: "2026-05-01T10:00:00" },
        "paid_at",
      ],
      ["paid_at null", { amount: 10, payment_method: "cash", paid_at: null }, "paid_at"],
      ["an unknown field", { amount: 10, payment_method: "cash", currency: "EUR" }, "currency"],
      [
        "an invoice_id in the body",
        { amount: 10, payment_method: "cash", invoice_id: "inv_01J00000000000000000000000" },
        "invoice_id",
      ],
    ])("%s → 400 validation_failed, nothing written", async (_label, body, param) => {
      const before = await stored(server(), tenant.workspaceId);
      expectError(await api.post(`/invoices/${invoice.id}/payments`, body), 400, "validation_failed", param);
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("an amount over the balance → 400 amount_exceeds_balance, nothing written", async () => {
      const before = await stored(server(), tenant.workspaceId);
      const res = await api.post(`/invoices/${invoice.id}/payments`, {
        amount: 60.01,
        payment_method: "cash",
      });
      expectError(res, 400, "amount_exceeds_balance", "amount");
      expect(res.body.error.type).toBe("invalid_request_error");
      expect(res.body.error.message).toMatch(
        /amount 60\.01 exceeds the balance due of 60\.00 on INV-\d{4}-\d{4}/,
      );
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("a payment on a quote, a void or a paid invoice → 400 invalid_state, nothing written", async () => {
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote" });
      const accepted = await newDocument(api, { client_id: clientId, document_type: "quote" });
      await post(api, `/invoices/${accepted.id}/accept`);
      const voided = await invoiceOf(100);
      await post(api, `/invoices/${voided.id}/void`);
      const paid = await invoiceOf(100);
      await post(api, `/invoices/${paid.id}/payments`, { amount: 100, payment_method: "cash" });

      const before = await stored(server(), tenant.workspaceId);
      for (const [id, message] of [
        [quote.id, /Only invoices can be paid; QUO-\d{4}-\d{4} is a quote/],
        [accepted.id, /Only invoices can be paid/],
        [voided.id, /is void; it can be paid only while draft, sent or partially_paid/],
        [paid.id, /is paid; it can be paid only while draft, sent or partially_paid/],
      ] as const) {
        const res = await api.post(`/invoices/${id}/payments`, { amount: 1, payment_method: "cash" });
        expectError(res, 400, "invalid_state");
        expect(res.body.error.message).toMatch(message);
      }
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("a paid invoice cannot be voided", async () => {
      const paid = await invoiceOf(10);
      await post(api, `/invoices/${paid.id}/payments`, { amount: 10, payment_method: "cash" });
      const res = await api.post(`/invoices/${paid.id}/void`);
      expectError(res, 400, "invalid_state");
      expect((await api.get(`/invoices/${paid.id}`)).body.status).toBe("paid");
    });

    it("a partially paid invoice can still be voided, and then takes no payment", async () => {
      const partly = await invoiceOf(10);
      await post(api, `/invoices/${partly.id}/payments`, { amount: 4, payment_method: "cash" });
      expect((await post(api, `/invoices/${partly.id}/void`)).status).toBe("void");
      expectError(
        await api.post(`/invoices/${partly.id}/payments`, { amount: 1, payment_method: "cash" }),
        400,
        "invalid_state",
      );
    });
  });

  describe("concurrency", () => {
    it("concurrent payments beyond the balance: exactly the affordable ones succeed", async () => {
      const invoice = await invoiceOf(100);
      const results = await Promise.all(
        Array.from({ length: 10 }, () =>
          api.post(`/invoices/${invoice.id}/payments`, { amount: 30, payment_method: "card" }),
        ),
      );
      const statuses = results.map((res) => res.status).sort();
      expect(statuses).toEqual([...Array(3).fill(201), ...Array(7).fill(400)]);
      for (const res of results.filter((r) => r.status === 400))
        expectError(res, 400, "amount_exceeds_balance", "amount");
      const read = (await api.get(`/invoices/${invoice.id}`)).body;
      expect(read).toMatchObject({ status: "partially_paid", amount_paid: 90, balance_due: 10 });
      expect(read.payments).toHaveLength(3);
      expect(read.payments.map((p: { id: string }) => p.id).sort()).toEqual(
        results
          .filter((r) => r.status === 201)
          .map((r) => r.body.id)
          .sort(),
      );
    });

    it("concurrent payments that fill the balance exactly: the invoice is paid once, never overpaid", async () => {
      const invoice = await invoiceOf(100);
      const before = (await eventsOf(server(), tenant.workspaceId, "invoice.paid")).map((event) => event.id);
      const results = await Promise.all(
        Array.from({ length: 8 }, () =>
          api.post(`/invoices/${invoice.id}/payments`, { amount: 25, payment_method: "cash" }),
        ),
      );
      const ok = results.filter((res) => res.status === 201);
      expect(ok).toHaveLength(4);
      // Once paid, the invoice takes no payment at all.
      for (const res of results.filter((r) => r.status !== 201)) expectError(res, 400, "invalid_state");
      const read = (await api.get(`/invoices/${invoice.id}`)).body;
      expect(read).toMatchObject({ status: "paid", amount_paid: 100, balance_due: 0 });
      expect(read.payments).toHaveLength(4);
      const payments = await server().running.db.prisma.payment.findMany({
        where: { invoiceId: invoice.id },
      });
      expect(payments.reduce((total, p) => total + Number(p.amount), 0)).toBe(100);
      await newEvent(server(), tenant.workspaceId, "invoice.paid", before);
    });
  });

  describe("events", () => {
    it("payment.recorded carries the payment as answered; invoice.paid the invoice as GET returns it", async () => {
      const invoice = await invoiceOf(80);
      let recorded = (await eventsOf(server(), tenant.workspaceId, "payment.recorded")).map((e) => e.id);
      const paidBefore = (await eventsOf(server(), tenant.workspaceId, "invoice.paid")).map((e) => e.id);

      const partial = await post(api, `/invoices/${invoice.id}/payments`, {
        amount: 30,
        payment_method: "card",
        reference: "A",
      });
      expect((await newEvent(server(), tenant.workspaceId, "payment.recorded", recorded)).data).toEqual(
        partial,
      );
      expect((await eventsOf(server(), tenant.workspaceId, "invoice.paid")).map((e) => e.id)).toEqual(
        paidBefore,
      );

      recorded = (await eventsOf(server(), tenant.workspaceId, "payment.recorded")).map((e) => e.id);
      const final = await post(api, `/invoices/${invoice.id}/payments`, {
        amount: 50,
        payment_method: "card",
        reference: "B",
      });
      expect((await newEvent(server(), tenant.workspaceId, "payment.recorded", recorded)).data).toEqual(
        final,
      );
      const paid = await newEvent(server(), tenant.workspaceId, "invoice.paid", paidBefore);
      expect(paid.data).toEqual((await api.get(`/invoices/${invoice.id}`)).body);
      expect(paid.data).toMatchObject({ status: "paid", payments: [{ reference: "A" }, { reference: "B" }] });
      // payment.recorded comes before invoice.paid
      const order = (await eventsOf(server(), tenant.workspaceId)).slice(-2).map((e) => e.type);
      expect(order).toEqual(["payment.recorded", "invoice.paid"]);
    });

    it("a failed payment writes no event", async () => {
      const invoice = await invoiceOf(10);
      const before = await stored(server(), tenant.workspaceId);
      expectError(
        await api.post(`/invoices/${invoice.id}/payments`, { amount: 11, payment_method: "card" }),
        400,
        "amount_exceeds_balance",
      );
      expectError(
        await api.post(`/invoices/${invoice.id}/payments`, { amount: 0, payment_method: "card" }),
        400,
        "validation_failed",
      );
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });
  });

  describe("scopes and tenancy", () => {
    it("payments.write alone records a payment and sees the invoice it paid, but cannot read invoices", async () => {
      const invoice = await invoiceOf(100);
      const payer = rest(server().api, (await server().key(tenant.workspaceId, ["payments.write"])).key);
      const res = await payer.post(`/invoices/${invoice.id}/payments`, {
        amount: 10,
        payment_method: "cash",
      });
      expect(res.status).toBe(201);
      expect(res.body.invoice).toMatchObject({ id: invoice.id, amount_paid: 10, status: "partially_paid" });
      expectError(await payer.get(`/invoices/${invoice.id}`), 403, "insufficient_scope");
      expectError(await payer.post(`/invoices/${invoice.id}/void`), 403, "insufficient_scope");
    });

    it("invoices.write without payments.write cannot record one", async () => {
      const invoice = await invoiceOf(100);
      const writer = rest(
        server().api,
        (await server().key(tenant.workspaceId, ["invoices.read", "invoices.write"])).key,
      );
      const before = await stored(server(), tenant.workspaceId);
      const res = await writer.post(`/invoices/${invoice.id}/payments`, {
        amount: 10,
        payment_method: "cash",
      });
      expectError(res, 403, "insufficient_scope");
      expect(res.body.error.required_scope).toBe("payments.write");
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("another workspace's invoice is 404 and keeps its balance", async () => {
      const invoice = await invoiceOf(100);
      const other = await server().tenant();
      const res = await rest(server().api, other.key).post(`/invoices/${invoice.id}/payments`, {
        amount: 10,
        payment_method: "cash",
      });
      expectError(res, 404, "not_found");
      expect((await api.get(`/invoices/${invoice.id}`)).body).toMatchObject({ amount_paid: 0, payments: [] });
    });
  });
});
