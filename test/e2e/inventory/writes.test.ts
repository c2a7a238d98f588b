import { describe, expect, it } from "vitest";
import { expectNotFound, expectValidationFailed, ISO } from "../../support/assertions.ts";
import { call } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { ITEM_ID, NEVER, scratchOf } from "./support.ts";

e2e("inventory: create, sku, read, update, delete", (server) => {
  const { api } = useWorkspace(server);
  const scratch = scratchOf(server);

  describe("create", () => {
    it("creates an item with 201 and the full flat object", async () => {
      const res = await api.post("/inventory/items", {
        name: "  Hex bolt M8  ",
        sku: " HB-M8 ",
        description: "Zinc plated",
        category: "Fasteners",
        quantity: 120.5,
        unit_of_measure: "kg",
        min_stock_threshold: 20,
        cost_price: 0.15,
        sale_price: 0.4,
        currency: "EUR",
        suppliers: [
          {
            name: "Boltwerk",
            email: "Orders@Boltwerk.Example",
            phone: "+49 30 1234",
            supplier_sku: "BW-8",
            cost_price: 0.12,
          },
          { name: "  Second Source  " },
        ],
      });
      expect(res.status).toBe(201);
      expect(res.headers.get("x-request-id")).toMatch(/^req_/);
      expect(res.body).toEqual({
        object: "inventory_item",
        id: expect.stringMatching(ITEM_ID),
        name: "Hex bolt M8",
        sku: "HB-M8",
        description: "Zinc plated",
        category: "Fasteners",
        quantity: 120.5,
        unit_of_measure: "kg",
        min_stock_threshold: 20,
        cost_price: 0.15,
        sale_price: 0.4,
        currency: "EUR",
        suppliers: [
          {
            name: "Boltwerk",
            email: "orders@boltwerk.example",
            phone: "+49 30 1234",
            supplier_sku: "BW-8",
            cost_price: 0.12,
          },
          { name: "Second Source", email: null, phone: null, supplier_sku: null, cost_price: null },
        ],
        status: "in_stock",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(res.body.updated_at).toBe(res.body.created_at);
      expect((await api.get(`/inventory/items/${res.body.id}`)).body).toEqual(res.body);
    });

    it("needs only a name: quantity and threshold 0, pcs, USD, no suppliers, so out_of_stock", async () => {
      const res = await api.post("/inventory/items", { name: "Minimal" });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        object: "inventory_item",
        id: expect.stringMatching(ITEM_ID),
        name: "Minimal",
        sku: null,
        description: null,
        category: null,
        quantity: 0,
        unit_of_measure: "pcs",
        min_stock_threshold: 0,
        cost_price: null,
        sale_price: null,
        currency: "USD",
        suppliers: [],
        status: "out_of_stock",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
    });

    it("treats empty optional strings as null", async () => {
      const res = await api.post("/inventory/items", {
        name: "Blank",
        sku: "",
        description: "  ",
        category: "",
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ sku: null, description: null, category: null });
    });

    it.each([
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: null }, "name"],
      [{ name: 5 }, "name"],
      [{ name: "A", quantity: -1 }, "quantity"],
      [{ name: "A", quantity: -0.001 }, "quantity"],
      [{ name: "A", quantity: "5" }, "quantity"],
      [{ name: "A", quantity: "lots" }, "quantity"],
      [{ name: "A", quantity: true }, "quantity"],
      [{ name: "A", quantity: 1.0001 }, "quantity"],
      [{ name: "A", quantity: null }, "quantity"],
      [{ name: "A", min_stock_threshold: -5 }, "min_stock_threshold"],
      [{ name: "A", min_stock_threshold: "ten" }, "min_stock_threshold"],
      [{ name: "A", min_stock_threshold: null }, "min_stock_threshold"],
      [{ name: "A", cost_price: -1 }, "cost_price"],
      [{ name: "A", cost_price: 1.234 }, "cost_price"],
      [{ name: "A", sale_price: -0.01 }, "sale_price"],
      [{ name: "A", sale_price: "9.99" }, "sale_price"],
      [{ name: "A", unit_of_measure: "" }, "unit_of_measure"],
      [{ name: "A", unit_of_measure: null }, "unit_of_measure"],
      [{ name: "A", currency: "usd" }, "currency"],
      [{ name: "A", currency: null }, "currency"],
      [{ name: "A", sku: 42 }, "sku"],
      [{ name: "A", status: "in_stock" }, "status"],
      [{ name: "A", id: "item_x" }, "id"],
      [{ name: "A", colour: "red" }, "colour"],
      [{ name: "A", suppliers: [{ name: "S", website: "https://s.example" }] }, "suppliers[0].website"],
      [{ name: "A", suppliers: { name: "S" } }, "suppliers"],
      [{ name: "A", suppliers: [{ name: "S" }, { name: "T", fax: "1" }] }, "suppliers[1].fax"],
      [{ name: "A", suppliers: [{ name: "S", email: "not-an-email" }] }, "suppliers[0].email"],
      [{ name: "A", suppliers: [{ name: "S" }, { name: "T", email: "t@" }] }, "suppliers[1].email"],
      [{ name: "A", suppliers: [{ name: "" }] }, "suppliers[0].name"],
      [{ name: "A", suppliers: [{ name: "S", cost_price: -2 }] }, "suppliers[0].cost_price"],
      [{ name: "A", suppliers: [{ name: "S", cost_price: "2" }] }, "suppliers[0].cost_price"],
      [{ name: "A", suppliers: [{ name: 7 }] }, "suppliers[0].name"],
      [{ name: "A", suppliers: [{ name: "S" }, { email: "s@example.com" }] }, "suppliers[1].name"],
      [{ name: "A", suppliers: [null] }, "suppliers[0]"],
      [{ name: "A", suppliers: ["Boltwerk"] }, "suppliers[0]"],
    ])("rejects %j with 400 validation_failed on %s and writes nothing", async (body, param) => {
      const { client, count, events } = await scratch();
      const res = await client.post("/inventory/items", body);
      expectValidationFailed(res, param);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(0);
      expect(await events()).toEqual([]);
    });
  });

  describe("sku", () => {
    it("a duplicate sku on create is 409 sku_taken and writes nothing", async () => {
      const { client, count } = await scratch();
      const first = (await client.post("/inventory/items", { name: "Cable", sku: "CBL-1" })).body;
      const res = await client.post("/inventory/items", { name: "Other cable", sku: "CBL-1", quantity: 3 });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "sku_taken",
        param: "sku",
      });
      expect(res.body.error.message).toContain("CBL-1");
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(1);
      expect((await client.get("/inventory/items")).body.data).toEqual([first]);

      // Surrounding whitespace is trimmed before comparison.
      expect((await client.post("/inventory/items", { name: "Padded", sku: "  CBL-1 " })).status).toBe(409);
      expect(await count()).toBe(1);
    });

    it("a duplicate sku on PATCH is 409 sku_taken and changes nothing", async () => {
      const { client } = await scratch();
      await client.post("/inventory/items", { name: "Cable", sku: "CBL-1" });
      const other = (await client.post("/inventory/items", { name: "Plug", sku: "PLG-1", quantity: 8 })).body;
      const res = await client.patch(`/inventory/items/${other.id}`, {
        sku: "CBL-1",
        name: "Renamed",
        quantity: 0,
      });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "sku_taken",
        param: "sku",
      });
      expect((await client.get(`/inventory/items/${other.id}`)).body).toEqual(other);

      const same = await client.patch(`/inventory/items/${other.id}`, { sku: "PLG-1", name: "Plug v2" });
      expect(same.status).toBe(200);
      expect(same.body).toMatchObject({ sku: "PLG-1", name: "Plug v2" });
    });

    it("is case-sensitive, optional (many items without sku), and freed by clearing or deleting", async () => {
      const { client, count } = await scratch();
      expect((await client.post("/inventory/items", { name: "A", sku: "abc" })).status).toBe(201);
      expect((await client.post("/inventory/items", { name: "B", sku: "ABC" })).status).toBe(201);
      for (const body of [{ name: "C" }, { name: "D", sku: null }, { name: "E", sku: "" }]) {
        const res = await client.post("/inventory/items", body);
        expect(res.status).toBe(201);
        expect(res.body.sku).toBeNull();
      }
      expect(await count()).toBe(5);

      const holder = (await client.post("/inventory/items", { name: "Holder", sku: "FREE-1" })).body;
      expect((await client.patch(`/inventory/items/${holder.id}`, { sku: null })).body.sku).toBeNull();
      const taker = (await client.post("/inventory/items", { name: "Taker", sku: "FREE-1" })).body;
      expect(taker.sku).toBe("FREE-1");
      expect((await client.delete(`/inventory/items/${taker.id}`)).status).toBe(200);
      expect((await client.patch(`/inventory/items/${holder.id}`, { sku: "FREE-1" })).body.sku).toBe(
        "FREE-1",
      );
    });

    it("the same sku in two workspaces is fine", async () => {
      const a = await scratch();
      const b = await scratch();
      const inA = await a.client.post("/inventory/items", { name: "Shared", sku: "SAME-1" });
      const inB = await b.client.post("/inventory/items", { name: "Shared", sku: "SAME-1" });
      expect([inA.status, inB.status]).toEqual([201, 201]);
      const otherB = (await b.client.post("/inventory/items", { name: "Other", sku: "B-ONLY" })).body;
      expect((await a.client.post("/inventory/items", { name: "Other", sku: "B-ONLY" })).status).toBe(201);
      expect((await b.client.patch(`/inventory/items/${otherB.id}`, { sku: "SAME-2" })).status).toBe(200);
      expect((await a.client.patch(`/inventory/items/${inA.body.id}`, { sku: "SAME-2" })).status).toBe(200);
    });

    it("concurrent creates with one sku: exactly one wins, the others get 409", async () => {
      const { client, count } = await scratch();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          client.post("/inventory/items", { name: `Racer ${i}`, sku: "RACE" }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      for (const res of results.filter((r) => r.status === 409))
        expect(res.body.error.code).toBe("sku_taken");
      expect(await count()).toBe(1);
    });
  });

  describe("read, update, delete", () => {
    it("patches only what is sent, clears optional fields with null, replaces suppliers, then deletes", async () => {
      const created = (
        await api.post("/inventory/items", {
          name: "Drill",
          sku: "DR-1",
          description: "Cordless",
          category: "Tools",
          quantity: 7,
          min_stock_threshold: 2,
          cost_price: 40,
          sale_price: 79.99,
          suppliers: [{ name: "Makers", email: "m@makers.example" }, { name: "Backup" }],
        })
      ).body;
      expect((await api.get(`/inventory/items/${created.id}`)).body).toEqual(created);

      const cleared = await api.patch(`/inventory/items/${created.id}`, {
        sku: null,
        description: null,
        category: null,
        cost_price: null,
        sale_price: null,
      });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toEqual({
        ...created,
        sku: null,
        description: null,
        category: null,
        cost_price: null,
        sale_price: null,
        updated_at: expect.stringMatching(ISO),
      });
      expect(Date.parse(cleared.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));

      const replaced = await api.patch(`/inventory/items/${created.id}`, {
        suppliers: [{ name: "Only One", supplier_sku: "OO-9", cost_price: 38.5 }],
      });
      expect(replaced.body.suppliers).toEqual([
        { name: "Only One", email: null, phone: null, supplier_sku: "OO-9", cost_price: 38.5 },
      ]);
      expect(replaced.body).toMatchObject({ name: "Drill", quantity: 7, status: "in_stock" });

      const untouched = await api.patch(`/inventory/items/${created.id}`, {
        unit_of_measure: "box",
        currency: "GBP",
      });
      expect(untouched.body.suppliers).toEqual(replaced.body.suppliers);
      expect(untouched.body).toMatchObject({ unit_of_measure: "box", currency: "GBP" });

      expect((await api.patch(`/inventory/items/${created.id}`, { suppliers: [] })).body.suppliers).toEqual(
        [],
      );
      await api.patch(`/inventory/items/${created.id}`, { suppliers: [{ name: "Back" }] });
      expect((await api.patch(`/inventory/items/${created.id}`, { suppliers: null })).body.suppliers).toEqual(
        [],
      );

      const empty = await api.patch(`/inventory/items/${created.id}`, {});
      expect(empty.status).toBe(200);
      expect(empty.body).toMatchObject({
        name: "Drill",
        quantity: 7,
        unit_of_measure: "box",
        currency: "GBP",
        suppliers: [],
      });

      const deleted = await api.delete(`/inventory/items/${created.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: created.id, object: "inventory_item", deleted: true });
      for (const res of [
        await api.get(`/inventory/items/${created.id}`),
        await api.patch(`/inventory/items/${created.id}`, { name: "x" }),
        await api.delete(`/inventory/items/${created.id}`),
      ]) {
        expectNotFound(res);
      }
    });

    it("rejects bad PATCH input without changing the item", async () => {
      const created = (
        await api.post("/inventory/items", { name: "Saw", quantity: 4, suppliers: [{ name: "Kept" }] })
      ).body;
      for (const [body, param] of [
        [{ name: null }, "name"],
        [{ name: "" }, "name"],
        [{ quantity: null }, "quantity"],
        [{ quantity: -3 }, "quantity"],
        [{ quantity: "0" }, "quantity"],
        [{ min_stock_threshold: null }, "min_stock_threshold"],
        [{ min_stock_threshold: -1 }, "min_stock_threshold"],
        [{ cost_price: -0.5 }, "cost_price"],
        [{ sale_price: -10 }, "sale_price"],
        [{ unit_of_measure: " " }, "unit_of_measure"],
        [{ currency: "EURO" }, "currency"],
        [{ suppliers: [{ name: "New", email: "nope" }] }, "suppliers[0].email"],
        [{ suppliers: [{ name: "New", website: "x" }] }, "suppliers[0].website"],
        [{ suppliers: [{ name: "  " }] }, "suppliers[0].name"],
        [{ status: "in_stock" }, "status"],
        [{ created_at: "2020-01-01T00:00:00Z" }, "created_at"],
        [{ id: NEVER }, "id"],
        [{ quantity: 0, unknown_field: 1 }, "unknown_field"],
      ] as const) {
        const res = await api.patch(`/inventory/items/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error, JSON.stringify(body)).toMatchObject({ code: "validation_failed", param });
      }
      expect((await api.get(`/inventory/items/${created.id}`)).body).toEqual(created);
    });

    it("answers 404 not_found for an unknown id", async () => {
      for (const res of [
        await api.get(`/inventory/items/${NEVER}`),
        await api.patch(`/inventory/items/${NEVER}`, { name: "x" }),
        await api.delete(`/inventory/items/${NEVER}`),
        await api.get("/inventory/items/not-even-an-id"),
      ]) {
        expectNotFound(res, "id");
      }
    });

    it("takes write fields from the JSON body only, and refuses unknown query parameters on by-id routes", async () => {
      const { own, client, count } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Original" })).body;
      const patched = await call("PATCH", `${server().api}/inventory/items/${item.id}?quantity=5`, {
        key: own.key,
        body: {},
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error).toMatchObject({ code: "validation_failed", param: "quantity" });
      const posted = await call("POST", `${server().api}/inventory/items?name=FromQuery`, {
        key: own.key,
        body: {},
      });
      expect(posted.status).toBe(400);
      expect(posted.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      const expanded = await client.get(`/inventory/items/${item.id}?expand=suppliers`);
      expect(expanded.body.error).toMatchObject({ code: "validation_failed", param: "expand" });
      expect(await count()).toBe(1);
      expect((await client.get(`/inventory/items/${item.id}`)).body).toEqual(item);
    });
  });
});
