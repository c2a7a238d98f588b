import { describe, expect, it } from "vitest";
import { expectNotFound, expectValidationFailed, ISO, ids } from "../../support/assertions.ts";
import { call } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { CLIENT_ID, EMPTY_ADDRESS, MISSING, scratchOf } from "./support.ts";

e2e("clients: create, update, delete", (server) => {
  const { api } = useWorkspace(server);
  const scratch = scratchOf(server);

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
      const res = await api.post("/clients", {
        name: "Partial",
        address: { city: "Oslo", country: "NO" },
        phone: "",
        notes: "   ",
      });
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
      expectValidationFailed(res, param);
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
      address: {
        line1: "2 Cypress Creek",
        line2: "Floor 3",
        city: "Cypress Creek",
        region: "OR",
        postal_code: "97000",
        country: "US",
      },
      currency: "GBP",
      notes: "VIP",
    };

    it("changes only the fields sent; absent fields stay unchanged", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, {
        phone: "555-0200",
        email: "HANK@Globex.Example",
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...created,
        phone: "555-0200",
        email: "hank@globex.example",
        updated_at: expect.stringMatching(ISO),
      });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect(res.body.created_at).toBe(created.created_at);
      expect((await api.get(`/clients/${created.id}`)).body).toEqual(res.body);
    });

    it("renames, changes currency and trims the name", async () => {
      const created = (await api.post("/clients", full)).body;
      const res = await api.patch(`/clients/${created.id}`, { name: "  Globex Intl  ", currency: "JPY" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: "Globex Intl",
        currency: "JPY",
        email: full.email,
        address: full.address,
      });
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
      const res = await api.patch(`/clients/${created.id}`, {
        email: null,
        phone: null,
        company_name: null,
        tax_id: null,
        notes: null,
      });
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
      const moved = await api.patch(`/clients/${created.id}`, {
        address: { city: "Springfield", postal_code: "62701" },
      });
      expect(moved.status).toBe(200);
      expect(moved.body.address).toEqual({ ...full.address, city: "Springfield", postal_code: "62701" });

      const cleared = await api.patch(`/clients/${created.id}`, { address: { line2: null } });
      expect(cleared.status).toBe(200);
      expect(cleared.body.address).toEqual({
        ...full.address,
        city: "Springfield",
        postal_code: "62701",
        line2: null,
      });

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
    ])(
      "rejects PATCH %j with 400 validation_failed on %s without changing the client",
      async (body, param) => {
        const created = (await api.post("/clients", full)).body;
        const res = await api.patch(`/clients/${created.id}`, body);
        expectValidationFailed(res, param);
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
        expect((await api.get(`/clients/${created.id}`)).body).toEqual(created);
      },
    );
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
        expectNotFound(after);
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
        expectNotFound(res);
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
    });
  });
});
