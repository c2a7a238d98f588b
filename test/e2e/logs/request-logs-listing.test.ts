import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { type ApiResponse, raw, rest } from "../../support/http.ts";
import { logged } from "../../support/request-logs.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, allPages, idOf, MISSING_LEAD } from "./support.ts";

e2e("request logs: listing, tenancy and scope", (server) => {
  let tenant: Tenant;

  beforeAll(async () => {
    tenant = await server().tenant();
  });

  describe("listing and filters", () => {
    let ws: Tenant;
    let wsApi: Api;
    let second: { id: string; key: string };
    const ids = { first: [] as string[], second: [] as string[], notFound: [] as string[] };

    beforeAll(async () => {
      ws = await server().tenant();
      wsApi = rest(server().api, ws.key);
      second = await server().key(ws.workspaceId, ["leads.read"]);
      const secondApi = rest(server().api, second.key);
      for (let i = 0; i < 3; i++) ids.first.push(idOf(await wsApi.get("/leads")));
      for (let i = 0; i < 2; i++) {
        const res = await wsApi.get(`/leads/${MISSING_LEAD}`);
        ids.first.push(idOf(res));
        ids.notFound.push(idOf(res));
      }
      for (let i = 0; i < 2; i++) ids.second.push(idOf(await secondApi.get("/leads")));
      await logged(server(), [...ids.first, ...ids.second]);
    });

    it("lists the workspace's requests newest first, with cursor pages", async () => {
      const all = await allPages(wsApi, "");
      const requestIds = all.map((r) => r.request_id);
      for (const id of [...ids.first, ...ids.second]) expect(requestIds).toContain(id);
      expect([...requestIds].sort().reverse()).toEqual(requestIds);

      const pages: string[] = [];
      let cursor: string | null = null;
      let count = 0;
      do {
        const res: ApiResponse = await wsApi.get(`/request-logs?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
        expect(res.status).toBe(200);
        expect(res.body.data.length).toBeLessThanOrEqual(2);
        pages.push(...res.body.data.map((r: any) => r.request_id));
        cursor = res.body.next_cursor;
        expect(res.body.has_more).toBe(cursor !== null);
        count++;
      } while (cursor && count < 50);
      // The paging requests are logged too, but only after the first page was read: the pages hold at least the set above, in order, without repeats.
      expect(new Set(pages).size).toBe(pages.length);
      expect([...pages].sort().reverse()).toEqual(pages);
      for (const id of [...ids.first, ...ids.second]) expect(pages).toContain(id);
    });

    it("filters by key_id", async () => {
      const rows = await allPages(wsApi, `key_id=${second.id}`);
      expect(rows.map((r) => r.request_id).sort()).toEqual([...ids.second].sort());
      expect(rows.every((r) => r.key_id === second.id)).toBe(true);
      const firstKey = await allPages(wsApi, `key_id=${ws.keyId}`);
      for (const id of ids.first) expect(firstKey.map((r) => r.request_id)).toContain(id);
      expect(firstKey.some((r) => ids.second.includes(r.request_id))).toBe(false);
    });

    it("filters by exact status", async () => {
      const rows = await allPages(wsApi, "status=404");
      expect(rows.map((r) => r.request_id).sort()).toEqual([...ids.notFound].sort());
      expect(
        rows.every((r) => r.status === 404 && r.route === "/v1/leads/{id}" && r.error_code === "not_found"),
      ).toBe(true);
      expect(await allPages(wsApi, "status=418")).toEqual([]);
    });

    it("filters by outcome (below 400 or not) together with status, and by request_id", async () => {
      const failed = await allPages(wsApi, "outcome=failed");
      expect(failed.map((r) => r.request_id).sort()).toEqual([...ids.notFound].sort());
      const succeeded = await allPages(wsApi, `outcome=succeeded&key_id=${ws.keyId}`);
      expect(succeeded.every((r) => r.status < 400)).toBe(true);
      for (const id of ids.first.filter((id) => !ids.notFound.includes(id)))
        expect(succeeded.map((r) => r.request_id)).toContain(id);
      expect(succeeded.some((r) => ids.notFound.includes(r.request_id))).toBe(false);
      // status and outcome narrow together: a 404 never succeeded.
      expect(await allPages(wsApi, "outcome=succeeded&status=404")).toEqual([]);

      const one = await allPages(wsApi, `request_id=${ids.notFound[0]}`);
      expect(one).toEqual([expect.objectContaining({ request_id: ids.notFound[0], status: 404 })]);
      expect(await allPages(wsApi, `request_id=${ids.notFound[0]}&outcome=succeeded`)).toEqual([]);

      const gql = graphql(server().url, ws.key);
      const res = await gql(
        `query($id: String) { requestLogs(outcome: failed, request_id: $id) { data { request_id status } } }`,
        { id: ids.notFound[1] },
      );
      expect(res.errors).toBeUndefined();
      expect(res.data.requestLogs.data).toEqual([{ request_id: ids.notFound[1], status: 404 }]);
      const all = await gql(`{ requestLogs(outcome: failed, limit: 100) { data { request_id } } }`);
      expect(all.data.requestLogs.data.map((r: any) => r.request_id).sort()).toEqual(
        [...ids.notFound].sort(),
      );
    });

    it("filters by from (inclusive) and to (exclusive)", async () => {
      const prisma = server().running.db.prisma;
      const rows = await prisma.requestLog.findMany({
        where: { id: { in: ids.second } },
        orderBy: { id: "asc" },
      });
      const [a, b] = rows as [(typeof rows)[0], (typeof rows)[0]];
      const from = a.createdAt.toISOString();
      const to = b.createdAt.toISOString();

      const since = await allPages(wsApi, `key_id=${second.id}&from=${encodeURIComponent(from)}`);
      expect(since.map((r) => r.request_id).sort()).toEqual([a.id, b.id].sort());
      const after = await allPages(
        wsApi,
        `key_id=${second.id}&from=${encodeURIComponent(new Date(b.createdAt.getTime() + 1).toISOString())}`,
      );
      expect(after).toEqual([]);
      const before = await allPages(wsApi, `key_id=${second.id}&to=${encodeURIComponent(to)}`);
      expect(before.map((r) => r.request_id)).toEqual(a.createdAt < b.createdAt ? [a.id] : []);
      const window = await allPages(
        wsApi,
        `key_id=${second.id}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(new Date(b.createdAt.getTime() + 1).toISOString())}`,
      );
      expect(window.map((r) => r.request_id).sort()).toEqual([a.id, b.id].sort());
      // A time zone offset is understood.
      const future = await wsApi.get(`/request-logs?from=${encodeURIComponent("2999-01-01T00:00:00+02:00")}`);
      expect(future.status).toBe(200);
      expect(future.body.data).toEqual([]);
      const past = await wsApi.get("/request-logs?to=2000-01-01T00:00:00Z");
      expect(past.body.data).toEqual([]);
    });

    it.each([
      ["status=abc", "status"],
      ["status=4.5", "status"],
      ["status=42", "status"],
      ["status=600", "status"],
      ["from=yesterday", "from"],
      ["from=2026-01-01", "from"],
      ["to=2026-13-01T00:00:00Z", "to"],
      ["from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z", "to"],
      ["key_id=bogus", "key_id"],
      ["key_id=", "key_id"],
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["cursor=zzz", "cursor"],
      ["request_id=req_x", "request_id"],
      ["outcome=ok", "outcome"],
    ])("rejects %s with 400 validation_failed naming %s", async (query, param) => {
      const res = await wsApi.get(`/request-logs?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "validation_failed",
        param,
      });
      expect(res.body.error.request_id).toBe(idOf(res));
    });

    it("serves the same list and filters over GraphQL", async () => {
      const gql = graphql(server().url, ws.key);
      const res = await gql(
        `query($key: String) { requestLogs(key_id: $key, limit: 100) { object has_more next_cursor data { object request_id key_id method route status latency_ms error_code client_ip user_agent created_at } } }`,
        { key: second.id },
      );
      expect(res.errors).toBeUndefined();
      expect(res.data.requestLogs.object).toBe("list");
      expect(res.data.requestLogs.data.map((r: any) => r.request_id).sort()).toEqual([...ids.second].sort());
      expect(res.data.requestLogs.data[0]).toMatchObject({
        object: "request_log",
        key_id: second.id,
        method: "GET",
        route: "/v1/leads",
        status: 200,
      });

      const bad = await gql(`{ requestLogs(status: 42) { data { request_id } } }`);
      expect(bad.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "status" });
      // A bad literal fails validation of the whole document: 400 (graphql-request would throw on it).
      const badFrom = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${ws.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          query: `query($from: DateTime) { requestLogs(from: $from) { data { request_id } } }`,
          variables: { from: "yesterday" },
        }),
      });
      expect(badFrom.json.errors?.[0]?.extensions.code).toBe("validation_failed");
    });
  });

  describe("tenancy and scope", () => {
    it("never shows another workspace's rows", async () => {
      const a = await server().tenant();
      const b = await server().tenant();
      const aApi = rest(server().api, a.key);
      const bApi = rest(server().api, b.key);
      const aIds = [idOf(await aApi.get("/leads")), idOf(await aApi.get(`/leads/${MISSING_LEAD}`))];
      const bIds = [idOf(await bApi.get("/leads")), idOf(await bApi.get(`/leads/${MISSING_LEAD}`))];
      await logged(server(), [...aIds, ...bIds]);

      const aRows = await allPages(aApi, "");
      expect(aRows.map((r) => r.request_id)).toEqual(expect.arrayContaining(aIds));
      expect(aRows.some((r) => bIds.includes(r.request_id))).toBe(false);
      const stored = await server().running.db.prisma.requestLog.findMany({
        where: { id: { in: aRows.map((r) => r.request_id) } },
      });
      expect(stored).toHaveLength(aRows.length);
      expect(stored.every((row) => row.workspaceId === a.workspaceId)).toBe(true);

      // Another workspace's key id filters to nothing; its stats are not counted.
      expect(await allPages(aApi, `key_id=${b.keyId}`)).toEqual([]);
      const statsByB = await aApi.get(`/request-logs/stats?key_id=${b.keyId}`);
      expect(statsByB.body.total).toBe(0);
      const gql = await graphql(server().url, a.key)(
        `query($k: String) { requestLogs(key_id: $k) { data { request_id } } }`,
        { k: b.keyId },
      );
      expect(gql.data.requestLogs.data).toEqual([]);
    });

    it("needs logs.read (403 insufficient_scope otherwise), over REST and GraphQL", async () => {
      for (const scopes of [["leads.read"], ["logs.write"]]) {
        const key = await server().key(tenant.workspaceId, scopes);
        const keyApi = rest(server().api, key.key);
        for (const path of ["/request-logs", "/request-logs/stats"]) {
          const res = await keyApi.get(path);
          expect(res.status, `${scopes} ${path}`).toBe(403);
          expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "logs.read" });
        }
        const gql = await graphql(server().url, key.key)(`{ requestLogs { data { request_id } } }`);
        expect(gql.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "logs.read",
        });
        const gqlStats = await graphql(server().url, key.key)(`{ requestLogStats { total } }`);
        expect(gqlStats.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "logs.read",
        });
      }
      const reader = await server().key(tenant.workspaceId, ["logs.read"]);
      expect((await rest(server().api, reader.key).get("/request-logs")).status).toBe(200);
    });
  });
});
