import { beforeAll, describe, expect, it } from "vitest";
import { expectHiddenAt, expectInsufficientScope, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { NEVER, scratchOf } from "./support.ts";

e2e("inventory: tenancy and scopes", (server) => {
  const scratch = scratchOf(server);

  describe("tenancy", () => {
    let a: Awaited<ReturnType<typeof scratch>>;
    let b: Awaited<ReturnType<typeof scratch>>;
    let theirs: { id: string }[];
    let snapshot: unknown;

    const snapshotOfB = async () => [
      (await b.client.get("/inventory/items?limit=100")).body,
      ...(await Promise.all(
        theirs.map(async (item) => (await b.client.get(`/inventory/items/${item.id}`)).body),
      )),
      await b.events(),
    ];

    beforeAll(async () => {
      a = await scratch();
      b = await scratch();
      await a.client.post("/inventory/items", {
        name: "Alpha shared bolt",
        sku: "SHARED-A",
        category: "Shared",
        quantity: 10,
      });
      theirs = [];
      for (const body of [
        {
          name: "Bravo shared bolt",
          sku: "SHARED-B",
          category: "Shared",
          quantity: 10,
          min_stock_threshold: 1,
        },
        { name: "Bravo empty bin", category: "Shared", description: "bravo only" },
      ]) {
        theirs.push((await b.client.post("/inventory/items", body)).body);
      }
      snapshot = await snapshotOfB();
    });

    it("another workspace's id is 404 on every route, like an id that never existed, and nothing changes", async () => {
      for (const { id } of theirs) {
        await expectHiddenAt((item) => a.client.get(`/inventory/items/${item}`), id, NEVER);
        for (const body of [{ quantity: 0 }, { name: "Hijacked", sku: null, suppliers: [] }, {}]) {
          await expectHiddenAt((item) => a.client.patch(`/inventory/items/${item}`, body), id, NEVER);
        }
        await expectHiddenAt((item) => a.client.delete(`/inventory/items/${item}`), id, NEVER);
      }
      expect(await snapshotOfB()).toEqual(snapshot);
    });

    it("lists never show another workspace's items, whatever the filter", async () => {
      for (const query of [
        "",
        "?search=shared",
        "?search=bravo",
        "?search=SHARED-B",
        "?category=Shared",
        "?status=in_stock",
        "?status=out_of_stock",
      ]) {
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
          expect(res.errors?.[0]?.extensions, mutation).toMatchObject({
            code: "not_found",
            type: "invalid_request_error",
          });
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
        expectInsufficientScope(res, "inventory.write");
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
      expect(created.body).toMatchObject({
        object: "inventory_item",
        name: "Write only",
        status: "in_stock",
      });
      expect((await client.get(`/inventory/items/${created.body.id}`)).body).toEqual(created.body);
      for (const res of [
        await writer.get("/inventory/items"),
        await writer.get(`/inventory/items/${created.body.id}`),
      ]) {
        expectInsufficientScope(res, "inventory.read");
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
      const other = rest(
        server().api,
        (await server().key(own.workspaceId, ["leads.read", "leads.write", "clients.read", "clients.write"]))
          .key,
      );
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

      const made = await writer(
        `mutation { createInventoryItem(name: "Via GraphQL") { object id name status } }`,
      );
      expect(made.errors).toBeUndefined();
      expect(made.data.createInventoryItem).toMatchObject({
        object: "inventory_item",
        name: "Via GraphQL",
        status: "out_of_stock",
      });

      for (const query of [
        `{ inventoryItems { data { id } } }`,
        `{ inventoryItem(id: "${existing.id}") { id } }`,
      ]) {
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
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "inventory.write",
        });
      }
      expect(await count()).toBe(2);
      expect((await client.get(`/inventory/items/${existing.id}`)).body).toEqual(existing);
    });
  });
});
