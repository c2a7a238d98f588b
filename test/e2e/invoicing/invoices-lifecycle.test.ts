import { beforeAll, describe, expect, it } from "vitest";
import { ISO } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import {
  eventsOf,
  expectError,
  NEVER_INVOICE,
  newClient,
  newDocument,
  newEvent,
  post,
  SAMPLE_ITEMS,
  stored,
  today,
  year,
} from "../../support/invoicing.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";

e2e("invoices: updates, lifecycle and events", (server) => {
  const { tenant, api } = useWorkspace(server);
  let clientId: string;

  beforeAll(async () => {
    clientId = await newClient(api);
  });

  describe("PATCH", () => {
    it("edits a draft: items replace every line and totals are recomputed", async () => {
      const other = await newClient(api, { name: "Other client", currency: "EUR" });
      const doc = await newDocument(api, {
        client_id: clientId,
        tax_rate: 10,
        due_date: "2099-01-31",
        notes: "first",
        items: SAMPLE_ITEMS,
      });
      expect(doc).toMatchObject({ subtotal: 1200, tax_amount: 120, total: 1320 });

      const res = await api.patch(`/invoices/${doc.id}`, {
        items: [{ description: "Only line", quantity: 2.5, unit_price: 19.99 }],
        client_id: other,
        notes: null,
        due_date: null,
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: doc.id,
        invoice_number: doc.invoice_number,
        status: "draft",
        client_id: other,
        currency: "USD",
        notes: null,
        due_date: null,
        tax_rate: 10,
        items: [{ description: "Only line", quantity: 2.5, unit_price: 19.99, amount: 49.98 }],
        subtotal: 49.98,
        tax_amount: 5,
        total: 54.98,
        balance_due: 54.98,
      });
      expect((await api.get(`/invoices/${doc.id}`)).body).toEqual(res.body);

      const rate = await api.patch(`/invoices/${doc.id}`, {
        tax_rate: 0,
        currency: "EUR",
        issue_date: `${year()}-01-01`,
      });
      expect(rate.body).toMatchObject({
        tax_rate: 0,
        tax_amount: 0,
        subtotal: 49.98,
        total: 49.98,
        currency: "EUR",
        issue_date: `${year()}-01-01`,
      });
      expect(rate.body.items).toEqual(res.body.items);
    });

    it("edits a draft quote too", async () => {
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote" });
      const res = await api.patch(`/invoices/${quote.id}`, { notes: "Revised" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ document_type: "quote", notes: "Revised", status: "draft" });
    });

    it("refuses any document that is not a draft with 400 invalid_state, changing nothing", async () => {
      const sent = await newDocument(api, { client_id: clientId });
      await post(api, `/invoices/${sent.id}/send`);
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote" });
      await post(api, `/invoices/${quote.id}/accept`);
      const before = await stored(server(), tenant.workspaceId);
      for (const id of [sent.id, quote.id]) {
        const res = await api.patch(`/invoices/${id}`, {
          notes: "too late",
          items: [{ description: "x", quantity: 1, unit_price: 1 }],
        });
        expectError(res, 400, "invalid_state");
        expect(res.body.error.message).toMatch(/can be edited only while draft/);
      }
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("rejects bad input without changing the draft", async () => {
      const other = await server().tenant();
      const foreignClient = await newClient(rest(server().api, other.key));
      const doc = await newDocument(api, { client_id: clientId, issue_date: `${year()}-03-01` });
      const before = await stored(server(), tenant.workspaceId);
      for (const [body, param] of [
        [{ items: [] }, "items"],
        [{ items: null }, "items"],
        [{ items: [{ description: "x", quantity: -2, unit_price: 1 }] }, "items[0].quantity"],
        [{ items: [{ description: "x", quantity: 1, unit_price: -1 }] }, "items[0].unit_price"],
        [{ tax_rate: 250 }, "tax_rate"],
        [{ tax_rate: null }, "tax_rate"],
        [{ client_id: foreignClient }, "client_id"],
        [{ client_id: null }, "client_id"],
        [{ document_type: "quote" }, "document_type"],
        [{ issue_date: `${year() + 1}-01-01` }, "issue_date"],
        [{ due_date: `${year()}-02-01` }, "due_date"],
        [{ status: "sent" }, "status"],
      ] as const) {
        expectError(await api.patch(`/invoices/${doc.id}`, body), 400, "validation_failed", param);
      }
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });
  });

  describe("invoice lifecycle", () => {
    it("draft → sent → void, stamping each step; wrong actions are 400 invalid_state", async () => {
      const doc = await newDocument(api, { client_id: clientId });
      const sent = await api.post(`/invoices/${doc.id}/send`);
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({ status: "sent", sent_at: expect.stringMatching(ISO) });

      for (const [action, message] of [
        ["send", /is sent; it can be sent only while draft/],
        ["accept", /Only quotes can be accepted; INV-\d{4}-\d{4} is an invoice/],
        ["decline", /Only quotes can be declined/],
        ["convert", /Only quotes can be converted/],
      ] as const) {
        const res = await api.post(`/invoices/${doc.id}/${action}`);
        expectError(res, 400, "invalid_state");
        expect(res.body.error.message).toMatch(message);
      }

      const voided = await api.post(`/invoices/${doc.id}/void`);
      expect(voided.status).toBe(200);
      expect(voided.body).toMatchObject({
        status: "void",
        voided_at: expect.stringMatching(ISO),
        sent_at: sent.body.sent_at,
      });
      const again = await api.post(`/invoices/${doc.id}/void`);
      expectError(again, 400, "invalid_state");
      expect(again.body.error.message).toMatch(
        /is void; it can be voided only while draft, sent or partially_paid/,
      );
      expectError(await api.post(`/invoices/${doc.id}/send`), 400, "invalid_state");
    });

    it("voids a draft directly", async () => {
      const doc = await newDocument(api, { client_id: clientId });
      expect((await post(api, `/invoices/${doc.id}/void`)).status).toBe("void");
    });

    it("is overdue past its due date with a balance, unless void; a quote never is", async () => {
      const past = { client_id: clientId, issue_date: "2020-01-01", due_date: "2020-01-31" };
      const late = await newDocument(api, past);
      expect(late.overdue).toBe(true);
      expect((await newDocument(api, { client_id: clientId, due_date: today() })).overdue).toBe(false);
      expect((await newDocument(api, { ...past, document_type: "quote" })).overdue).toBe(false);
      expect((await post(api, `/invoices/${late.id}/send`)).overdue).toBe(true);
      expect((await post(api, `/invoices/${late.id}/void`)).overdue).toBe(false);
      const free = await newDocument(api, {
        ...past,
        items: [{ description: "Gift", quantity: 1, unit_price: 0 }],
      });
      expect(free).toMatchObject({ total: 0, overdue: false });
    });
  });

  describe("quote lifecycle", () => {
    it("draft → sent → accepted → converted into a new draft invoice, linked both ways (201)", async () => {
      const quote = await newDocument(api, {
        client_id: clientId,
        document_type: "quote",
        tax_rate: 7.5,
        notes: "Thanks",
        items: SAMPLE_ITEMS,
        due_date: "2099-01-01",
      });
      expect((await post(api, `/invoices/${quote.id}/send`)).status).toBe("sent");
      const accepted = await api.post(`/invoices/${quote.id}/accept`);
      expect(accepted.status).toBe(200);
      expect(accepted.body).toMatchObject({ status: "accepted", accepted_at: expect.stringMatching(ISO) });
      expectError(await api.post(`/invoices/${quote.id}/decline`), 400, "invalid_state");
      expectError(await api.post(`/invoices/${quote.id}/void`), 400, "invalid_state");
      expectError(
        await api.post(`/invoices/${quote.id}/payments`, { amount: 1, payment_method: "cash" }),
        400,
        "invalid_state",
      );

      const converted = await api.post(`/invoices/${quote.id}/convert`);
      expect(converted.status).toBe(201);
      expect(converted.body).toMatchObject({
        object: "invoice",
        document_type: "invoice",
        invoice_number: expect.stringMatching(new RegExp(`^INV-${year()}-\\d{4}$`)),
        status: "draft",
        client_id: clientId,
        issue_date: today(),
        due_date: null,
        tax_rate: 7.5,
        currency: "USD",
        notes: "Thanks",
        items: quote.items,
        subtotal: 1200,
        tax_amount: 90,
        total: 1290,
        balance_due: 1290,
        quote_id: quote.id,
        converted_invoice_id: null,
      });
      expect(converted.body.id).not.toBe(quote.id);
      const after = (await api.get(`/invoices/${quote.id}`)).body;
      expect(after).toMatchObject({
        status: "converted",
        converted_invoice_id: converted.body.id,
        quote_id: null,
        invoice_number: quote.invoice_number,
      });

      const again = await api.post(`/invoices/${quote.id}/convert`);
      expectError(again, 400, "invalid_state");
      expect(again.body.error.message).toMatch(/is converted; it can be converted only while accepted/);
      expectError(await api.post(`/invoices/${quote.id}/accept`), 400, "invalid_state");
    });

    it("declines from draft or sent; a declined or unaccepted quote cannot be converted", async () => {
      const draft = await newDocument(api, { client_id: clientId, document_type: "quote" });
      const sent = await newDocument(api, { client_id: clientId, document_type: "quote" });
      await post(api, `/invoices/${sent.id}/send`);
      expectError(await api.post(`/invoices/${sent.id}/convert`), 400, "invalid_state");
      for (const id of [draft.id, sent.id]) {
        const res = await api.post(`/invoices/${id}/decline`);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ status: "declined", declined_at: expect.stringMatching(ISO) });
      }
      const before = await stored(server(), tenant.workspaceId);
      for (const action of ["convert", "accept", "decline", "send"]) {
        expectError(await api.post(`/invoices/${draft.id}/${action}`), 400, "invalid_state");
      }
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("accepts straight from draft, and converts over GraphQL", async () => {
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote" });
      const gql = graphql(server().url, tenant.key);
      const accepted = await gql(`mutation ($id: ID!) { acceptQuote(id: $id) { status } }`, { id: quote.id });
      expect(accepted.data.acceptQuote).toEqual({ status: "accepted" });
      const converted = await gql(
        `mutation ($id: ID!) { convertQuote(id: $id) { id document_type status quote_id } }`,
        { id: quote.id },
      );
      expect(converted.errors).toBeUndefined();
      expect(converted.data.convertQuote).toMatchObject({
        document_type: "invoice",
        status: "draft",
        quote_id: quote.id,
      });
      const read = await gql(`query ($id: ID!) { invoice(id: $id) { status converted_invoice_id } }`, {
        id: quote.id,
      });
      expect(read.data.invoice).toEqual({
        status: "converted",
        converted_invoice_id: converted.data.convertQuote.id,
      });
    });
  });

  describe("events", () => {
    it("writes each event in the change's transaction, with the document as GET returns it then", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const seen = async () => (await eventsOf(server(), own.workspaceId)).map((event) => event.id);
      const expectEvent = async (type: string, before: string[], id: string) => {
        const event = await newEvent(server(), own.workspaceId, type, before);
        expect(event.data).toEqual((await client.get(`/invoices/${id}`)).body);
      };

      let before = await seen();
      const invoice = await newDocument(client, { client_id: ownClient, items: SAMPLE_ITEMS, tax_rate: 7.5 });
      await expectEvent("invoice.created", before, invoice.id);

      before = await seen();
      await post(client, `/invoices/${invoice.id}/send`);
      await expectEvent("invoice.sent", before, invoice.id);

      before = await seen();
      await post(client, `/invoices/${invoice.id}/void`);
      await expectEvent("invoice.voided", before, invoice.id);

      before = await seen();
      const quote = await newDocument(client, { client_id: ownClient, document_type: "quote" });
      await expectEvent("quote.created", before, quote.id);

      before = await seen();
      await post(client, `/invoices/${quote.id}/send`);
      await expectEvent("quote.sent", before, quote.id);

      before = await seen();
      await post(client, `/invoices/${quote.id}/accept`);
      await expectEvent("quote.accepted", before, quote.id);

      before = await seen();
      const converted = await post(client, `/invoices/${quote.id}/convert`);
      await expectEvent("invoice.created", before, converted.id);
      expect((await eventsOf(server(), own.workspaceId)).length).toBe(before.length + 1);

      const declinable = await newDocument(client, { client_id: ownClient, document_type: "quote" });
      before = await seen();
      await post(client, `/invoices/${declinable.id}/decline`);
      await expectEvent("quote.declined", before, declinable.id);

      // An edit has no event of its own.
      const draft = await newDocument(client, { client_id: ownClient });
      before = await seen();
      expect((await client.patch(`/invoices/${draft.id}`, { notes: "x" })).status).toBe(200);
      expect(await seen()).toEqual(before);
    });

    it("writes no event for a failed request", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const quote = await newDocument(client, { client_id: ownClient, document_type: "quote" });
      const before = await stored(server(), own.workspaceId);
      expectError(
        await client.post("/invoices", { client_id: ownClient, items: [] }),
        400,
        "validation_failed",
      );
      expectError(
        await client.post("/invoices", { client_id: "cli_01J00000000000000000000000", items: SAMPLE_ITEMS }),
        400,
        "validation_failed",
      );
      expectError(await client.post(`/invoices/${quote.id}/void`), 400, "invalid_state");
      expectError(await client.post(`/invoices/${quote.id}/convert`), 400, "invalid_state");
      expectError(await client.post(`/invoices/${NEVER_INVOICE}/send`), 404, "not_found");
      expect(await stored(server(), own.workspaceId)).toEqual(before);
    });
  });

  describe("clients with invoices", () => {
    it("cannot be deleted (400 invalid_state); a client without any can", async () => {
      const billed = await newClient(api, { name: "Billed" });
      const quoted = await newClient(api, { name: "Quoted" });
      const idle = await newClient(api, { name: "Idle" });
      await newDocument(api, { client_id: billed });
      await newDocument(api, { client_id: quoted, document_type: "quote" });
      for (const id of [billed, quoted]) {
        const res = await api.delete(`/clients/${id}`);
        expectError(res, 400, "invalid_state");
        expect(res.body.error.message).toContain("has invoices or quotes");
        expect((await api.get(`/clients/${id}`)).status).toBe(200);
      }
      expect((await api.delete(`/clients/${idle}`)).status).toBe(200);
    });
  });
});
