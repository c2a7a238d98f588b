import { beforeAll, describe, expect, it } from "vitest";
import { ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import {
  type Api,
  expectError,
  NEVER_INVOICE,
  newClient,
  newDocument,
  post,
  year,
} from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

e2e("invoices: retrieve and list", (server) => {
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
      expect(res.body).toMatchObject({
        id: docs.sent,
        status: "sent",
        items: [{ description: "Work", quantity: 1, unit_price: 100, amount: 100 }],
        payments: [],
      });
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
      expect(ids((await client.get("/invoices?document_type=quote")).body)).toEqual([
        docs.sentQuote,
        docs.quote,
      ]);
      expect(ids((await client.get("/invoices?document_type=invoice")).body)).toEqual([
        docs.sent,
        docs.draft,
      ]);
      expect(ids((await client.get(`/invoices?client_id=${clientA}`)).body)).toEqual([
        docs.sentQuote,
        docs.draft,
      ]);
      expect(
        ids((await client.get(`/invoices?client_id=${clientB}&document_type=invoice&status=sent`)).body),
      ).toEqual([docs.sent]);
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
        ...(await Promise.all(
          ["send", "void", "accept", "decline", "convert"].map((action) =>
            client.post(`/invoices/${NEVER_INVOICE}/${action}`),
          ),
        )),
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
      const list = await gql(
        `{ invoices(document_type: quote, status: sent) { object has_more data { id } } }`,
      );
      expect(list.data.invoices).toEqual({ object: "list", has_more: false, data: [{ id: docs.sentQuote }] });
    });
  });
});
