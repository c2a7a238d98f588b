import { beforeAll, describe, expect, it } from "vitest";
import { expectValidationFailed, ids } from "../../support/assertions.ts";
import { call } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, newWorkspace } from "../../support/workspace.ts";
import { scratchOf } from "./support.ts";

e2e("clients: list", (server) => {
  const scratch = scratchOf(server);

  describe("list", () => {
    let own: Tenant;
    let client: Api;
    let made: string[];

    beforeAll(async () => {
      ({ own, client } = await newWorkspace(server()));
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
      expect(res.body).toEqual({
        object: "list",
        data: expect.any(Array),
        has_more: false,
        next_cursor: null,
      });
      expect(ids(res.body)).toEqual([...made].reverse());
      expect(res.body.data[0]).toEqual((await client.get(`/clients/${made[4]}`)).body);
    });

    it("pages with limit and cursor", async () => {
      const first = await client.get("/clients?limit=2");
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(first.body.next_cursor).toEqual(expect.any(String));
      expect(ids(first.body)).toEqual([made[4], made[3]]);
      const second = await client.get(
        `/clients?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      );
      expect(second.body).toMatchObject({ has_more: true });
      expect(ids(second.body)).toEqual([made[2], made[1]]);
      const third = await client.get(
        `/clients?limit=2&cursor=${encodeURIComponent(second.body.next_cursor)}`,
      );
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(third.body)).toEqual([made[0]]);

      const exact = await client.get("/clients?limit=5");
      expect(exact.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(exact.body.data).toHaveLength(5);
    });

    it("defaults to 20 per page and allows up to 100", async () => {
      const { client: c } = await newWorkspace(server());
      for (let i = 0; i < 21; i++)
        expect((await c.post("/clients", { name: `Client ${i}` })).status).toBe(201);
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
      expectValidationFailed(res, param);
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
      const patched = await call("PATCH", `${server().api}/clients/${target.id}?name=Hacked`, {
        key: other.key,
        body: {},
      });
      expect(patched.status).toBe(400);
      expect(patched.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      expect((await c.get(`/clients/${target.id}`)).body).toEqual(target);

      const posted = await call("POST", `${server().api}/clients?name=FromQuery`, {
        key: other.key,
        body: {},
      });
      expect(posted.status).toBe(400);
      expect(posted.body.error).toMatchObject({ code: "validation_failed", param: "name" });
      expect(await count()).toBe(1);
    });
  });
});
