import { beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { expectHidden, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import {
  type Api,
  expectError,
  NEVER_INVOICE,
  newClient,
  newDocument,
  post,
  SAMPLE_ITEMS,
  stored,
} from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

e2e("invoices: tenancy and scopes", (server) => {
  let tenant: Tenant;
  let api: Api;
  let clientId: string;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    clientId = await newClient(api);
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
          const never = await call(method, `${server().api}/invoices/${NEVER_INVOICE}${suffix}`, {
            key: a.key,
            body,
          });
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
        const key = await server().key(
          tenant.workspaceId,
          SCOPES.filter((s) => s !== scope),
        );
        const res = await call(method, server().api + path, { key: key.key, body });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.error, `${method} ${path}`).toMatchObject({
          type: "permission_error",
          code: "insufficient_scope",
          required_scope: scope,
        });
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
      expect(list.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "invoices.read",
      });
      const send = await noRead(`mutation ($id: ID!) { sendInvoice(id: $id) { id status } }`, { id: doc.id });
      expect(send.data.sendInvoice).toEqual({ id: doc.id, status: "sent" });

      const reader = graphql(server().url, (await server().key(tenant.workspaceId, ["invoices.read"])).key);
      const read = await reader(`query ($id: ID!) { invoice(id: $id) { id client { name } } }`, {
        id: doc.id,
      });
      expect(read.data.invoice).toEqual({ id: doc.id, client: null });
      expect(read.errors?.map((e) => [e.path, e.extensions.code, e.extensions.required_scope])).toEqual([
        [["invoice", "client"], "insufficient_scope", "clients.read"],
      ]);
      const voided = await reader(`mutation ($id: ID!) { voidInvoice(id: $id) { id } }`, { id: doc.id });
      expect(voided.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "invoices.write",
      });
      expect((await api.get(`/invoices/${doc.id}`)).body.status).toBe("sent");
    });
  });
});
