import { beforeAll, describe, expect, it } from "vitest";
import { ISO } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import {
  expectError,
  newClient,
  newDocument,
  SAMPLE_ITEMS,
  stored,
  today,
  year,
} from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";

e2e("invoices: create and numbering", (server) => {
  const { tenant, api } = useWorkspace(server);
  let clientId: string;

  beforeAll(async () => {
    clientId = await newClient(api);
  });

  describe("create", () => {
    it("creates the api-spec sample: 1200 at 7.5 % tax is a draft of 1290, 201, numbered INV-<year>-0001", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const res = await client.post("/invoices", {
        client_id: ownClient,
        due_date: "2099-12-31",
        tax_rate: 7.5,
        items: SAMPLE_ITEMS,
      });
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

      const halfCent = await newDocument(api, {
        client_id: clientId,
        tax_rate: 5,
        items: [{ description: "x", quantity: 3, unit_price: 0.1 }],
      });
      // 0.30 × 5 % = 0.015 exactly: half-up gives 0.02 (binary floating point gives 0.01)
      expect(halfCent).toMatchObject({ subtotal: 0.3, tax_amount: 0.02, total: 0.32 });

      const precise = await newDocument(api, {
        client_id: clientId,
        tax_rate: 8.875,
        items: [{ description: "Consulting", quantity: 12.5, unit_price: 149.99 }],
      });
      // 12.5 × 149.99 = 1874.875 → 1874.88; × 8.875 % = 166.3956 → 166.40
      expect(precise).toMatchObject({
        subtotal: 1874.88,
        tax_rate: 8.875,
        tax_amount: 166.4,
        total: 2041.28,
      });
    });

    it("creates a quote with document_type quote, numbered QUO-<year>-<seq> on its own sequence", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const invoice = await newDocument(client, { client_id: ownClient });
      const quote = await newDocument(client, {
        client_id: ownClient,
        document_type: "quote",
        notes: "Valid 30 days",
      });
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
      expect(
        (await newDocument(client, { client_id: ownClient, document_type: "quote" })).invoice_number,
      ).toBe(`QUO-${year()}-0002`);
    });

    it("numbers by the year of issue_date", async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      expect(
        (await newDocument(client, { client_id: ownClient, issue_date: "2025-03-01" })).invoice_number,
      ).toBe("INV-2025-0001");
      expect(
        (await newDocument(client, { client_id: ownClient, issue_date: "2025-12-31" })).invoice_number,
      ).toBe("INV-2025-0002");
      expect(
        (await newDocument(client, { client_id: ownClient, issue_date: "2031-01-01" })).invoice_number,
      ).toBe("INV-2031-0001");
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
        [
          "negative quantity",
          (c) => ({ client_id: c, items: [{ ...item, quantity: -1 }] }),
          "items[0].quantity",
        ],
        [
          "zero quantity",
          (c) => ({ client_id: c, items: [item, { ...item, quantity: 0 }] }),
          "items[1].quantity",
        ],
        [
          "quantity as a string",
          (c) => ({ client_id: c, items: [{ ...item, quantity: "2" }] }),
          "items[0].quantity",
        ],
        [
          "non-numeric quantity",
          (c) => ({ client_id: c, items: [{ ...item, quantity: "two" }] }),
          "items[0].quantity",
        ],
        [
          "quantity with 4 decimals",
          (c) => ({ client_id: c, items: [{ ...item, quantity: 1.0001 }] }),
          "items[0].quantity",
        ],
        [
          "negative unit_price",
          (c) => ({ client_id: c, items: [{ ...item, unit_price: -5 }] }),
          "items[0].unit_price",
        ],
        [
          "non-numeric unit_price",
          (c) => ({ client_id: c, items: [{ ...item, unit_price: "ten" }] }),
          "items[0].unit_price",
        ],
        [
          "unit_price with 3 decimals",
          (c) => ({ client_id: c, items: [{ ...item, unit_price: 1.005 }] }),
          "items[0].unit_price",
        ],
        [
          "empty description",
          (c) => ({ client_id: c, items: [{ ...item, description: "  " }] }),
          "items[0].description",
        ],
        [
          "no description",
          (c) => ({ client_id: c, items: [{ quantity: 1, unit_price: 1 }] }),
          "items[0].description",
        ],
        [
          "no unit_price",
          (c) => ({ client_id: c, items: [{ description: "x", quantity: 1 }] }),
          "items[0].unit_price",
        ],
        ["a null line", (c) => ({ client_id: c, items: [null] }), "items[0]"],
        ["unknown item field", (c) => ({ client_id: c, items: [{ ...item, sku: "X" }] }), "items[0].sku"],
        ["items as one object instead of an array", (c) => ({ client_id: c, items: item }), "items"],
        [
          "a total too large to store",
          (c) => ({ client_id: c, items: [item, { ...item, quantity: 99_999_999_999, unit_price: 99_999 }] }),
          "items",
        ],
        ["tax_rate over 100", (c) => ({ client_id: c, items: [item], tax_rate: 100.5 }), "tax_rate"],
        ["negative tax_rate", (c) => ({ client_id: c, items: [item], tax_rate: -1 }), "tax_rate"],
        ["tax_rate as a string", (c) => ({ client_id: c, items: [item], tax_rate: "7.5" }), "tax_rate"],
        [
          "unknown document_type",
          (c) => ({ client_id: c, items: [item], document_type: "receipt" }),
          "document_type",
        ],
        ["no client_id", () => ({ items: [item] }), "client_id"],
        [
          "unknown client_id",
          () => ({ client_id: "cli_01J00000000000000000000000", items: [item] }),
          "client_id",
        ],
        [
          "client of another workspace",
          (_c, foreign) => ({ client_id: foreign, items: [item] }),
          "client_id",
        ],
        ["impossible due_date", (c) => ({ client_id: c, items: [item], due_date: "2026-02-30" }), "due_date"],
        [
          "due_date before issue_date",
          (c) => ({ client_id: c, items: [item], issue_date: "2026-05-02", due_date: "2026-05-01" }),
          "due_date",
        ],
        ["lower-case currency", (c) => ({ client_id: c, items: [item], currency: "usd" }), "currency"],
        ["a status", (c) => ({ client_id: c, items: [item], status: "paid" }), "status"],
        [
          "an invoice_number",
          (c) => ({ client_id: c, items: [item], invoice_number: "INV-2026-9999" }),
          "invoice_number",
        ],
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
        expect(foreign.errors?.[0]?.extensions).toMatchObject({
          code: "validation_failed",
          param: "client_id",
        });
        const empty = await gql(
          `mutation ($client: String!) { createInvoice(client_id: $client, items: []) { id } }`,
          { client: clientId },
        );
        expect(empty.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "items" });
        expect(await stored(server(), tenant.workspaceId)).toEqual(before);
      });
    });
  });

  describe("numbering", () => {
    it("gives 50 concurrent creations the numbers 0001…0050, no gap, no duplicate", {
      timeout: 120_000,
    }, async () => {
      const own = await server().tenant();
      const client = rest(server().api, own.key);
      const ownClient = await newClient(client);
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          client.post("/invoices", {
            client_id: ownClient,
            issue_date: "2030-06-15",
            items: [{ description: `Line ${i}`, quantity: 1, unit_price: i }],
          }),
        ),
      );
      expect(responses.map((res) => res.status)).toEqual(Array(50).fill(201));
      const numbers = responses.map((res) => res.body.invoice_number as string).sort();
      expect(numbers).toEqual(
        Array.from({ length: 50 }, (_, i) => `INV-2030-${String(i + 1).padStart(4, "0")}`),
      );
      const sequences = await server().running.db.prisma.documentSequence.findMany({
        where: { workspaceId: own.workspaceId },
      });
      expect(sequences).toEqual([
        { workspaceId: own.workspaceId, documentType: "invoice", year: 2030, lastValue: 50 },
      ]);
      // Invoice pages hold at most 30 (the response budget): two pages list all 50.
      const first = (await client.get("/invoices?limit=30")).body;
      const second = (await client.get(`/invoices?limit=30&cursor=${first.next_cursor}`)).body;
      expect(second.has_more).toBe(false);
      const listed = [...first.data, ...second.data].map(
        (doc: { invoice_number: string }) => doc.invoice_number,
      );
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
        expect(
          (await newDocument(client, { client_id: await newClient(client), issue_date: "2029-01-01" }))
            .invoice_number,
        ).toBe("INV-2029-0001");
      }
    });
  });
});
