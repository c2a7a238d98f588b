import { describe, expect, it } from "vitest";
import { ISO, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { ITEM_FIELDS, ITEM_ID, NEVER, scratchOf } from "./support.ts";

e2e("inventory: over GraphQL", (server) => {
  const scratch = scratchOf(server);

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
        suppliers: [
          { name: "NetCo", email: "sales@netco.example", phone: null, supplier_sku: null, cost_price: 55 },
        ],
        status: "low_stock",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect(await events()).toEqual([{ type: "inventory.low_stock", data: created }]);

      expect((await rest(server().api, own.key).get(`/inventory/items/${created.id}`)).body).toEqual(created);
      const read = await gql(`query ($id: ID!) { inventoryItem(id: $id) { ${ITEM_FIELDS} } }`, {
        id: created.id,
      });
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
      expect((await events()).map((event) => event.type)).toEqual([
        "inventory.low_stock",
        "inventory.out_of_stock",
      ]);

      const list = await gql(
        `{ inventoryItems(status: out_of_stock, search: "rout", limit: 1) { object has_more next_cursor data { id status } } }`,
      );
      expect(list.errors).toBeUndefined();
      expect(list.data.inventoryItems).toEqual({
        object: "list",
        has_more: false,
        next_cursor: null,
        data: [{ id: created.id, status: "out_of_stock" }],
      });
      const none = await gql(
        `{ inventoryItems(status: in_stock) { data { id } } low: inventoryItems(category: "Network") { data { id } } }`,
      );
      expect(none.data).toEqual({ inventoryItems: { data: [] }, low: { data: [] } });

      const deleted = await gql(
        `mutation ($id: ID!) { deleteInventoryItem(id: $id) { id object deleted } }`,
        { id: created.id },
      );
      expect(deleted.errors).toBeUndefined();
      expect(deleted.data.deleteInventoryItem).toEqual({
        id: created.id,
        object: "inventory_item",
        deleted: true,
      });
      const gone = await gql(`query ($id: ID!) { inventoryItem(id: $id) { id } }`, { id: created.id });
      expect(gone.data).toEqual({ inventoryItem: null });
      expect(gone.errors?.[0]?.extensions).toMatchObject({
        code: "not_found",
        request_id: expect.stringMatching(/^req_/),
      });
    });

    it("pages with limit and cursor", async () => {
      const { own } = await scratch();
      const gql = graphql(server().url, own.key);
      const made: string[] = [];
      for (const name of ["One", "Two", "Three"])
        made.push(
          (await gql(`mutation ($name: String!) { createInventoryItem(name: $name) { id } }`, { name })).data
            .createInventoryItem.id,
        );
      const first = await gql(`{ inventoryItems(limit: 2) { has_more next_cursor data { id } } }`);
      expect(first.data.inventoryItems).toMatchObject({ has_more: true });
      expect(ids(first.data.inventoryItems)).toEqual([made[2], made[1]]);
      const second = await gql(
        `query ($c: String) { inventoryItems(limit: 2, cursor: $c) { has_more next_cursor data { id } } }`,
        {
          c: first.data.inventoryItems.next_cursor,
        },
      );
      expect(second.data.inventoryItems).toEqual({
        has_more: false,
        next_cursor: null,
        data: [{ id: made[0] }],
      });
    });

    it("reports sku_taken, validation and not-found errors with code, param and request_id, and writes nothing", async () => {
      const { own, count, events } = await scratch();
      const gql = graphql(server().url, own.key);
      await gql(`mutation { createInventoryItem(name: "Holder", sku: "TAKEN", quantity: 5) { id } }`);
      const other = (await gql(`mutation { createInventoryItem(name: "Other", quantity: 5) { id } }`)).data
        .createInventoryItem;

      for (const [query, code, param] of [
        [`mutation { createInventoryItem(name: "Dup", sku: "TAKEN") { id } }`, "sku_taken", "sku"],
        [
          `mutation { updateInventoryItem(id: "${other.id}", sku: "TAKEN", quantity: 0) { id } }`,
          "sku_taken",
          "sku",
        ],
        [`mutation { createInventoryItem(name: "") { id } }`, "validation_failed", "name"],
        [
          `mutation { createInventoryItem(name: "A", suppliers: [{ name: "S", email: "bad" }]) { id } }`,
          "validation_failed",
          "suppliers[0].email",
        ],
        [
          `mutation { createInventoryItem(name: "A", suppliers: [{ name: " " }]) { id } }`,
          "validation_failed",
          "suppliers[0].name",
        ],
        [
          `mutation { createInventoryItem(name: "A", currency: "usd") { id } }`,
          "validation_failed",
          "currency",
        ],
        [
          `mutation { updateInventoryItem(id: "${other.id}", quantity: null) { id } }`,
          "validation_failed",
          "quantity",
        ],
        [
          `mutation { updateInventoryItem(id: "${other.id}", name: null) { id } }`,
          "validation_failed",
          "name",
        ],
        [`{ inventoryItems(limit: 0) { data { id } } }`, "validation_failed", "limit"],
        [`{ inventoryItems(cursor: "junk") { data { id } } }`, "validation_failed", "cursor"],
        [`mutation { updateInventoryItem(id: "${NEVER}", quantity: 1) { id } }`, "not_found", "id"],
        [`mutation { deleteInventoryItem(id: "${NEVER}") { id } }`, "not_found", "id"],
      ] as const) {
        const res = await gql(query);
        expect(res.data, query).toBeNull();
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code,
          type: "invalid_request_error",
          param,
          request_id: expect.stringMatching(/^req_/),
        });
      }

      // Values the schema itself refuses never reach a resolver: the document or its variables are invalid.
      for (const [query, variables] of [
        [`mutation { createInventoryItem(name: "A", quantity: -1) { id } }`, undefined],
        [`mutation { createInventoryItem(name: "A", cost_price: -1) { id } }`, undefined],
        [
          `mutation { createInventoryItem(name: "A", suppliers: [{ name: "S", website: "x" }]) { id } }`,
          undefined,
        ],
        [`mutation { createInventoryItem(name: "A", status: in_stock) { id } }`, undefined],
        [`{ inventoryItems(status: running_low) { data { id } } }`, undefined],
        [
          `mutation ($q: Quantity) { createInventoryItem(name: "A", min_stock_threshold: $q) { id } }`,
          { q: -0.5 },
        ],
        [`mutation ($q: Quantity) { createInventoryItem(name: "A", quantity: $q) { id } }`, { q: "12" }],
      ] as const) {
        const res = await gql(query, variables);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "validation_failed",
          type: "invalid_request_error",
        });
      }

      expect(await count()).toBe(2);
      expect(await events()).toEqual([]);
      expect((await rest(server().api, own.key).get(`/inventory/items/${other.id}`)).body).toMatchObject({
        sku: null,
        quantity: 5,
      });
    });
  });
});
