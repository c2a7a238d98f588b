import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { ids } from "../../support/assertions.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const CLIENT_ID = /^cli_[0-9A-HJKMNP-TV-Z]{26}$/;
const MISSING = "cli_01J00000000000000000000000";
const EMPTY_ADDRESS = { line1: null, line2: null, city: null, region: null, postal_code: null, country: null };
const CLIENT_FIELDS = `object id name email phone company_name tax_id
  address { line1 line2 city region postal_code country } currency notes created_at updated_at`;

e2e("clients", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  /** A fresh workspace whose client count is under the test's control. */
  async function scratch() {
    const own = await server().tenant();
    const client = rest(server().api, own.key);
    const count = async () => {
      const res = await client.get("/clients?limit=100");
      expect(res.status).toBe(200);
      return res.body.data.length as number;
    };
    return { own, client, count };
  }

  describe("create", () => {
    it("creates a client with 201 and the full flat object", async () => {
      const res = await api.post("/clients", {
        name: "  Acme Corporation  ",
        email: "Billing@ACME.example.com",
        phone: "+1 555 0100",
        company_name: "Acme Corp",
        tax_id: "US-123456789",
        address: {
          line1: "1 Main Street",
          line2: "Suite 400",
          city: "Springfield",
          region: "IL",
          postal_code: "62701",
          country: "US",
        },
        currency: "EUR",
        notes: "Pays on time",
      });
      expect(res.status).toBe(201);
      expect(res.headers.get("x-request-id")).toMatch(/^req_/);
      expect(res.body).toEqual({
        object: "client",
        id: expect.stringMatching(CLIENT_ID),
        name: "Acme Corporation",
        email: "billing@acme.example.com",
        phone: "+1 555 0100",
        company_name: "Acme Corp",
        tax_id: "US-123456789",
        address: {
          line1: "1 Main Street",
          line2: "Suite 400",
          city: "Springfield",
          region: "IL",
          postal_code: "62701",
          country: "US",
        },
        currency: "EUR",
        notes: "Pays on time",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(res.body.updated_at).toBe(res.body.created_at);
      expect(Math.abs(Date.parse(res.body.created_at) - Date.now())).toBeLessThan(60_000);

      const read = await api.get(`/clients/${res.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(res.body);
    });

    it("needs only a name: every optional field is null, the address is all nulls and currency defaults to USD", async () => {
      const res = await api.post("/clients", { name: "Minimal" });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        object: "client",
        id: expect.stringMatching(CLIENT_ID),
        name: "Minimal",
        email: null,
        phone: null,
        company_name: null,
        tax_id: null,
        address: EMPTY_ADDRESS,
        currency: "USD",
        notes: null,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
    });

    it("stores a partial address with the other lines null, and treats empty optional strings as null", async () => {
      const res = await api.post("/clients", { name: "Partial", address: { city: "Oslo", country: "NO" }, phone: "", notes: "   " });
      expect(res.status).toBe(201);
      expect(res.body.address).toEqual({ ...EMPTY_ADDRESS, city: "Oslo", country: "NO" });
      expect(res.body).toMatchObject({ phone: null, notes: null });
    });

    it("gives every client its own time-sortable id", async () => {
      const first = (await api.post("/clients", { name: "First" })).body.id as string;
      const second = (await api.post("/clients", { name: "Second" })).body.id as string;
      expect(first).toMatch(CLIENT_ID);
      expect(second).toMatch(CLIENT_ID);
      expect(second > first).toBe(true);
    });

    it.each([
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: null }, "name"],
      [{ name: 5 }, "name"],
      [{ name: ["Acme"] }, "name"],
      [{ name: { first: "A" } }, "name"],
      [{ name: "A", email: "not-an-email" }, "email"],
      [{ name: "A", email: "a@b" }, "email"],
      [{ name: "A", email: 42 }, "email"],
      [{ name: "A", currency: "usd" }, "currency"],
      [{ name: "A", currency: "US" }, "currency"],
      [{ name: "A", currency: "DOLLARS" }, "currency"],
      [{ name: "A", currency: null }, "currency"],
      [{ name: "A", currency: 840 }, "currency"],
      [{ name: "A", phone: 5550100 }, "phone"],
      [{ name: "A", notes: ["x"] }, "notes"],
      [{ name: "A", tax_id: true }, "tax_id"],
      [{ name: "A", nickname: "x" }, "nickname"],
      [{ name: "A", id: "cli_01J00000000000000000000000" }, "id"],
      [{ name: "A", object: "client" }, "object"],
      [{ name: "A", created_at: "2026-01-01T00:00:00Z" }, "created_at"],
      [{ name: "A", workspace_id: "ws_x" }, "workspace_id"],
      [{ name: "A", address: "1 Main Street" }, "address"],
      [{ name: "A", address: ["1 Main Street"] }, "address"],
      [{ name: "A", address: { city: 5 } }, "address.city"],
      [{ name: "A", address: { street: "1 Main Street" } }, "address.street"],
      [{ name: "A", address: { line1: "1 Main Street", zip: "62701" } }, "address.zip"],
    ])("rejects %j with 400 validation_failed on %s and writes nothing", async (body, param) => {
      const { client, count } = await scratch();
      const res = await client.post("/clients", body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.message).toEqual(expect.any(String));
      expect(res.body.error.request_id).toMatch(/^req_/);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(0);
    });

    it("rejects a body that is not a JSON object, and malformed JSON", async () => {
      const { own, count } = await scratch();
      const array = await call("POST", `${server().api}/clients`, { key: own.key, body: [{ name: "A" }] });
      expect(array.status).toBe(400);
      expect(array.body.error.code).toBe("validation_failed");
      const broken = await call("POST", `${server().api}/clients`, {
        key: own.key,
        raw: '{"name": "A",',
        headers: { "content-type": "application/json" },
      });
      expect(broken.status).toBe(400);
      expect(broken.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_json" });
      expect(await count()).toBe(0);
    });
  });

  describe("update", () => {
    const full = {
      name: "Globex",
      email: "hank@globex.example",
      phone: "555-0199",
      company_name: "Globex Corporation",
      tax_id: "GB-1",
      address: { line1: "2 Cypress Creek", line2: "Floor 3", city: "Cypress Creek", region: "OR", postal_code: "97000", country: "US" },
      currency: "GBP",
      notes: "VIP",
    };

    it("changes only the fields sent; absent fields stay unchanged", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, { phone: "555-0200", email: "HANK@Globex.Example" });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...created, phone: "555-0200", email: "hank@globex.example", updated_at: expect.stringMatching(ISO) });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect(res.body.created_at).toBe(created.created_at);
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(res.body);
    });

    it("renames, changes currency and trims the name", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, { name: "  Globex Intl  ", currency: "JPY" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: "Globex Intl", currency: "JPY", email: full.email, address: full.address });
    });

    it("an empty body changes nothing", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, {});
      expect(res.status).toBe(200);
      const { updated_at: _u1, ...before } = created;
      const { updated_at: _u2, ...after } = res.body;
      expect(after).toEqual(before);
    });

    it("null clears each optional field", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, { email: null, phone: null, company_name: null, tax_id: null, notes: null });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: "Globex",
        email: null,
        phone: null,
        company_name: null,
        tax_id: null,
        notes: null,
        currency: "GBP",
        address: full.address,
      });
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(res.body);
    });

    it("address: null clears the whole address", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, { address: null });
      expect(res.status).toBe(200);
      expect(res.body.address).toEqual(EMPTY_ADDRESS);
      expect(res.body).toMatchObject({ name: "Globex", email: full.email, notes: "VIP" });
      expect((await api.get(`/clients/${created.id}`)).body.address).toEqual(EMPTY_ADDRESS);
    });

    it("a partial address updates only the keys sent; a null key clears just that line", async () => {
      const created = (await api.post("/clients", full)).body;
      const moved = await api.patch(`/clients/${created.id}`, { address: { city: "Springfield", postal_code: "62701" } });
      expect(moved.status).toBe(200);
      expect(moved.body.address).toEqual({ ...full.address, city: "Springfield", postal_code: "62701" });

      const cleared = await api.patch(`/clients/${created.id}`, { address: { line2: null } });
      expect(cleared.status).toBe(200);
      expect(cleared.body.address).toEqual({ ...full.address, city: "Springfield", postal_code: "62701", line2: null });

      const untouched = await api.patch(`/clients/${created.id}`, { address: {} });
      expect(untouched.status).toBe(200);
      expect(untouched.body.address).toEqual(cleared.body.address);

      expect((await api.get(`/clients/${created.id}`)).body.address).toEqual(cleared.body.address);
    });

    it("fills an empty address from a partial one", async () => {
      const created = (await api.post("/clients", { name: "No address" })).body;
      const res = await api.patch(`/clients/${created.id}`, { address: { country: "DE" } });
      expect(res.body.address).toEqual({ ...EMPTY_ADDRESS, country: "DE" });
    });

    it.each([
      [{ name: null }, "name"],
      [{ name: "" }, "name"],
      [{ name: "  " }, "name"],
      [{ name: 7 }, "name"],
      [{ email: "nope" }, "email"],
      [{ currency: null }, "currency"],
      [{ currency: "eur" }, "currency"],
      [{ id: "cli_01J00000000000000000000000" }, "id"],
      [{ unknown_field: 1 }, "unknown_field"],
      [{ address: { street: "x" } }, "address.street"],
      [{ address: { line1: 1 } }, "address.line1"],
      [{ address: "x" }, "address"],
      [{ notes: "fine", colour: "red" }, "colour"],
    ])("rejects PATCH %j with 400 validation_failed on %s without changing the client", async (body, param) => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(created);
    });
  });

  describe("delete", () => {
    it("returns the deletion result, then the client is gone everywhere", async () => {
      const created = (await api.post("/clients", { name: "Doomed Ltd" })).body;
      const res = await api.delete(`/clients/${created.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: created.id, object: "client", deleted: true });

      for (const after of [
        await api.get(`/clients/${created.id}`),
        await api.patch(`/clients/${created.id}`, { name: "Back" }),
        await api.delete(`/clients/${created.id}`),
      ]) {
        expect(after.status).toBe(404);
        expect(after.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found" });
      }
      expect(ids((await api.get("/clients?search=Doomed")).body)).toEqual([]);
    });

    it("unlinks a converted lead from the deleted client", async () => {
      const lead = (await api.post("/leads", { full_name: "Converted Person" })).body;
      const converted = (await api.post(`/leads/${lead.id}/convert`)).body;
      expect(converted.client_id).toMatch(CLIENT_ID);
      const res = await api.delete(`/clients/${converted.client_id}`);
      expect(res.status).toBe(200);
      const after = await api.get(`/leads/${lead.id}`);
      expect(after.status).toBe(200);
      expect(after.body.client_id).toBeNull();
    });

    it("answers 404 not_found for unknown ids on every by-id route", async () => {
      for (const res of [
        await api.get(`/clients/${MISSING}`),
        await api.patch(`/clients/${MISSING}`, { name: "x" }),
        await api.delete(`/clients/${MISSING}`),
        await api.get("/clients/not-an-id"),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found" });
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
    });
  });

  describe("list", () => {
    let own: Tenant;
    let client: ReturnType<typeof rest>;
    let made: string[];

    beforeAll(async () => {
      own = await server().tenant();
      client = rest(server().api, own.key);
      made = [];
      const rows = [
        { name: "Alpha Bakery", email: "orders@alpha.example" },
        { name: "Bravo", company_name: "Bravo Widgets GmbH" },
        { name: "Charlie", email: "charlie@WIDGETS-direct.example" },
        { name: "Delta Foods", notes: "widgets supplier, but only in notes" },
        { name: "Echo", company_name: "Echo Labs", phone: "widgets" },
      ];
      for (const row of rows) {
        const res = await client.post("/clients", row);
        expect(res.status).toBe(201);
        made.push(res.body.id);
      }
    });

    it("answers the list envelope, newest first", async () => {
      const res = await client.get("/clients");
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ object: "list", data: expect.any(Array), has_more: false, next_cursor: null });
      expect(ids(res.body)).toEqual([...made].reverse());
      expect(res.body.data[0]).toEqual((await client.get(`/clients/${made[4]}`)).body);
    });

    it("pages with limit and cursor", async () => {
      const first = await client.get("/clients?limit=2");
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(first.body.next_cursor).toEqual(expect.any(String));
      expect(ids(first.body)).toEqual([made[4], made[3]]);
      const second = await client.get(`/clients?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
      expect(second.body).toMatchObject({ has_more: true });
      expect(ids(second.body)).toEqual([made[2], made[1]]);
      const third = await client.get(`/clients?limit=2&cursor=${encodeURIComponent(second.body.next_cursor)}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(third.body)).toEqual([made[0]]);

      const exact = await client.get("/clients?limit=5");
      expect(exact.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(exact.body.data).toHaveLength(5);
    });

    it("defaults to 20 per page and allows up to 100", async () => {
      const many = await server().tenant();
      const c = rest(server().api, many.key);
      for (let i = 0; i < 21; i++) expect((await c.post("/clients", { name: `Client ${i}` })).status).toBe(201);
      const page = await c.get("/clients");
      expect(page.body.data).toHaveLength(20);
      expect(page.body.has_more).toBe(true);
      const rest1 = await c.get(`/clients?cursor=${page.body.next_cursor}`);
      expect(rest1.body.data.map((x: { name: string }) => x.name)).toEqual(["Client 0"]);
      const all = await c.get("/clients?limit=100");
      expect(all.body.data).toHaveLength(21);
      expect(all.body.has_more).toBe(false);
    });

    it("searches name, company_name and email case-insensitively", async () => {
      const byName = await client.get("/clients?search=aLPHA%20bak");
      expect(ids(byName.body)).toEqual([made[0]]);
      const byEmail = await client.get("/clients?search=ORDERS@");
      expect(ids(byEmail.body)).toEqual([made[0]]);
      const widgets = await client.get("/clients?search=WiDgEtS");
      // company_name (Bravo) and email (Charlie) match; notes (Delta) and phone (Echo) are not searched.
      expect(ids(widgets.body)).toEqual([made[2], made[1]]);
      const none = await client.get("/clients?search=zzz-nothing");
      expect(none.body).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
    });

    it("pages through search results", async () => {
      const first = await client.get("/clients?search=widgets&limit=1");
      expect(ids(first.body)).toEqual([made[2]]);
      expect(first.body.has_more).toBe(true);
      const second = await client.get(`/clients?search=widgets&limit=1&cursor=${first.body.next_cursor}`);
      expect(ids(second.body)).toEqual([made[1]]);
      expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    });

    it.each([
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=-1", "limit"],
      ["limit=abc", "limit"],
      ["limit=1.5", "limit"],
      ["limit=", "limit"],
      ["limit=1&limit=2", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["cursor=djE6bGVhZF94", "cursor"],
      ["cursor=", "cursor"],
      ["search=a&search=b", "search"],
      ["colour=red", "colour"],
      ["name=Alpha", "name"],
      ["email=orders%40alpha.example", "email"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      const res = await client.get(`/clients?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
    });

    it("rejects unknown query parameters on the by-id routes too", async () => {
      for (const [res, param] of [
        [await client.get(`/clients/${made[0]}?expand=leads`), "expand"],
        [await client.get(`/clients/${made[0]}?id=${made[1]}`), "id"],
        [await call("DELETE", `${server().api}/clients/${made[0]}?force=true`, { key: own.key }), "force"],
      ] as const) {
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: "validation_failed", param });
      }
      expect((await client.get(`/clients/${made[0]}`)).status).toBe(200);
    });

    it("takes write fields from the JSON body only, never from the query string", async () => {
      // The OpenAPI document lists no query parameters for POST and PATCH: a body field sent as
      // `?name=` is an unknown query parameter, and must not create or rename anything.
      const { own: other, client: c, count } = await scratch();
      const target = (await c.post("/clients", { name: "Original" })).body;
      const patched = await call("PATCH", `${server().api}/clients/${target.id}?name=Hacked`, { key: other.key, body: {} });
      expect(patched.status).toBe(400);
      expect(patched.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      expect((await c.get(`/clients/${target.id}`)).body).toEqual(target);

      const posted = await call("POST", `${server().api}/clients?name=FromQuery`, { key: other.key, body: {} });
      expect(posted.status).toBe(400);
      expect(posted.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      expect(await count()).toBe(1);
    });
  });

  describe("scopes", () => {
    it("asks for a credential at all", async () => {
      const res = await rest(server().api).get("/clients");
      expect(res.status).toBe(401);
      expect(res.body.error.type).toBe("authentication_error");
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="/);
    });

    it("a read-only key reads but cannot write (403 insufficient_scope clients.write), and nothing is written", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const reader = rest(server().api, (await server().key(own.workspaceId, ["clients.read"])).key);

      expect((await reader.get("/clients")).status).toBe(200);
      expect((await reader.get(`/clients/${existing.id}`)).body).toEqual(existing);
      for (const res of [
        await reader.post("/clients", { name: "Sneaky" }),
        await reader.patch(`/clients/${existing.id}`, { name: "Sneaky" }),
        await reader.delete(`/clients/${existing.id}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "clients.write" });
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });

    it("a write-only key can create, update and delete but not list or retrieve (403 clients.read)", async () => {
      const { own, client } = await scratch();
      const writer = rest(server().api, (await server().key(own.workspaceId, ["clients.write"])).key);
      const created = await writer.post("/clients", { name: "Write Only Inc" });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ object: "client", name: "Write Only Inc" });
      expect((await client.get(`/clients/${created.body.id}`)).body).toEqual(created.body);

      for (const res of [await writer.get("/clients"), await writer.get(`/clients/${created.body.id}`)]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "clients.read" });
      }
      const patched = await writer.patch(`/clients/${created.body.id}`, { notes: "w" });
      expect(patched.status).toBe(200);
      expect(patched.body.notes).toBe("w");
      expect((await writer.delete(`/clients/${created.body.id}`)).status).toBe(200);
      expect((await client.get(`/clients/${created.body.id}`)).status).toBe(404);
    });

    it("a key without any clients scope gets 403 everywhere", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const other = rest(server().api, (await server().key(own.workspaceId, ["leads.read", "leads.write"])).key);
      const expectations: [Promise<{ status: number; body: any }>, string][] = [
        [other.get("/clients"), "clients.read"],
        [other.get(`/clients/${existing.id}`), "clients.read"],
        [other.post("/clients", { name: "x" }), "clients.write"],
        [other.patch(`/clients/${existing.id}`, { name: "x" }), "clients.write"],
        [other.delete(`/clients/${existing.id}`), "clients.write"],
      ];
      for (const [pending, scope] of expectations) {
        const res = await pending;
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });

    it("applies the same scopes over GraphQL, with the code in extensions", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const writer = graphql(server().url, (await server().key(own.workspaceId, ["clients.write"])).key);
      const reader = graphql(server().url, (await server().key(own.workspaceId, ["clients.read"])).key);

      const made = await writer(`mutation { createClient(name: "Via GraphQL") { object id name } }`);
      expect(made.errors).toBeUndefined();
      expect(made.data.createClient).toMatchObject({ object: "client", name: "Via GraphQL" });

      for (const [query, scope] of [
        [`{ clients { data { id } } }`, "clients.read"],
        [`{ client(id: "${existing.id}") { id } }`, "clients.read"],
      ] as const) {
        const res = await writer(query);
        // The root fields are nullable: the refused field comes back null.
        expect(Object.values(res.data ?? {}).every((v) => v === null)).toBe(true);
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          type: "permission_error",
          required_scope: scope,
          request_id: expect.stringMatching(/^req_/),
        });
      }
      for (const query of [
        `mutation { createClient(name: "Nope") { id } }`,
        `mutation { updateClient(id: "${existing.id}", name: "Nope") { id } }`,
        `mutation { deleteClient(id: "${existing.id}") { id } }`,
      ]) {
        const res = await reader(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "clients.write" });
      }
      expect(await count()).toBe(2);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });
  });

  describe("over GraphQL", () => {
    it("creates, reads, updates and deletes with the same vocabulary REST uses", async () => {
      const gql = graphql(server().url, tenant.key);
      const made = await gql(
        `mutation ($address: AddressInput) {
          createClient(name: "Initech", email: "Bill@Initech.Example", company_name: "Initech LLC", address: $address, notes: "TPS") { ${CLIENT_FIELDS} }
        }`,
        { address: { line1: "4120 Freidrich Ln", city: "Austin", region: "TX", country: "US" } },
      );
      expect(made.errors).toBeUndefined();
      const created = made.data.createClient;
      expect(created).toEqual({
        object: "client",
        id: expect.stringMatching(CLIENT_ID),
        name: "Initech",
        email: "bill@initech.example",
        phone: null,
        company_name: "Initech LLC",
        tax_id: null,
        address: { ...EMPTY_ADDRESS, line1: "4120 Freidrich Ln", city: "Austin", region: "TX", country: "US" },
        currency: "USD",
        notes: "TPS",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(created);

      const read = await gql(`query ($id: ID!) { client(id: $id) { ${CLIENT_FIELDS} } }`, { id: created.id });
      expect(read.errors).toBeUndefined();
      expect(read.data.client).toEqual(created);

      const partial = await gql(
        `mutation ($id: ID!) { updateClient(id: $id, address: { postal_code: "78701" }, notes: null) { address { line1 city postal_code } notes name } }`,
        { id: created.id },
      );
      expect(partial.errors).toBeUndefined();
      expect(partial.data.updateClient).toEqual({
        address: { line1: "4120 Freidrich Ln", city: "Austin", postal_code: "78701" },
        notes: null,
        name: "Initech",
      });

      const cleared = await gql(`mutation ($id: ID!) { updateClient(id: $id, address: null) { address { line1 city region country postal_code line2 } } }`, {
        id: created.id,
      });
      expect(cleared.data.updateClient.address).toEqual(EMPTY_ADDRESS);
      expect((await api.get(`/clients/${created.id}`)).body.address).toEqual(EMPTY_ADDRESS);

      const deleted = await gql(`mutation ($id: ID!) { deleteClient(id: $id) { id object deleted } }`, { id: created.id });
      expect(deleted.errors).toBeUndefined();
      expect(deleted.data.deleteClient).toEqual({ id: created.id, object: "client", deleted: true });

      const gone = await gql(`query ($id: ID!) { client(id: $id) { id } }`, { id: created.id });
      expect(gone.data).toEqual({ client: null });
      expect(gone.errors?.[0]?.extensions).toMatchObject({ code: "not_found", request_id: expect.stringMatching(/^req_/) });
      expect((await api.get(`/clients/${created.id}`)).status).toBe(404);
    });

    it("lists with limit, cursor and search", async () => {
      const own = await server().tenant();
      const gql = graphql(server().url, own.key);
      const made: string[] = [];
      for (const name of ["Umbrella", "Cyberdyne", "Umbrella Pharma"]) {
        const res = await gql(`mutation ($name: String!) { createClient(name: $name) { id } }`, { name });
        made.push(res.data.createClient.id);
      }
      const first = await gql(`{ clients(limit: 2) { object has_more next_cursor data { id } } }`);
      expect(first.errors).toBeUndefined();
      expect(first.data.clients).toMatchObject({ object: "list", has_more: true });
      expect(ids(first.data.clients)).toEqual([made[2], made[1]]);
      const second = await gql(`query ($c: String) { clients(limit: 2, cursor: $c) { has_more next_cursor data { id } } }`, {
        c: first.data.clients.next_cursor,
      });
      expect(second.data.clients).toEqual({ has_more: false, next_cursor: null, data: [{ id: made[0] }] });
      const search = await gql(`{ clients(search: "UMBRELLA") { data { id name } } }`);
      expect(search.data.clients.data).toEqual([
        { id: made[2], name: "Umbrella Pharma" },
        { id: made[0], name: "Umbrella" },
      ]);
    });

    it("reports validation and not-found errors with code, param and request_id, and writes nothing", async () => {
      const { own, count } = await scratch();
      const gql = graphql(server().url, own.key);
      for (const [query, param] of [
        [`mutation { createClient(name: "") { id } }`, "name"],
        [`mutation { createClient(name: "A", email: "nope") { id } }`, "email"],
        [`mutation { createClient(name: "A", currency: "usd") { id } }`, "currency"],
        [`{ clients(limit: 0) { data { id } } }`, "limit"],
        [`{ clients(limit: 101) { data { id } } }`, "limit"],
        [`{ clients(cursor: "junk") { data { id } } }`, "cursor"],
      ] as const) {
        const res = await gql(query);
        expect(res.data, query).toBeNull();
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "validation_failed",
          type: "invalid_request_error",
          param,
          request_id: expect.stringMatching(/^req_/),
        });
      }
      const wrongType = await gql(`mutation ($name: String!) { createClient(name: $name) { id } }`, { name: 5 });
      expect(wrongType.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", type: "invalid_request_error" });

      for (const query of [
        `mutation { updateClient(id: "${MISSING}", name: "x") { id } }`,
        `mutation { deleteClient(id: "${MISSING}") { id } }`,
      ]) {
        const res = await gql(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: "not_found", type: "invalid_request_error" });
      }
      expect(await count()).toBe(0);
    });
  });
});
