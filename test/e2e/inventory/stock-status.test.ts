import { describe, expect, it } from "vitest";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { scratchOf } from "./support.ts";

e2e("inventory: stock status and events", (server) => {
  const { api } = useWorkspace(server);
  const scratch = scratchOf(server);

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
    ])(
      "quantity %s with threshold %s is %s on create and on PATCH",
      async (quantity, min_stock_threshold, status) => {
        const created = await api.post("/inventory/items", {
          name: "Boundary",
          quantity,
          min_stock_threshold,
        });
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({ quantity, min_stock_threshold, status });

        // Reach the same pair by PATCH from the other side of the rule.
        const start = status === "in_stock" ? { quantity: 0 } : { quantity: 1_000, min_stock_threshold: 0 };
        const other = (await api.post("/inventory/items", { name: "Boundary", ...start })).body;
        expect(other.status).not.toBe(status);
        const patched = await api.patch(`/inventory/items/${other.id}`, { quantity, min_stock_threshold });
        expect(patched.status).toBe(200);
        expect(patched.body).toMatchObject({ quantity, min_stock_threshold, status });
      },
    );

    it("recomputes when only the threshold changes, and when only the quantity changes", async () => {
      const item = (
        await api.post("/inventory/items", { name: "Widget", quantity: 5, min_stock_threshold: 2 })
      ).body;
      expect(item.status).toBe("in_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 5 })).body.status).toBe(
        "low_stock",
      );
      expect(
        (await api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 4.999 })).body.status,
      ).toBe("in_stock");
      expect((await api.patch(`/inventory/items/${item.id}`, { quantity: 4.999 })).body.status).toBe(
        "low_stock",
      );
      expect((await api.patch(`/inventory/items/${item.id}`, { quantity: 0 })).body.status).toBe(
        "out_of_stock",
      );
      expect((await api.patch(`/inventory/items/${item.id}`, { name: "Widget 2" })).body).toMatchObject({
        name: "Widget 2",
        status: "out_of_stock",
      });
      expect((await api.get(`/inventory/items/${item.id}`)).body).toMatchObject({
        quantity: 0,
        min_stock_threshold: 4.999,
        status: "out_of_stock",
      });
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
        const item = (
          await api.post("/inventory/items", { name: `Race ${round}`, quantity: 100, min_stock_threshold: 0 })
        ).body;
        const [a, b] = await Promise.all([
          api.patch(`/inventory/items/${item.id}`, { quantity: 5 }),
          api.patch(`/inventory/items/${item.id}`, { min_stock_threshold: 10 }),
        ]);
        expect([a.status, b.status]).toEqual([200, 200]);
        expect((await api.get(`/inventory/items/${item.id}`)).body).toMatchObject({
          quantity: 5,
          min_stock_threshold: 10,
          status: "low_stock",
        });
      }
    });
  });

  describe("events", () => {
    it("creation in low_stock or out_of_stock emits the event with the item as GET returns it; in_stock emits nothing", async () => {
      const { client, events } = await scratch();
      const healthy = (
        await client.post("/inventory/items", { name: "Healthy", quantity: 50, min_stock_threshold: 5 })
      ).body;
      expect(healthy.status).toBe("in_stock");
      expect(await events()).toEqual([]);

      const low = (
        await client.post("/inventory/items", {
          name: "Low",
          quantity: 5,
          min_stock_threshold: 5,
          suppliers: [{ name: "S", cost_price: 1 }],
        })
      ).body;
      const out = (await client.post("/inventory/items", { name: "Out" })).body;
      expect(await events()).toEqual([
        { type: "inventory.low_stock", data: low },
        { type: "inventory.out_of_stock", data: out },
      ]);
      expect((await client.get(`/inventory/items/${low.id}`)).body).toEqual(low);
    });

    it("emits on each move into a warning status and never while the status stays or recovers", async () => {
      const { client, events } = await scratch();
      const item = (
        await client.post("/inventory/items", { name: "Gasket", quantity: 100, min_stock_threshold: 10 })
      ).body;
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
      const item = (
        await client.post("/inventory/items", {
          name: "Valve",
          sku: "V-1",
          quantity: 10,
          min_stock_threshold: 1,
        })
      ).body;
      const other = (await client.post("/inventory/items", { name: "Valve 2", sku: "V-2", quantity: 10 }))
        .body;
      expect((await client.patch(`/inventory/items/${other.id}`, { sku: "V-1", quantity: 0 })).status).toBe(
        409,
      );
      expect((await client.patch(`/inventory/items/${item.id}`, { quantity: 0, colour: "red" })).status).toBe(
        400,
      );
      expect((await client.post("/inventory/items", { name: "Dup", sku: "V-1", quantity: 0 })).status).toBe(
        409,
      );
      expect(await events()).toEqual([]);
    });

    it("deleting an item emits nothing", async () => {
      const { client, events } = await scratch();
      const item = (await client.post("/inventory/items", { name: "Gone", quantity: 4 })).body;
      expect((await client.delete(`/inventory/items/${item.id}`)).status).toBe(200);
      expect(await events()).toEqual([]);
    });
  });
});
