import { beforeAll, describe, expect, it } from "vitest";
import { expectValidationFailed, ids } from "../../support/assertions.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, newWorkspace } from "../../support/workspace.ts";

e2e("inventory: list", (server) => {
  describe("list", () => {
    let client: Api;
    let made: Record<string, string>;

    beforeAll(async () => {
      ({ client } = await newWorkspace(server()));
      made = {};
      for (const [key, body] of Object.entries({
        hammer: {
          name: "Claw hammer",
          sku: "HAM-16",
          category: "Tools",
          quantity: 12,
          min_stock_threshold: 3,
        },
        nails: {
          name: "Nails 50mm",
          sku: "NL-50",
          category: "Fasteners",
          quantity: 2,
          min_stock_threshold: 10,
          description: "For the HAMMER",
        },
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
      const second = await client.get(
        `/inventory/items?status=low_stock&limit=1&cursor=${first.body.next_cursor}`,
      );
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
      expectValidationFailed(res, param);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
    });
  });
});
