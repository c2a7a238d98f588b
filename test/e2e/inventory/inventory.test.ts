import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { expectHidden, ids } from "../../support/assertions.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ITEM_ID = /^item_[0-9A-HJKMNP-TV-Z]{26}$/;
const NEVER = "item_01J00000000000000000000000";
const ITEM_FIELDS = `object id name sku description category quantity unit_of_measure min_stock_threshold
  cost_price sale_price currency suppliers { name email phone supplier_sku cost_price } status created_at updated_at`;

e2e("inventory", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  /** A fresh workspace whose items and events are under the test's control. */
  async function scratch(scopes?: string[]) {
    const own = await server().tenant(scopes ? { scopes } : {});
    const client = rest(server().api, own.key);
    const count = () => server().running.db.prisma.inventoryItem.count({ where: { workspaceId: own.workspaceId } });
    /** The inventory.* outbox events of the workspace, oldest first. */
    const events = async () =>
      (await server().running.db.prisma.event.findMany({ where: { workspaceId: own.workspaceId }, orderBy: { id: "asc" } }))
        .filter((event) => event.type.startsWith("inventory."))
        .map((event) => ({ type: event.type, data: event.data as Record<string, any> }));
    return { own, client, count, events };
  }

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
          { name: "Boltwerk", email: "Orders@Boltwerk.Example", phone: "+49 30 1234", supplier_sku: "BW-8", cost_price: 0.12 },
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
          { name: "Boltwerk", email: "orders@boltwerk.example", phone: "+49 30 1234", supplier_sku: "BW-8", cost_price: 0.12 },
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
      const res = await api.post("/inventory/items", { name: "Blank", sku: "", description: "  ", category: "" });
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
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(0);
      expect(await events()).toEqual([]);
    });
  });

  describe("status", () => {
    it.each([
      [0, 0, "out_of_stock"],
      [0, 10, "out_of_stock"],
      [0.001, 0, "in_stock"],
      [0.001, 0.001, "low_stock"],
      [10, 10, "low_stock"],
      [9.999, 10, "low_stock"],
      [10.001, 10, "in_stock"],
      [2.5, 2.499, "in_stock"],
      [0.3, 0.3, "low_stock"],
      [1, 0, "in_stock"],
    ])("quantity %s with threshold %s is %s on create and on PATCH", async (quantity, min_stock_threshold, status) => {
      const created = await api.post("/inventory/items", { name: "Boundary", quantity, min_stock_threshold });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ quantity, min_stock_threshold, status });

      // Reach the same pair by PATCH from the other side of the rule.
      const start = status === "in_stock" ? { quantity: 0 } : { quantity: 1_000, min_stock_threshold: 0 };
      const other = (await api.post("/inventory/items", { name: "Boundary", ...start })).body;
      expect(other.status).not.toBe(status);
      const patched = await api.patch(`/inventory/items/${other.id}`, { quantity, min_stock_threshold });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ quantity, min_stock_threshold, status });
    });

    it("recomputes when only the threshold changes, and when only the quantity changes", async () => {
      const item = (await api.post("/inventory/items", { name: "Widget", quantity: 5, min_stock_threshold: 2 })).body;
      expect(item.status).toBe("in_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 5 })).body.status).toBe("low_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 4.999 })).body.status).toBe("in_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { quantity: 4.999 })).body.status).toBe("low_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { quantity: 0 })).body.status).toBe("out_of_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { name: "Widget 2" })).body).toMatchObject({ name: "Widget 2", status: "out_of_stock" });
      expect((await api.get(`/inventory/items/${item.id}`)).body).toMatchObject({ quantity: 0, min_stock_threshold: 4.999, status: "out_of_stock" });
    });

    it("is read-only: PATCH refuses it and keeps the computed value", async () => {
      const item = (await api.post("/inventory/items", { name: "Fixed", quantity: 3 })).body;
      const res = await api.patch(`/inventory/items/${item.id}`, { status: "out_of_stock" });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param: "status" });
      expect((await api.get(`/inventory/items/${item.id}`)).body).toEqual(item);
    });

    it("stays right when quantity and threshold are patched at the same time by two requests", async () => {
      for (let round = 0; round < 5; round++) {
        const item = (await api.post("/inventory/items", { name: `Race ${round}`, quantity: 100, min_stock_threshold: 0 })).body;
        const [a, b] = await Promise.all([
          api.patch(`/inventory/items/${item.id}`, { quantity: 5 }),
          api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 10 }),
        ]);
        expect([a.status, b.status]).toEqual([200, 200]);
        expect((await api.get(`/inventory/items/${item.id}`)).body).toMatchObject({ quantity: 5, min_stock_threshold: 10, status: "low_stock" });
      }
    });
  });

  describe("events", () => {
    it("creation in low_stock or out_of_stock emits the event with the item as GET returns it; in_stock emits nothing", async () => {
      const { client, events } = await scratch();
      const healthy = (await client.post("/inventory/items", { name: "Healthy", quantity: 50, min_stock_threshold: 5 })).body;
      expect(healthy.status).toBe("in_stock");
      expect(await events()).toEqual([]);

      const low = (await client.post("/inventory/items", { name: "Low", quantity: 5, min_stock_threshold: 5, suppliers: [{ name: "S", cost_price: 1 }] })).body;
      const out = (await client.post("/inventory/items", { name: "Out" })).body;
      expect(await events()).toEqual([
        { type: "inventory.low_stock", data: low },
        { type: "inventory.out_of_stock", data: out },
      ]);
      expect((await client.get(`/inventory/items/${low.id}`)).body).toEqual(low);
    });

    it("emits on each move into a warning status and never while the status stays or recovers", async () => {
      const { client, events } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Gasket", quantity: 100, min_stock_threshold: 10 })).body;
      const patch = async (body: object) => {
        const res = await client.patch(`/inventory/items/${item.id}`, body);
        expect(res.status).toBe(200);
        return res.body;
      };
      const expected: { type: string; data: unknown }[] = [];

      await patch({ quantity: 50 }); // in_stock → in_stock
      expect(await events()).toEqual(expected);

      const low = await patch({ quantity: 10 }); // → low_stock
      expected.push({ type: "inventory.low_stock", data: low });
      expect(await events()).toEqual(expected);
      expect(low.status).toBe("low_stock");

      await patch({ quantity: 3 }); // low_stock → low_stock
      await patch({ description: "Rubber", min_stock_threshold: 9 }); // still low_stock
      expect(await events()).toEqual(expected);

      const out = await patch({ quantity: 0 }); // → out_of_stock
      expected.push({ type: "inventory.out_of_stock", data: out });
      await patch({ quantity: 0 }); // out_of_stock → out_of_stock
      await patch({ min_stock_threshold: 0 }); // still out_of_stock
      expect(await events()).toEqual(expected);

      const lowAgain = await patch({ quantity: 0.5, min_stock_threshold: 1 }); // out_of_stock → low_stock
      expected.push({ type: "inventory.low_stock", data: lowAgain });
      const restocked = await patch({ quantity: 500 }); // → in_stock: no event
      expect(restocked.status).toBe("in_stock");
      expect(await events()).toEqual(expected);

      const direct = await patch({ quantity: 0 }); // in_stock → out_of_stock directly
      expected.push({ type: "inventory.out_of_stock", data: direct });
      expect(await events()).toEqual(expected);
      expect((await client.get(`/inventory/items/${item.id}`)).body).toEqual(direct);
    });

    it("a rejected write emits nothing", async () => {
      const { client, events } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Valve", sku: "V-1", quantity: 10, min_stock_threshold: 1 })).body;
      const other = (await client.post("/inventory/items", { name: "Valve 2", sku: "V-2", quantity: 10 })).body;
      expect((await client.patch(`/inventory/items/${other.id}`, { sku: "V-1", quantity: 0 })).status).toBe(409);
      expect((await client.patch(`/inventory/items/${item.id}`, { quantity: 0, colour: "red" })).status).toBe(400);
      expect((await client.post("/inventory/items", { name: "Dup", sku: "V-1", quantity: 0 })).status).toBe(409);
      expect(await events()).toEqual([]);
    });

    it("deleting an item emits nothing", async () => {
      const { client, events } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Gone", quantity: 4 })).body;
      expect((await client.delete(`/inventory/items/${item.id}`)).status).toBe(200);
      expect(await events()).toEqual([]);
    });
  });

  describe("sku", () => {
    it("a duplicate sku on create is 409 sku_taken and writes nothing", async () => {
      const { client, count } = await scratch();
      const first = (await client.post("/inventory/items", { name: "Cable", sku: "CBL-1" })).body;
      const res = await client.post("/inventory/items", { name: "Other cable", sku: "CBL-1", quantity: 3 });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "sku_taken", param: "sku" });
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
      const res = await client.patch(`/inventory/items/${other.id}`, { sku: "CBL-1", name: "Renamed", quantity: 0 });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "sku_taken", param: "sku" });
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
      expect((await client.patch(`/inventory/items/${holder.id}`, { sku: "FREE-1" })).body.sku).toBe("FREE-1");
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
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => client.post("/inventory/items", { name: `Racer ${i}`, sku: "RACE" })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
      for (const res of results.filter((r) => r.status === 409)) expect(res.body.error.code).toBe("sku_taken");
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

      const cleared = await api.patch(`/inventory/items/${created.id}`, { sku: null, description: null, category: null, cost_price: null, sale_price: null });
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

      const replaced = await api.patch(`/inventory/items/${created.id}`, { suppliers: [{ name: "Only One", supplier_sku: "OO-9", cost_price: 38.5 }] });
      expect(replaced.body.suppliers).toEqual([{ name: "Only One", email: null, phone: null, supplier_sku: "OO-9", cost_price: 38.5 }]);
      expect(replaced.body).toMatchObject({ name: "Drill", quantity: 7, status: "in_stock" });

      const untouched = await api.patch(`/inventory/items/${created.id}`, { unit_of_measure: "box", currency: "GBP" });
      expect(untouched.body.suppliers).toEqual(replaced.body.suppliers);
      expect(untouched.body).toMatchObject({ unit_of_measure: "box", currency: "GBP" });

      expect((await api.patch(`/inventory/items/${created.id}`, { suppliers: [] })).body.suppliers).toEqual([]);
      await api.patch(`/inventory/items/${created.id}`, { suppliers: [{ name: "Back" }] });
      expect((await api.patch(`/inventory/items/${created.id}`, { suppliers: null })).body.suppliers).toEqual([]);

      const empty = await api.patch(`/inventory/items/${created.id}`, {});
      expect(empty.status).toBe(200);
      expect(empty.body).toMatchObject({ name: "Drill", quantity: 7, unit_of_measure: "box", currency: "GBP", suppliers: [] });

      const deleted = await api.delete(`/inventory/items/${created.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: created.id, object: "inventory_item", deleted: true });
      for (const res of [
        await api.get(`/inventory/items/${created.id}`),
        await api.patch(`/inventory/items/${created.id}`, { name: "x" }),
        await api.delete(`/inventory/items/${created.id}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found" });
      }
    });

    it("rejects bad PATCH input without changing the item", async () => {
      const created = (await api.post("/inventory/items", { name: "Saw", quantity: 4, suppliers: [{ name: "Kept" }] })).body;
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
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found", param: "id" });
      }
    });

    it("takes write fields from the JSON body only, and refuses unknown query parameters on by-id routes", async () => {
      const { own, client, count } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Original" })).body;
      const patched = await call("PATCH", `${server().api}/inventory/items/${item.id}?quantity=5`, { key: own.key, body: {} });
      expect(patched.status).toBe(400);
      expect(patched.body.error).toMatchObject({ code: "validation_failed", param: "quantity" });
      const posted = await call("POST", `${server().api}/inventory/items?name=FromQuery`, { key: own.key, body: {} });
      expect(posted.status).toBe(400);
      expect(posted.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      const expanded = await client.get(`/inventory/items/${item.id}?expand=suppliers`);
      expect(expanded.body.error).toMatchObject({ code: "validation_failed", param: "expand" });
      expect(await count()).toBe(1);
      expect((await client.get(`/inventory/items/${item.id}`)).body).toEqual(item);
    });
  });

  describe("list", () => {
    let client: ReturnType<typeof rest>;
    let made: Record<string, string>;

    beforeAll(async () => {
      const own = await server().tenant();
      client = rest(server().api, own.key);
      made = {};
      for (const [key, body] of Object.entries({
        hammer: { name: "Claw hammer", sku: "HAM-16", category: "Tools", quantity: 12, min_stock_threshold: 3 },
        nails: { name: "Nails 50mm", sku: "NL-50", category: "Fasteners", quantity: 2, min_stock_threshold: 10, description: "For the HAMMER" },
        screws: { name: "Wood screws", sku: "SCR-4", category: "Fasteners", quantity: 0 },
        tape: { name: "Duct tape", category: "tools", quantity: 40, description: "Silver" },
        glue: { name: "Glue", sku: "GL-1", quantity: 5, min_stock_threshold: 5 },
      })) {
        const res = await client.post("/inventory/items", body);
        expect(res.status).toBe(201);
        made[key] = res.body.id;
      }
    });

    const list = async (query = "") => {
      const res = await client.get(`/inventory/items${query}`);
      expect(res.status, query).toBe(200);
      return ids(res.body);
    };

    it("pages newest first with limit and cursor", async () => {
      const first = await client.get("/inventory/items?limit=2");
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(ids(first.body)).toEqual([made.glue, made.tape]);
      const second = await client.get(`/inventory/items?limit=2&cursor=${first.body.next_cursor}`);
      expect(ids(second.body)).toEqual([made.screws, made.nails]);
      const third = await client.get(`/inventory/items?limit=2&cursor=${second.body.next_cursor}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(third.body)).toEqual([made.hammer]);
      expect(await list()).toEqual([made.glue, made.tape, made.screws, made.nails, made.hammer]);
    });

    it("filters by status", async () => {
      expect(await list("?status=in_stock")).toEqual([made.tape, made.hammer]);
      expect(await list("?status=low_stock")).toEqual([made.glue, made.nails]);
      expect(await list("?status=out_of_stock")).toEqual([made.screws]);
    });

    it("filters by exact category", async () => {
      expect(await list("?category=Fasteners")).toEqual([made.screws, made.nails]);
      expect(await list("?category=Tools")).toEqual([made.hammer]);
      expect(await list("?category=tools")).toEqual([made.tape]);
      expect(await list("?category=Tool")).toEqual([]);
      expect(await list("?category=Fasteners&status=low_stock")).toEqual([made.nails]);
    });

    it("searches name, sku, category and description case-insensitively", async () => {
      expect(await list("?search=HAMMER")).toEqual([made.nails, made.hammer]); // name and description
      expect(await list("?search=ham-1")).toEqual([made.hammer]); // sku
      expect(await list("?search=fasten")).toEqual([made.screws, made.nails]); // category
      expect(await list("?search=silver")).toEqual([made.tape]); // description
      expect(await list("?search=zzz")).toEqual([]);
      expect(await list("?search=tools&category=Tools")).toEqual([made.hammer]);
      expect(await list("?search=%20%20")).toHaveLength(5);
    });

    it("pages through filtered results", async () => {
      const first = await client.get("/inventory/items?status=low_stock&limit=1");
      expect(ids(first.body)).toEqual([made.glue]);
      const second = await client.get(`/inventory/items?status=low_stock&limit=1&cursor=${first.body.next_cursor}`);
      expect(ids(second.body)).toEqual([made.nails]);
      expect(second.body).toMatchObject({ has_more: false, next_cursor: null });
    });

    it.each([
      ["status=running_low", "status"],
      ["status=IN_STOCK", "status"],
      ["status=", "status"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=-1", "limit"],
      ["limit=abc", "limit"],
      ["limit=1.5", "limit"],
      ["limit=1&limit=2", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["cursor=djE6bGVhZF94", "cursor"],
      ["cursor=", "cursor"],
      ["category=a&category=b", "category"],
      ["sku=HAM-16", "sku"],
      ["colour=red", "colour"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      const res = await client.get(`/inventory/items?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
    });
  });

  describe("tenancy", () => {
    let a: Awaited<ReturnType<typeof scratch>>;
    let b: Awaited<ReturnType<typeof scratch>>;
    let theirs: { id: string }[];
    let snapshot: unknown;

    const snapshotOfB = async () => [
      (await b.client.get("/inventory/items?limit=100")).body,
      ...(await Promise.all(theirs.map(async (item) => (await b.client.get(`/inventory/items/${item.id}`)).body))),
      await b.events(),
    ];

    beforeAll(async () => {
      a = await scratch();
      b = await scratch();
      await a.client.post("/inventory/items", { name: "Alpha shared bolt", sku: "SHARED-A", category: "Shared", quantity: 10 });
      theirs = [];
      for (const body of [
        { name: "Bravo shared bolt", sku: "SHARED-B", category: "Shared", quantity: 10, min_stock_threshold: 1 },
        { name: "Bravo empty bin", category: "Shared", description: "bravo only" },
      ]) {
        theirs.push((await b.client.post("/inventory/items", body)).body);
      }
      snapshot = await snapshotOfB();
    });

    it("another workspace's id is 404 on every route, like an id that never existed, and nothing changes", async () => {
      for (const { id } of theirs) {
        expectHidden(await a.client.get(`/inventory/items/${id}`), await a.client.get(`/inventory/items/${NEVER}`), id, NEVER);
        for (const body of [{ quantity: 0 }, { name: "Hijacked", sku: null, suppliers: [] }, {}]) {
          expectHidden(await a.client.patch(`/inventory/items/${id}`, body), await a.client.patch(`/inventory/items/${NEVER}`, body), id, NEVER);
        }
        expectHidden(await a.client.delete(`/inventory/items/${id}`), await a.client.delete(`/inventory/items/${NEVER}`), id, NEVER);
      }
      expect(await snapshotOfB()).toEqual(snapshot);
    });

    it("lists never show another workspace's items, whatever the filter", async () => {
      for (const query of ["", "?search=shared", "?search=bravo", "?search=SHARED-B", "?category=Shared", "?status=in_stock", "?status=out_of_stock"]) {
        const res = await a.client.get(`/inventory/items${query}`);
        expect(res.status, query).toBe(200);
        for (const item of theirs) expect(ids(res.body), query).not.toContain(item.id);
      }
      expect(ids((await a.client.get("/inventory/items?search=bravo")).body)).toEqual([]);
      expect((await a.client.get("/inventory/items?category=Shared")).body.data).toHaveLength(1);
    });

    it("over GraphQL too: null with not_found for reads and mutations, no rows in lists", async () => {
      const gql = graphql(server().url, a.own.key);
      for (const { id } of theirs) {
        const read = await gql(`query ($id: ID!) { inventoryItem(id: $id) { id name } }`, { id });
        const ref = await gql(`query ($id: ID!) { inventoryItem(id: $id) { id name } }`, { id: NEVER });
        expect(read.data).toEqual({ inventoryItem: null });
        const { request_id: _a, ...ext } = read.errors![0]!.extensions;
        const { request_id: _b, ...refExt } = ref.errors![0]!.extensions;
        expect(ext).toMatchObject({ code: "not_found", type: "invalid_request_error" });
        expect(ext).toEqual(refExt);
        expect(read.errors![0]!.message).toBe(ref.errors![0]!.message.replaceAll(NEVER, id));

        for (const mutation of [
          `mutation ($id: ID!) { updateInventoryItem(id: $id, quantity: 0, name: "Hijacked") { id } }`,
          `mutation ($id: ID!) { deleteInventoryItem(id: $id) { id deleted } }`,
        ]) {
          const res = await gql(mutation, { id });
          expect(res.data, mutation).toBeNull();
          expect(res.errors?.[0]?.extensions, mutation).toMatchObject({ code: "not_found", type: "invalid_request_error" });
        }
      }
      const lists = await gql(`{
        all: inventoryItems(limit: 100) { data { id } }
        shared: inventoryItems(search: "shared") { data { id } }
        bravo: inventoryItems(search: "BRAVO") { data { id } }
        category: inventoryItems(category: "Shared") { data { id } }
      }`);
      expect(lists.errors).toBeUndefined();
      expect(lists.data.all.data).toHaveLength(1);
      expect(lists.data.bravo.data).toEqual([]);
      const serialized = JSON.stringify(lists.data);
      for (const item of theirs) expect(serialized).not.toContain(item.id);
      expect(await snapshotOfB()).toEqual(snapshot);
    });
  });

  describe("scopes", () => {
    it("a read-only key reads but cannot write (403 inventory.write), and nothing is written", async () => {
      const { own, client, count, events } = await scratch();
      const existing = (await client.post("/inventory/items", { name: "Existing", quantity: 9 })).body;
      const reader = rest(server().api, (await server().key(own.workspaceId, ["inventory.read"])).key);
      expect((await reader.get("/inventory/items")).body.data).toEqual([existing]);
      expect((await reader.get(`/inventory/items/${existing.id}`)).body).toEqual(existing);
      for (const res of [
        await reader.post("/inventory/items", { name: "Sneaky" }),
        await reader.patch(`/inventory/items/${existing.id}`, { quantity: 0 }),
        await reader.delete(`/inventory/items/${existing.id}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "inventory.write" });
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
      expect(await count()).toBe(1);
      expect(await events()).toEqual([]);
      expect((await client.get(`/inventory/items/${existing.id}`)).body).toEqual(existing);
    });

    it("a write-only key writes but cannot list or retrieve (403 inventory.read)", async () => {
      const { own, client } = await scratch();
      const writer = rest(server().api, (await server().key(own.workspaceId, ["inventory.write"])).key);
      const created = await writer.post("/inventory/items", { name: "Write only", quantity: 3 });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ object: "inventory_item", name: "Write only", status: "in_stock" });
      expect((await client.get(`/inventory/items/${created.body.id}`)).body).toEqual(created.body);
      for (const res of [await writer.get("/inventory/items"), await writer.get(`/inventory/items/${created.body.id}`)]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "inventory.read" });
      }
      const patched = await writer.patch(`/inventory/items/${created.body.id}`, { quantity: 0 });
      expect(patched.status).toBe(200);
      expect(patched.body.status).toBe("out_of_stock");
      expect((await writer.delete(`/inventory/items/${created.body.id}`)).status).toBe(200);
      expect((await client.get(`/inventory/items/${created.body.id}`)).status).toBe(404);
    });

    it("a key without inventory scopes gets 403 on every route", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/inventory/items", { name: "Existing" })).body;
      const other = rest(server().api, (await server().key(own.workspaceId, ["leads.read", "leads.write", "clients.read", "clients.write"])).key);
      for (const [pending, scope] of [
        [other.get("/inventory/items"), "inventory.read"],
        [other.get(`/inventory/items/${existing.id}`), "inventory.read"],
        [other.post("/inventory/items", { name: "x" }), "inventory.write"],
        [other.patch(`/inventory/items/${existing.id}`, { name: "x" }), "inventory.write"],
        [other.delete(`/inventory/items/${existing.id}`), "inventory.write"],
      ] as const) {
        const res = await pending;
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/inventory/items/${existing.id}`)).body).toEqual(existing);
    });

    it("applies the same scopes over GraphQL", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/inventory/items", { name: "Existing" })).body;
      const writer = graphql(server().url, (await server().key(own.workspaceId, ["inventory.write"])).key);
      const reader = graphql(server().url, (await server().key(own.workspaceId, ["inventory.read"])).key);

      const made = await writer(`mutation { createInventoryItem(name: "Via GraphQL") { object id name status } }`);
      expect(made.errors).toBeUndefined();
      expect(made.data.createInventoryItem).toMatchObject({ object: "inventory_item", name: "Via GraphQL", status: "out_of_stock" });

      for (const query of [`{ inventoryItems { data { id } } }`, `{ inventoryItem(id: "${existing.id}") { id } }`]) {
        const res = await writer(query);
        expect(Object.values(res.data ?? {}).every((v) => v === null)).toBe(true);
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          type: "permission_error",
          required_scope: "inventory.read",
          request_id: expect.stringMatching(/^req_/),
        });
      }
      for (const query of [
        `mutation { createInventoryItem(name: "Nope") { id } }`,
        `mutation { updateInventoryItem(id: "${existing.id}", quantity: 5) { id } }`,
        `mutation { deleteInventoryItem(id: "${existing.id}") { id } }`,
      ]) {
        const res = await reader(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "inventory.write" });
      }
      expect(await count()).toBe(2);
      expect((await client.get(`/inventory/items/${existing.id}`)).body).toEqual(existing);
    });
  });

  describe("over GraphQL", () => {
    it("creates, reads, updates and deletes with the vocabulary REST uses", async () => {
      const { own, events } = await scratch();
      const gql = graphql(server().url, own.key);
      const made = await gql(
        `mutation ($suppliers: [InventorySupplierInput!]) {
          createInventoryItem(name: "Router", sku: "RT-1", category: "Network", quantity: 3, min_stock_threshold: 3, cost_price: 59.9, suppliers: $suppliers) { ${ITEM_FIELDS} }
        }`,
        { suppliers: [{ name: "NetCo", email: "Sales@NetCo.Example", cost_price: 55 }] },
      );
      expect(made.errors).toBeUndefined();
      const created = made.data.createInventoryItem;
      expect(created).toEqual({
        object: "inventory_item",
        id: expect.stringMatching(ITEM_ID),
        name: "Router",
        sku: "RT-1",
        description: null,
        category: "Network",
        quantity: 3,
        unit_of_measure: "pcs",
        min_stock_threshold: 3,
        cost_price: 59.9,
        sale_price: null,
        currency: "USD",
        suppliers: [{ name: "NetCo", email: "sales@netco.example", phone: null, supplier_sku: null, cost_price: 55 }],
        status: "low_stock",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(await events()).toEqual([{ type: "inventory.low_stock", data: created }]);

      expect((await rest(server().api, own.key).get(`/inventory/items/${created.id}`)).body).toEqual(created);
      const read = await gql(`query ($id: ID!) { inventoryItem(id: $id) { ${ITEM_FIELDS} } }`, { id: created.id });
      expect(read.errors).toBeUndefined();
      expect(read.data.inventoryItem).toEqual(created);

      const updated = await gql(
        `mutation ($id: ID!) { updateInventoryItem(id: $id, quantity: 0, category: null, suppliers: [{ name: "Other", phone: "123" }]) { quantity category status suppliers { name phone email } name sku } }`,
        { id: created.id },
      );
      expect(updated.errors).toBeUndefined();
      expect(updated.data.updateInventoryItem).toEqual({
        quantity: 0,
        category: null,
        status: "out_of_stock",
        suppliers: [{ name: "Other", phone: "123", email: null }],
        name: "Router",
        sku: "RT-1",
      });
      expect((await events()).map((event) => event.type)).toEqual(["inventory.low_stock", "inventory.out_of_stock"]);

      const list = await gql(`{ inventoryItems(status: out_of_stock, search: "rout", limit: 1) { object has_more next_cursor data { id status } } }`);
      expect(list.errors).toBeUndefined();
      expect(list.data.inventoryItems).toEqual({ object: "list", has_more: false, next_cursor: null, data: [{ id: created.id, status: "out_of_stock" }] });
      const none = await gql(`{ inventoryItems(status: in_stock) { data { id } } low: inventoryItems(category: "Network") { data { id } } }`);
      expect(none.data).toEqual({ inventoryItems: { data: [] }, low: { data: [] } });

      const deleted = await gql(`mutation ($id: ID!) { deleteInventoryItem(id: $id) { id object deleted } }`, { id: created.id });
      expect(deleted.errors).toBeUndefined();
      expect(deleted.data.deleteInventoryItem).toEqual({ id: created.id, object: "inventory_item", deleted: true });
      const gone = await gql(`query ($id: ID!) { inventoryItem(id: $id) { id } }`, { id: created.id });
      expect(gone.data).toEqual({ inventoryItem: null });
      expect(gone.errors?.[0]?.extensions).toMatchObject({ code: "not_found", request_id: expect.stringMatching(/^req_/) });
    });

    it("pages with limit and cursor", async () => {
      const { own } = await scratch();
      const gql = graphql(server().url, own.key);
      const made: string[] = [];
      for (const name of ["One", "Two", "Three"]) made.push((await gql(`mutation ($name: String!) { createInventoryItem(name: $name) { id } }`, { name })).data.createInventoryItem.id);
      const first = await gql(`{ inventoryItems(limit: 2) { has_more next_cursor data { id } } }`);
      expect(first.data.inventoryItems).toMatchObject({ has_more: true });
      expect(ids(first.data.inventoryItems)).toEqual([made[2], made[1]]);
      const second = await gql(`query ($c: String) { inventoryItems(limit: 2, cursor: $c) { has_more next_cursor data { id } } }`, {
        c: first.data.inventoryItems.next_cursor,
      });
      expect(second.data.inventoryItems).toEqual({ has_more: false, next_cursor: null, data: [{ id: made[0] }] });
    });

    it("reports sku_taken, validation and not-found errors with code, param and request_id, and writes nothing", async () => {
      const { own, count, events } = await scratch();
      const gql = graphql(server().url, own.key);
      await gql(`mutation { createInventoryItem(name: "Holder", sku: "TAKEN", quantity: 5) { id } }`);
      const other = (await gql(`mutation { createInventoryItem(name: "Other", quantity: 5) { id } }`)).data.createInventoryItem;

      for (const [query, code, param] of [
        [`mutation { createInventoryItem(name: "Dup", sku: "TAKEN") { id } }`, "sku_taken", "sku"],
        [`mutation { updateInventoryItem(id: "${other.id}", sku: "TAKEN", quantity: 0) { id } }`, "sku_taken", "sku"],
        [`mutation { createInventoryItem(name: "") { id } }`, "validation_failed", "name"],
        [`mutation { createInventoryItem(name: "A", suppliers: [{ name: "S", email: "bad" }]) { id } }`, "validation_failed", "suppliers[0].email"],
        [`mutation { createInventoryItem(name: "A", suppliers: [{ name: " " }]) { id } }`, "validation_failed", "suppliers[0].name"],
        [`mutation { createInventoryItem(name: "A", currency: "usd") { id } }`, "validation_failed", "currency"],
        [`mutation { updateInventoryItem(id: "${other.id}", quantity: null) { id } }`, "validation_failed", "quantity"],
        [`mutation { updateInventoryItem(id: "${other.id}", name: null) { id } }`, "validation_failed", "name"],
        [`{ inventoryItems(limit: 0) { data { id } } }`, "validation_failed", "limit"],
        [`{ inventoryItems(cursor: "junk") { data { id } } }`, "validation_failed", "cursor"],
        [`mutation { updateInventoryItem(id: "${NEVER}", quantity: 1) { id } }`, "not_found", "id"],
        [`mutation { deleteInventoryItem(id: "${NEVER}") { id } }`, "not_found", "id"],
      ] as const) {
        const res = await gql(query);
        expect(res.data, query).toBeNull();
        expect(res.errors?.[0]?.extensions, query).toMatchObject({ code, type: "invalid_request_error", param, request_id: expect.stringMatching(/^req_/) });
      }

      // Values the schema itself refuses never reach a resolver: the document or its variables are invalid.
      for (const [query, variables] of [
        [`mutation { createInventoryItem(name: "A", quantity: -1) { id } }`, undefined],
        [`mutation { createInventoryItem(name: "A", cost_price: -1) { id } }`, undefined],
        [`mutation { createInventoryItem(name: "A", suppliers: [{ name: "S", website: "x" }]) { id } }`, undefined],
        [`mutation { createInventoryItem(name: "A", status: in_stock) { id } }`, undefined],
        [`{ inventoryItems(status: running_low) { data { id } } }`, undefined],
        [`mutation ($q: Quantity) { createInventoryItem(name: "A", min_stock_threshold: $q) { id } }`, { q: -0.5 }],
        [`mutation ($q: Quantity) { createInventoryItem(name: "A", quantity: $q) { id } }`, { q: "12" }],
      ] as const) {
        const res = await gql(query, variables);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({ code: "validation_failed", type: "invalid_request_error" });
      }

      expect(await count()).toBe(2);
      expect(await events()).toEqual([]);
      expect((await rest(server().api, own.key).get(`/inventory/items/${other.id}`)).body).toMatchObject({ sku: null, quantity: 5 });
    });
  });
});
