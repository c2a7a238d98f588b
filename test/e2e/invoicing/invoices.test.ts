import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import {
  eventsOf,
  expectError,
  ISO,
  NEVER_INVOICE,
  newClient,
  newDocument,
  newEvent,
  post,
  SAMPLE_ITEMS,
  stored,
  today,
  year,
  type Api,
} from "../../support/invoicing.ts";
import { expectHidden, ids } from "../../support/assertions.ts";

e2e("invoices", (server) => {
  let tenant: Tenant;
  let api: Api;
  let clientId: string;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    clientId = await newClient(api);
  });

  describe("create", () => {
    it("creates the api-spec sample: 1200 at 7.5 % tax is a draft of 1290, 201, numbered INV-<year>-0001", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const res = await client.post("/invoices", { client_id: ownClient, due_date: "2099-12-31", tax_rate: 7.5, items: SAMPLE_ITEMS });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        object: "invoice",
        id: expect.stringMatching(/^inv_[0-9A-HJKMNP-TV-Z]{26}$/),
        document_type: "invoice",
        invoice_number: `INV-${year()}-0001`,
        status: "draft",
        client_id: ownClient,
        issue_date: today(),
        due_date: "2099-12-31",
        tax_rate: 7.5,
        currency: "USD",
        notes: null,
        items: [
          { description: "Website design", quantity: 10, unit_price: 100, amount: 1000 },
          { description: "Hosting, one year", quantity: 2, unit_price: 100, amount: 200 },
        ],
        subtotal: 1200,
        tax_amount: 90,
        total: 1290,
        amount_paid: 0,
        balance_due: 1290,
        overdue: false,
        payments: [],
        quote_id: null,
        converted_invoice_id: null,
        sent_at: null,
        paid_at: null,
        voided_at: null,
        accepted_at: null,
        declined_at: null,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect((await client.get(`/invoices/${res.body.id}`)).body).toEqual(res.body);
    });

    it("computes money exactly, rounding half-up to the cent", async () => {
      const doc = await newDocument(api, {
        client_id: clientId,
        tax_rate: 5,
        items: [
          { description: "Binary-float trap", quantity: 3, unit_price: 0.1 },
          { description: "Half a cent up", quantity: 0.5, unit_price: 0.05 },
          { description: "Three decimals", quantity: 1.005, unit_price: 1 },
        ],
      });
      expect(doc.items.map((item: { amount: number }) => item.amount)).toEqual([0.3, 0.03, 1.01]);
      // 1.34 × 5 % = 0.067 → 0.07
      expect(doc).toMatchObject({ subtotal: 1.34, tax_amount: 0.07, total: 1.41, balance_due: 1.41 });

      const halfCent = await newDocument(api, { client_id: clientId, tax_rate: 5, items: [{ description: "x", quantity: 3, unit_price: 0.1 }] });
      // 0.30 × 5 % = 0.015 exactly: half-up gives 0.02 (binary floating point gives 0.01)
      expect(halfCent).toMatchObject({ subtotal: 0.3, tax_amount: 0.02, total: 0.32 });

      const precise = await newDocument(api, {
        client_id: clientId,
        tax_rate: 8.875,
        items: [{ description: "Consulting", quantity: 12.5, unit_price: 149.99 }],
      });
      // 12.5 × 149.99 = 1874.875 → 1874.88; × 8.875 % = 166.3956 → 166.40
      expect(precise).toMatchObject({ subtotal: 1874.88, tax_rate: 8.875, tax_amount: 166.4, total: 2041.28 });
    });

    it("creates a quote with document_type quote, numbered QUO-<year>-<seq> on its own sequence", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const invoice = await newDocument(client, { client_id: ownClient });
      const quote = await newDocument(client, { client_id: ownClient, document_type: "quote", notes: "Valid 30 days" });
      expect(invoice.invoice_number).toBe(`INV-${year()}-0001`);
      expect(quote).toMatchObject({
        object: "invoice",
        document_type: "quote",
        invoice_number: `QUO-${year()}-0001`,
        status: "draft",
        notes: "Valid 30 days",
        payments: [],
        overdue: false,
      });
      expect((await newDocument(client, { client_id: ownClient, document_type: "quote" })).invoice_number).toBe(`QUO-${year()}-0002`);
    });

    it("numbers by the year of issue_date", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      expect((await newDocument(client, { client_id: ownClient, issue_date: "2025-03-01" })).invoice_number).toBe("INV-2025-0001");
      expect((await newDocument(client, { client_id: ownClient, issue_date: "2025-12-31" })).invoice_number).toBe("INV-2025-0002");
      expect((await newDocument(client, { client_id: ownClient, issue_date: "2031-01-01" })).invoice_number).toBe("INV-2031-0001");
      expect((await newDocument(client, { client_id: ownClient })).invoice_number).toBe(`INV-${year()}-0001`);
    });

    it("takes the client's currency unless one is given", async () => {
      const euroClient = await newClient(api, { name: "Euro GmbH", currency: "EUR" });
      expect((await newDocument(api, { client_id: euroClient })).currency).toBe("EUR");
      expect((await newDocument(api, { client_id: euroClient, currency: "CHF" })).currency).toBe("CHF");
    });

    describe("rejects bad input with its 4xx code and writes nothing", () => {
      let other: Tenant;
      let otherClient: string;

      beforeAll(async () => {
        other = await server().tenant();
        otherClient = await newClient(rest(server().api, other.key), { name: "Other Workspace Client" });
      });

      const item = { description: "Work", quantity: 1, unit_price: 100 };
      const cases: [string, (client: string, foreign: string) => Record<string, unknown>, string][] = [
        ["empty items", (c) => ({ client_id: c, items: [] }), "items"],
        ["no items", (c) => ({ client_id: c }), "items"],
        ["items null", (c) => ({ client_id: c, items: null }), "items"],
        ["negative quantity", (c) => ({ client_id: c, items: [{ ...item, quantity: -1 }] }), "items[0].quantity"],
        ["zero quantity", (c) => ({ client_id: c, items: [item, { ...item, quantity: 0 }] }), "items[1].quantity"],
        ["quantity as a string", (c) => ({ client_id: c, items: [{ ...item, quantity: "2" }] }), "items[0].quantity"],
        ["non-numeric quantity", (c) => ({ client_id: c, items: [{ ...item, quantity: "two" }] }), "items[0].quantity"],
        ["quantity with 4 decimals", (c) => ({ client_id: c, items: [{ ...item, quantity: 1.0001 }] }), "items[0].quantity"],
        ["negative unit_price", (c) => ({ client_id: c, items: [{ ...item, unit_price: -5 }] }), "items[0].unit_price"],
        ["non-numeric unit_price", (c) => ({ client_id: c, items: [{ ...item, unit_price: "ten" }] }), "items[0].unit_price"],
        ["unit_price with 3 decimals", (c) => ({ client_id: c, items: [{ ...item, unit_price: 1.005 }] }), "items[0].unit_price"],
        ["empty description", (c) => ({ client_id: c, items: [{ ...item, description: "  " }] }), "items[0].description"],
        ["no description", (c) => ({ client_id: c, items: [{ quantity: 1, unit_price: 1 }] }), "items[0].description"],
        ["no unit_price", (c) => ({ client_id: c, items: [{ description: "x", quantity: 1 }] }), "items[0].unit_price"],
        ["a null line", (c) => ({ client_id: c, items: [null] }), "items[0]"],
        ["unknown item field", (c) => ({ client_id: c, items: [{ ...item, sku: "X" }] }), "items[0].sku"],
        ["items as one object instead of an array", (c) => ({ client_id: c, items: item }), "items"],
        ["a total too large to store", (c) => ({ client_id: c, items: [item, { ...item, quantity: 99_999_999_999, unit_price: 99_999 }] }), "items"],
        ["tax_rate over 100", (c) => ({ client_id: c, items: [item], tax_rate: 100.5 }), "tax_rate"],
        ["negative tax_rate", (c) => ({ client_id: c, items: [item], tax_rate: -1 }), "tax_rate"],
        ["tax_rate as a string", (c) => ({ client_id: c, items: [item], tax_rate: "7.5" }), "tax_rate"],
        ["unknown document_type", (c) => ({ client_id: c, items: [item], document_type: "receipt" }), "document_type"],
        ["no client_id", () => ({ items: [item] }), "client_id"],
        ["unknown client_id", () => ({ client_id: "cli_01J00000000000000000000000", items: [item] }), "client_id"],
        ["client of another workspace", (_c, foreign) => ({ client_id: foreign, items: [item] }), "client_id"],
        ["impossible due_date", (c) => ({ client_id: c, items: [item], due_date: "2026-02-30" }), "due_date"],
        ["due_date before issue_date", (c) => ({ client_id: c, items: [item], issue_date: "2026-05-02", due_date: "2026-05-01" }), "due_date"],
        ["lower-case currency", (c) => ({ client_id: c, items: [item], currency: "usd" }), "currency"],
        ["a status", (c) => ({ client_id: c, items: [item], status: "paid" }), "status"],
        ["an invoice_number", (c) => ({ client_id: c, items: [item], invoice_number: "INV-2026-9999" }), "invoice_number"],
      ];

      it.each(cases)("%s → 400 validation_failed", async (_label, body, param) => {
        const before = await stored(server(), tenant.workspaceId);
        const res = await api.post("/invoices", body(clientId, otherClient));
        expectError(res, 400, "validation_failed", param);
        expect(await stored(server(), tenant.workspaceId)).toEqual(before);
      });

      it("and over GraphQL", async () => {
        const gql = graphql(server().url, tenant.key);
        const before = await stored(server(), tenant.workspaceId);
        const foreign = await gql(
          `mutation ($client: String!) { createInvoice(client_id: $client, items: [{ description: "x", quantity: 1, unit_price: 1 }]) { id } }`,
          { client: otherClient },
        );
        expect(foreign.data).toBeNull();
        expect(foreign.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "client_id" });
        const empty = await gql(`mutation ($client: String!) { createInvoice(client_id: $client, items: []) { id } }`, { client: clientId });
        expect(empty.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "items" });
        expect(await stored(server(), tenant.workspaceId)).toEqual(before);
      });
    });
  });

  describe("numbering", () => {
    it("gives 50 concurrent creations the numbers 0001…0050, no gap, no duplicate", { timeout: 120_000 }, async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          client.post("/invoices", { client_id: ownClient, issue_date: "2030-06-15", items: [{ description: `Line ${i}`, quantity: 1, unit_price: i }] }),
        ),
      );
      expect(responses.map((res) => res.status)).toEqual(Array(50).fill(201));
      const numbers = responses.map((res) => res.body.invoice_number as string).sort();
      expect(numbers).toEqual(Array.from({ length: 50 }, (_, i) => `INV-2030-${String(i + 1).padStart(4, "0")}`));
      const sequences = await server().running.db.prisma.documentSequence.findMany({ where: { workspaceId: own.workspaceId } });
      expect(sequences).toEqual([{ workspaceId: own.workspaceId, documentType: "invoice", year: 2030, lastValue: 50 }]);
      // Invoice pages hold at most 30 (the response budget): two pages list all 50.
      const first = (await client.get("/invoices?limit=30")).body;
      const second = (await client.get(`/invoices?limit=30&cursor=${first.next_cursor}`)).body;
      expect(second.has_more).toBe(false);
      const listed = [...first.data, ...second.data].map((doc: { invoice_number: string }) => doc.invoice_number);
      expect(listed.sort()).toEqual(numbers);
    });

    it("gives the number of a creation that fails back: the next one has no gap", async () => {
      const own = await server().tenant();
      const other = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const foreignClient = await newClient(rest(server().api, other.key));
      expect((await newDocument(client, { client_id: ownClient })).invoice_number).toBe(`INV-${year()}-0001`);
      // The number is taken before the client is checked, so this rolls a taken number back.
      const failed = await client.post("/invoices", { client_id: foreignClient, items: SAMPLE_ITEMS });
      expectError(failed, 400, "validation_failed", "client_id");
      expect((await newDocument(client, { client_id: ownClient })).invoice_number).toBe(`INV-${year()}-0002`);
    });

    it("numbers each workspace separately", async () => {
      const first = await server().tenant();
      const second = await server().tenant();
      for (const own of [first, second]) {
        const client = rest(server().api, own.key);
        expect((await newDocument(client, { client_id: await newClient(client), issue_date: "2029-01-01" })).invoice_number).toBe("INV-2029-0001");
      }
    });
  });

  describe("retrieve and list", () => {
    let own: Tenant;
    let client: Api;
    let clientA: string;
    let clientB: string;
    const docs = { draft: "", quote: "", sent: "", sentQuote: "" };

    beforeAll(async () => {
      own = await server().tenant();
      client = rest(server().api, own.key);
      clientA = await newClient(client, { name: "A" });
      clientB = await newClient(client, { name: "B" });
      docs.draft = (await newDocument(client, { client_id: clientA })).id;
      docs.quote = (await newDocument(client, { client_id: clientB, document_type: "quote" })).id;
      docs.sent = (await newDocument(client, { client_id: clientB })).id;
      await post(client, `/invoices/${docs.sent}/send`);
      docs.sentQuote = (await newDocument(client, { client_id: clientA, document_type: "quote" })).id;
      await post(client, `/invoices/${docs.sentQuote}/send`);
    });

    it("GET /invoices/{id} returns the document with items and payments", async () => {
      const res = await client.get(`/invoices/${docs.sent}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: docs.sent, status: "sent", items: [{ description: "Work", quantity: 1, unit_price: 100, amount: 100 }], payments: [] });
      expect(res.body).not.toHaveProperty("client");
    });

    it("lists newest first, with limit and cursor", async () => {
      const first = await client.get("/invoices?limit=3");
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(ids(first.body)).toEqual([docs.sentQuote, docs.sent, docs.quote]);
      const second = await client.get(`/invoices?limit=3&cursor=${first.body.next_cursor}`);
      expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(second.body)).toEqual([docs.draft]);
      expect(first.body.data[0]).toEqual((await client.get(`/invoices/${docs.sentQuote}`)).body);
    });

    it("filters by status, document_type and client_id, exactly", async () => {
      expect(ids((await client.get("/invoices?status=sent")).body)).toEqual([docs.sentQuote, docs.sent]);
      expect(ids((await client.get("/invoices?document_type=quote")).body)).toEqual([docs.sentQuote, docs.quote]);
      expect(ids((await client.get("/invoices?document_type=invoice")).body)).toEqual([docs.sent, docs.draft]);
      expect(ids((await client.get(`/invoices?client_id=${clientA}`)).body)).toEqual([docs.sentQuote, docs.draft]);
      expect(ids((await client.get(`/invoices?client_id=${clientB}&document_type=invoice&status=sent`)).body)).toEqual([docs.sent]);
      expect(ids((await client.get("/invoices?status=paid")).body)).toEqual([]);
      expect(ids((await client.get("/invoices?client_id=cli_01J00000000000000000000000")).body)).toEqual([]);
    });

    it.each([
      ["status=open", "status"],
      ["document_type=receipt", "document_type"],
      ["limit=0", "limit"],
      ["cursor=nope", "cursor"],
      ["search=x", "search"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      expectError(await client.get(`/invoices?${query}`), 400, "validation_failed", param);
    });

    it("answers 404 not_found for an unknown id on every route", async () => {
      for (const res of [
        await client.get(`/invoices/${NEVER_INVOICE}`),
        await client.patch(`/invoices/${NEVER_INVOICE}`, { notes: "x" }),
        ...(await Promise.all(["send", "void", "accept", "decline", "convert"].map((action) => client.post(`/invoices/${NEVER_INVOICE}/${action}`)))),
        await client.post(`/invoices/${NEVER_INVOICE}/payments`, { amount: 1, payment_method: "cash" }),
      ]) {
        expectError(res, 404, "not_found");
      }
    });

    it("speaks GraphQL: invoice with its client, invoices with filters", async () => {
      const gql = graphql(server().url, own.key);
      const read = await gql(
        `query ($id: ID!) { invoice(id: $id) { object id invoice_number document_type status total client_id client { id name } items { description amount } payments { id } } }`,
        { id: docs.quote },
      );
      expect(read.errors).toBeUndefined();
      expect(read.data.invoice).toEqual({
        object: "invoice",
        id: docs.quote,
        invoice_number: `QUO-${year()}-0001`,
        document_type: "quote",
        status: "draft",
        total: 100,
        client_id: clientB,
        client: { id: clientB, name: "B" },
        items: [{ description: "Work", amount: 100 }],
        payments: [],
      });
      const list = await gql(`{ invoices(document_type: quote, status: sent) { object has_more data { id } } }`);
      expect(list.data.invoices).toEqual({ object: "list", has_more: false, data: [{ id: docs.sentQuote }] });
    });
  });

  describe("PATCH", () => {
    it("edits a draft: items replace every line and totals are recomputed", async () => {
      const other = await newClient(api, { name: "Other client", currency: "EUR" });
      const doc = await newDocument(api, { client_id: clientId, tax_rate: 10, due_date: "2099-01-31", notes: "first", items: SAMPLE_ITEMS });
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

      const rate = await api.patch(`/invoices/${doc.id}`, { tax_rate: 0, currency: "EUR", issue_date: `${year()}-01-01` });
      expect(rate.body).toMatchObject({ tax_rate: 0, tax_amount: 0, subtotal: 49.98, total: 49.98, currency: "EUR", issue_date: `${year()}-01-01` });
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
        const res = await api.patch(`/invoices/${id}`, { notes: "too late", items: [{ description: "x", quantity: 1, unit_price: 1 }] });
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
      expect(voided.body).toMatchObject({ status: "void", voided_at: expect.stringMatching(ISO), sent_at: sent.body.sent_at });
      const again = await api.post(`/invoices/${doc.id}/void`);
      expectError(again, 400, "invalid_state");
      expect(again.body.error.message).toMatch(/is void; it can be voided only while draft, sent or partially_paid/);
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
      const free = await newDocument(api, { ...past, items: [{ description: "Gift", quantity: 1, unit_price: 0 }] });
      expect(free).toMatchObject({ total: 0, overdue: false });
    });
  });

  describe("quote lifecycle", () => {
    it("draft → sent → accepted → converted into a new draft invoice, linked both ways (201)", async () => {
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote", tax_rate: 7.5, notes: "Thanks", items: SAMPLE_ITEMS, due_date: "2099-01-01" });
      expect((await post(api, `/invoices/${quote.id}/send`)).status).toBe("sent");
      const accepted = await api.post(`/invoices/${quote.id}/accept`);
      expect(accepted.status).toBe(200);
      expect(accepted.body).toMatchObject({ status: "accepted", accepted_at: expect.stringMatching(ISO) });
      expectError(await api.post(`/invoices/${quote.id}/decline`), 400, "invalid_state");
      expectError(await api.post(`/invoices/${quote.id}/void`), 400, "invalid_state");
      expectError(await api.post(`/invoices/${quote.id}/payments`, { amount: 1, payment_method: "cash" }), 400, "invalid_state");

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
      expect(after).toMatchObject({ status: "converted", converted_invoice_id: converted.body.id, quote_id: null, invoice_number: quote.invoice_number });

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
      const converted = await gql(`mutation ($id: ID!) { convertQuote(id: $id) { id document_type status quote_id } }`, { id: quote.id });
      expect(converted.errors).toBeUndefined();
      expect(converted.data.convertQuote).toMatchObject({ document_type: "invoice", status: "draft", quote_id: quote.id });
      const read = await gql(`query ($id: ID!) { invoice(id: $id) { status converted_invoice_id } }`, { id: quote.id });
      expect(read.data.invoice).toEqual({ status: "converted", converted_invoice_id: converted.data.convertQuote.id });
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
      expectError(await client.post("/invoices", { client_id: ownClient, items: [] }), 400, "validation_failed");
      expectError(await client.post("/invoices", { client_id: "cli_01J00000000000000000000000", items: SAMPLE_ITEMS }), 400, "validation_failed");
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

  describe("tenancy", () => {
    let a: Tenant;
    let b: Tenant;
    let apiA: Api;
    let apiB: Api;
    let bClient: string;
    const B: Record<string, string> = {};
    let bBefore: unknown;

    /** A 404 for B's id must look exactly like the 404 for an id that never existed. */

    beforeAll(async () => {
      a = await server().tenant();
      b = await server().tenant();
      apiA = rest(server().api, a.key);
      apiB = rest(server().api, b.key);
      await newDocument(apiA, { client_id: await newClient(apiA, { name: "Alpha" }) });
      bClient = await newClient(apiB, { name: "Bravo" });
      B.draft = (await newDocument(apiB, { client_id: bClient })).id;
      B.quote = (await newDocument(apiB, { client_id: bClient, document_type: "quote" })).id;
      B.accepted = (await newDocument(apiB, { client_id: bClient, document_type: "quote" })).id;
      await post(apiB, `/invoices/${B.accepted}/accept`);
      bBefore = await stored(server(), b.workspaceId);
    });

    it("another workspace's id is 404 on every route, like an unknown id, and B is untouched", async () => {
      const routes: [string, string, unknown?][] = [
        ["GET", ""],
        ["PATCH", "", { notes: "hijacked" }],
        ["POST", "/send"],
        ["POST", "/void"],
        ["POST", "/accept"],
        ["POST", "/decline"],
        ["POST", "/convert"],
        ["POST", "/payments", { amount: 1, payment_method: "cash" }],
      ];
      for (const id of Object.values(B)) {
        for (const [method, suffix, body] of routes) {
          const res = await call(method, `${server().api}/invoices/${id}${suffix}`, { key: a.key, body });
          const never = await call(method, `${server().api}/invoices/${NEVER_INVOICE}${suffix}`, { key: a.key, body });
          expectHidden(res, never, id, NEVER_INVOICE);
        }
      }
      expect(await stored(server(), b.workspaceId)).toEqual(bBefore);
    });

    it("lists only the caller's documents, also when filtering by B's client", async () => {
      const listed = ids((await apiA.get("/invoices?limit=30")).body);
      expect(listed).toHaveLength(1);
      for (const id of Object.values(B)) expect(listed).not.toContain(id);
      expect(ids((await apiA.get(`/invoices?client_id=${bClient}`)).body)).toEqual([]);
      expect(ids((await apiB.get("/invoices?limit=30")).body).sort()).toEqual(Object.values(B).sort());
    });

    it("over GraphQL: B's ids give null and not_found, and mutations change nothing", async () => {
      const gqlA = graphql(server().url, a.key);
      const read = await gqlA(`query ($id: ID!) { invoice(id: $id) { id } }`, { id: B.draft });
      expect(read.data).toEqual({ invoice: null });
      expect(read.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      for (const mutation of [
        `mutation ($id: ID!) { updateInvoice(id: $id, notes: "x") { id } }`,
        `mutation ($id: ID!) { sendInvoice(id: $id) { id } }`,
        `mutation ($id: ID!) { voidInvoice(id: $id) { id } }`,
        `mutation ($id: ID!) { acceptQuote(id: $id) { id } }`,
        `mutation ($id: ID!) { declineQuote(id: $id) { id } }`,
        `mutation ($id: ID!) { convertQuote(id: $id) { id } }`,
        `mutation ($id: ID!) { recordPayment(invoice_id: $id, amount: 1, payment_method: cash) { id } }`,
      ]) {
        for (const id of [B.draft, B.accepted]) {
          const res = await gqlA(mutation, { id });
          expect(res.data, mutation).toBeNull();
          expect(res.errors?.[0]?.extensions, mutation).toMatchObject({ code: "not_found" });
        }
      }
      const list = await gqlA(`{ invoices(limit: 100) { data { id client_id } } }`);
      expect(list.errors).toBeUndefined();
      expect(JSON.stringify(list.data)).not.toContain(bClient);
      expect(await stored(server(), b.workspaceId)).toEqual(bBefore);
    });
  });

  describe("scopes", () => {
    it("each route answers 403 insufficient_scope naming the missing scope, and writes nothing", async () => {
      const doc = await newDocument(api, { client_id: clientId });
      const quote = await newDocument(api, { client_id: clientId, document_type: "quote" });
      const routes: [string, string, string, unknown?][] = [
        ["GET", "/invoices", "invoices.read"],
        ["GET", `/invoices/${doc.id}`, "invoices.read"],
        ["POST", "/invoices", "invoices.write", { client_id: clientId, items: SAMPLE_ITEMS }],
        ["PATCH", `/invoices/${doc.id}`, "invoices.write", { notes: "x" }],
        ["POST", `/invoices/${doc.id}/send`, "invoices.write"],
        ["POST", `/invoices/${doc.id}/void`, "invoices.write"],
        ["POST", `/invoices/${quote.id}/accept`, "invoices.write"],
        ["POST", `/invoices/${quote.id}/decline`, "invoices.write"],
        ["POST", `/invoices/${quote.id}/convert`, "invoices.write"],
        ["POST", `/invoices/${doc.id}/payments`, "payments.write", { amount: 1, payment_method: "cash" }],
      ];
      const before = await stored(server(), tenant.workspaceId);
      for (const [method, path, scope, body] of routes) {
        const key = await server().key(tenant.workspaceId, SCOPES.filter((s) => s !== scope));
        const res = await call(method, server().api + path, { key: key.key, body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.error, `${method} ${path}`).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: scope });
      }
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("write without read may create and sees what it wrote, but cannot read", async () => {
      const writer = rest(server().api, (await server().key(tenant.workspaceId, ["invoices.write"])).key);
      const made = await writer.post("/invoices", { client_id: clientId, items: SAMPLE_ITEMS });
      expect(made.status).toBe(201);
      expect(made.body.total).toBe(1200);
      expectError(await writer.get(`/invoices/${made.body.id}`), 403, "insufficient_scope");
    });

    it("GraphQL guards the same fields, and the nested client needs clients.read", async () => {
      const doc = await newDocument(api, { client_id: clientId });
      const noRead = graphql(server().url, (await server().key(tenant.workspaceId, ["invoices.write"])).key);
      const list = await noRead(`{ invoices { data { id } } }`);
      expect(list.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "invoices.read" });
      const send = await noRead(`mutation ($id: ID!) { sendInvoice(id: $id) { id status } }`, { id: doc.id });
      expect(send.data.sendInvoice).toEqual({ id: doc.id, status: "sent" });

      const reader = graphql(server().url, (await server().key(tenant.workspaceId, ["invoices.read"])).key);
      const read = await reader(`query ($id: ID!) { invoice(id: $id) { id client { name } } }`, { id: doc.id });
      expect(read.data.invoice).toEqual({ id: doc.id, client: null });
      expect(read.errors?.map((e) => [e.path, e.extensions.code, e.extensions.required_scope])).toEqual([
        [["invoice", "client"], "insufficient_scope", "clients.read"],
      ]);
      const voided = await reader(`mutation ($id: ID!) { voidInvoice(id: $id) { id } }`, { id: doc.id });
      expect(voided.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "invoices.write" });
      expect((await api.get(`/invoices/${doc.id}`)).body.status).toBe("sent");
    });
  });
});
