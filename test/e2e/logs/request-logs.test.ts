import { beforeAll, describe, expect, it, vi } from "vitest";
import { ulid } from "ulid";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { openDatabase } from "../../../server/db/open.ts";
import { startServer } from "../../../server/runtime/server.ts";
import { deleteExpiredRequestLogs, flushRequestLogs, requestLogWriter, type RequestLogRow } from "../../../server/observability/request-log.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { graphql } from "../../support/graphql.ts";
import { raw, rest, type ApiResponse } from "../../support/http.ts";
import { provisionStack, type TestServer, type Tenant } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { logged } from "../../support/request-logs.ts";
import { e2e } from "../../support/suite.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MISSING_LEAD = "lead_01J00000000000000000000000";
const UA = "kontor-request-log-test/1.0";
const DAY_MS = 86_400_000;

type Api = ReturnType<typeof rest>;

const idOf = (res: { headers: Headers }) => {
  const id = res.headers.get("x-request-id");
  expect(id).toMatch(/^req_[0-9A-Z]{26}$/);
  return id!;
};

/** Every page of a list, following next_cursor. */
async function allPages(api: Api, query: string) {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = query ? "&" : "";
    const res: ApiResponse = await api.get(`/request-logs?${query}${sep}limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    items.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

/** PostgreSQL's percentile_cont over the latencies, to check the SQL against. */
function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = p * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

function oldRow(workspaceId: string | null, createdAt: Date, extra: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    id: `req_${ulid(createdAt.getTime())}`,
    workspaceId,
    credentialId: null,
    method: "GET",
    route: "/v1/leads",
    status: 200,
    latencyMs: 5,
    errorCode: null,
    clientIp: "192.0.2.1",
    userAgent: "inserted-by-test",
    createdAt,
    ...extra,
  };
}

e2e("request logs", (server) => {
  let tenant: Tenant;
  let api: Api;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  describe("writing", () => {
    it("an error body's request_id finds its log row, with the route template, status, error code, latency, key, IP and user agent", async () => {
      const res = await api.get(`/leads/${MISSING_LEAD}`, { "user-agent": UA });
      expect(res.status).toBe(404);
      const requestId = res.body.error.request_id;
      expect(requestId).toBe(idOf(res));
      await logged(server(), [requestId]);

      const list = await api.get(`/request-logs?key_id=${tenant.keyId}&status=404`);
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      expect(list.body.object).toBe("list");
      const row = list.body.data.find((r: any) => r.request_id === requestId);
      expect(row, "the log row of the failed request").toBeDefined();
      expect(row).toEqual({
        object: "request_log",
        request_id: requestId,
        key_id: tenant.keyId,
        method: "GET",
        route: "/v1/leads/{id}",
        status: 404,
        latency_ms: expect.any(Number),
        error_code: "not_found",
        client_ip: expect.stringMatching(/^(127\.0\.0\.1|::1)$/),
        user_agent: UA,
        model: null,
        input_tokens: null,
        output_tokens: null,
        created_at: expect.stringMatching(ISO),
      });
      expect(Number.isInteger(row.latency_ms) && row.latency_ms >= 0).toBe(true);
      expect(JSON.stringify(row)).not.toContain(MISSING_LEAD);
      // created_at is when the request arrived: within the last minute.
      expect(Math.abs(Date.now() - Date.parse(row.created_at))).toBeLessThan(60_000);
    });

    it("logs a successful request with no error code", async () => {
      const res = await api.post("/leads", { first_name: "Logged" });
      expect(res.status).toBe(201);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))).toMatchObject({
        workspaceId: tenant.workspaceId,
        credentialId: tenant.keyId,
        method: "POST",
        route: "/v1/leads",
        status: 201,
        errorCode: null,
      });
    });

    it("stores a user agent with quotes, braces, commas, backslashes and non-ASCII exactly", async () => {
      const agent = `weird "agent", {braced} \\ back\\slash NULL - ünïcode`;
      const res = await api.get("/workspace", { "user-agent": agent });
      expect(res.status).toBe(200);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))!.userAgent).toBe(agent);
    });

    it("logs GraphQL requests with the route /graphql, and a field error's code", async () => {
      const ok = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", "user-agent": UA },
        body: JSON.stringify({ query: "{ workspace { id } }" }),
      });
      expect(ok.status).toBe(200);
      expect(ok.json.data.workspace.id).toBe(tenant.workspaceId);
      const failed = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: `{ lead(id: "${MISSING_LEAD}") { id } }` }),
      });
      expect(failed.json.errors[0].extensions.code).toBe("not_found");
      const failedId = failed.json.errors[0].extensions.request_id;
      expect(failedId).toBe(idOf(failed));

      const rows = await logged(server(), [idOf(ok), failedId]);
      expect(rows.get(idOf(ok))).toMatchObject({
        workspaceId: tenant.workspaceId,
        credentialId: tenant.keyId,
        method: "POST",
        route: "/graphql",
        status: 200,
        errorCode: null,
        userAgent: UA,
      });
      expect(rows.get(failedId)).toMatchObject({ route: "/graphql", status: 200, errorCode: "not_found", credentialId: tenant.keyId });
    });

    it("logs unauthenticated 401s without a workspace or key, under the route template", async () => {
      const none = await raw(`${server().api}/leads/${MISSING_LEAD}`, { headers: { "user-agent": UA } });
      expect(none.status).toBe(401);
      const bad = await raw(`${server().api}/leads`, { headers: { authorization: "Bearer ktr_live_nope" } });
      expect(bad.status).toBe(401);
      const noneId = none.json.error.request_id as string;
      const badId = bad.json.error.request_id as string;
      expect(noneId).toBe(idOf(none));

      const rows = await logged(server(), [noneId, badId]);
      expect(rows.get(noneId)).toMatchObject({
        workspaceId: null,
        credentialId: null,
        method: "GET",
        route: "/v1/leads/{id}",
        status: 401,
        errorCode: "unauthenticated",
        userAgent: UA,
      });
      expect(rows.get(noneId)!.clientIp).toMatch(/^(127\.0\.0\.1|::1)$/);
      expect(rows.get(badId)).toMatchObject({ workspaceId: null, credentialId: null, route: "/v1/leads", status: 401, errorCode: "invalid_token" });

      // No workspace's API shows them.
      const listed = await allPages(api, "status=401");
      expect(listed.map((r) => r.request_id)).not.toContain(noneId);
      expect(listed.map((r) => r.request_id)).not.toContain(badId);
    });

    it("logs a path no route matches with route null, never the raw path", async () => {
      const res = await api.get("/no-such-thing/123");
      expect(res.status).toBe(404);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))).toMatchObject({ route: null, status: 404, errorCode: "not_found", workspaceId: tenant.workspaceId });
    });

    it("a failing database is logged, does not break requests, and the rows are written once it recovers", async () => {
      const s = server();
      const prisma = s.running.db.prisma;
      const writer = requestLogWriter(s.running.db)!;
      expect(writer).toBeDefined();
      const resume = writer.pauseBackgroundFlush();
      await prisma.$executeRawUnsafe(
        "create or replace function kontor_test_break_logs() returns trigger language plpgsql as $$ begin raise exception 'logs unavailable'; end $$",
      );
      await prisma.$executeRawUnsafe("create trigger kontor_test_break_logs before insert on request_logs for each row execute function kontor_test_break_logs()");
      try {
        const res = await api.get("/workspace");
        expect(res.status).toBe(200);
        const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
        let written: string[];
        try {
          await flushRequestLogs(s.running.db); // fails: logged, not thrown
        } finally {
          written = stderr.mock.calls.map(([chunk]) => String(chunk));
          stderr.mockRestore();
        }
        const lines = written.filter((line) => line.includes("request log flush failed"));
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0]!)).toMatchObject({ level: "error", msg: "request log flush failed", rows: 1, dropped: 0 });
        expect(await prisma.requestLog.count({ where: { id: idOf(res) } })).toBe(0);
        expect(writer.pending).toBeGreaterThanOrEqual(1);
        const again = await api.get("/workspace");
        expect(again.status).toBe(200);
        await prisma.$executeRawUnsafe("drop trigger kontor_test_break_logs on request_logs");
        await logged(s, [idOf(res), idOf(again)]);
      } finally {
        await prisma.$executeRawUnsafe("drop trigger if exists kontor_test_break_logs on request_logs");
        await prisma.$executeRawUnsafe("drop function if exists kontor_test_break_logs()");
        resume();
      }
    });
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
      expect(rows.every((r) => r.status === 404 && r.route === "/v1/leads/{id}" && r.error_code === "not_found")).toBe(true);
      expect(await allPages(wsApi, "status=418")).toEqual([]);
    });

    it("filters by from (inclusive) and to (exclusive)", async () => {
      const prisma = server().running.db.prisma;
      const rows = await prisma.requestLog.findMany({ where: { id: { in: ids.second } }, orderBy: { id: "asc" } });
      const [a, b] = rows as [(typeof rows)[0], (typeof rows)[0]];
      const from = a.createdAt.toISOString();
      const to = b.createdAt.toISOString();

      const since = await allPages(wsApi, `key_id=${second.id}&from=${encodeURIComponent(from)}`);
      expect(since.map((r) => r.request_id).sort()).toEqual([a.id, b.id].sort());
      const after = await allPages(wsApi, `key_id=${second.id}&from=${encodeURIComponent(new Date(b.createdAt.getTime() + 1).toISOString())}`);
      expect(after).toEqual([]);
      const before = await allPages(wsApi, `key_id=${second.id}&to=${encodeURIComponent(to)}`);
      expect(before.map((r) => r.request_id)).toEqual(a.createdAt < b.createdAt ? [a.id] : []);
      const window = await allPages(wsApi, `key_id=${second.id}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(new Date(b.createdAt.getTime() + 1).toISOString())}`);
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
    ])("rejects %s with 400 validation_failed naming %s", async (query, param) => {
      const res = await wsApi.get(`/request-logs?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
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
      expect(res.data.requestLogs.data[0]).toMatchObject({ object: "request_log", key_id: second.id, method: "GET", route: "/v1/leads", status: 200 });

      const bad = await gql(`{ requestLogs(status: 42) { data { request_id } } }`);
      expect(bad.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "status" });
      // A bad literal fails validation of the whole document: 400 (graphql-request would throw on it).
      const badFrom = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${ws.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: `query($from: DateTime) { requestLogs(from: $from) { data { request_id } } }`, variables: { from: "yesterday" } }),
      });
      expect(badFrom.json.errors?.[0]?.extensions.code).toBe("validation_failed");
    });
  });

  describe("stats", () => {
    it("computes total, error rate, latency percentiles, daily volume and top endpoints for a known set of requests", async () => {
      const s = server();
      const prisma = s.running.db.prisma;
      const fresh = await s.tenant();
      const freshApi = rest(s.api, fresh.key);
      const other = await s.key(fresh.workspaceId, ["leads.read"]);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push(idOf(await freshApi.get("/leads")));
      for (let i = 0; i < 3; i++) ids.push(idOf(await freshApi.get(`/leads/${MISSING_LEAD}`)));
      ids.push(idOf(await freshApi.post("/leads", { first_name: "Stat" })));
      ids.push(idOf(await freshApi.post("/leads", { first_name: "Stat", stage: "bogus" })));
      ids.push(idOf(await raw(`${s.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${fresh.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "{ workspace { id } }" }),
      })));
      ids.push(idOf(await rest(s.api, other.key).get("/leads")));
      // Unauthenticated: no workspace, so never counted.
      await raw(`${s.api}/leads`);
      await logged(s, ids);
      // Two requests three days ago (one a 500), and one 40 days ago (outside the default window).
      const threeDaysAgo = new Date(Date.now() - 3 * DAY_MS);
      await prisma.requestLog.createMany({
        data: [
          oldRow(fresh.workspaceId, threeDaysAgo, { latencyMs: 900, credentialId: fresh.keyId }),
          oldRow(fresh.workspaceId, new Date(threeDaysAgo.getTime() + 1), { status: 500, errorCode: "internal_error", latencyMs: 1000, credentialId: fresh.keyId }),
          oldRow(fresh.workspaceId, new Date(Date.now() - 40 * DAY_MS), { status: 500, latencyMs: 5000 }),
        ],
      });
      const rows = await prisma.requestLog.findMany({ where: { workspaceId: fresh.workspaceId } });
      const recent = rows.filter((r) => r.createdAt.getTime() > Date.now() - 20 * DAY_MS);
      expect(recent).toHaveLength(13);

      const res = await freshApi.get("/request-logs/stats");
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const stats = res.body;
      expect(stats).toMatchObject({ object: "request_log_stats", days: 30, key_id: null, total: 13 });
      // 3 × 404, one 400, one 500.
      expect(stats.error_rate).toBeCloseTo(5 / 13, 4);
      expect(stats.latency_ms.p50).toBeCloseTo(percentile(recent.map((r) => r.latencyMs), 0.5)!, 2);
      expect(stats.latency_ms.p95).toBeCloseTo(percentile(recent.map((r) => r.latencyMs), 0.95)!, 2);
      expect(stats.latency_ms.p95).toBeGreaterThanOrEqual(stats.latency_ms.p50);

      expect(stats.daily).toHaveLength(30);
      const today = new Date().toISOString().slice(0, 10);
      const todays = recent.filter((r) => r.createdAt.toISOString().slice(0, 10) === today).map((r) => r.latencyMs);
      expect(stats.daily.at(-1)).toEqual({
        date: today,
        requests: 11,
        errors: 4,
        error_rate: 0.3636,
        p50_ms: expect.closeTo(percentile(todays, 0.5)!, 2),
        p95_ms: expect.closeTo(percentile(todays, 0.95)!, 2),
      });
      const threeDaysAgoDate = threeDaysAgo.toISOString().slice(0, 10);
      expect(stats.daily.find((d: any) => d.date === threeDaysAgoDate)).toEqual({
        date: threeDaysAgoDate,
        requests: 2,
        errors: 1,
        error_rate: 0.5,
        p50_ms: 950,
        p95_ms: 995,
      });
      expect(stats.daily.find((d: any) => d.requests === 0)).toMatchObject({ error_rate: 0, p50_ms: null, p95_ms: null });
      expect(stats.daily.reduce((sum: number, d: any) => sum + d.requests, 0)).toBe(13);
      for (let i = 1; i < stats.daily.length; i++) {
        expect(Date.parse(stats.daily[i].date) - Date.parse(stats.daily[i - 1].date)).toBe(DAY_MS);
      }

      expect(stats.top_endpoints).toEqual([
        { method: "GET", route: "/v1/leads", requests: 5 + 2 },
        { method: "GET", route: "/v1/leads/{id}", requests: 3 },
        { method: "POST", route: "/v1/leads", requests: 2 },
        { method: "POST", route: "/graphql", requests: 1 },
      ]);

      // One day: only today's 11 requests (the stats request above is now logged too).
      await flushRequestLogs(s.running.db);
      await logged(s, [idOf(res)]);
      const oneDay = await freshApi.get("/request-logs/stats?days=1");
      expect(oneDay.body).toMatchObject({ days: 1, total: 12, daily: [{ date: today, requests: 12, errors: 4 }] });
      expect(oneDay.body.error_rate).toBeCloseTo(4 / 12, 4);

      // Per key.
      const perKey = await freshApi.get(`/request-logs/stats?key_id=${other.id}`);
      expect(perKey.body).toMatchObject({ key_id: other.id, total: 1, error_rate: 0, top_endpoints: [{ method: "GET", route: "/v1/leads", requests: 1 }] });

      // GraphQL: the same figures (plus the two REST stats requests, now logged).
      await logged(s, [idOf(oneDay), idOf(perKey)]);
      const gql = await graphql(s.url, fresh.key)(
        `{ requestLogStats(days: 30) { object days total error_rate latency_ms { p50 p95 } daily { date requests errors } top_endpoints { method route requests } } }`,
      );
      expect(gql.errors).toBeUndefined();
      expect(gql.data.requestLogStats).toMatchObject({ object: "request_log_stats", days: 30, total: 16 });
      expect(gql.data.requestLogStats.error_rate).toBeCloseTo(5 / 16, 4);
      expect(gql.data.requestLogStats.top_endpoints).toContainEqual({ method: "GET", route: "/v1/request-logs/stats", requests: 3 });
    });

    it("answers an empty workspace with zeros", async () => {
      const fresh = await server().tenant();
      const res = await rest(server().api, fresh.key).get("/request-logs/stats?days=7");
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ days: 7, total: 0, error_rate: 0, latency_ms: { p50: null, p95: null }, top_endpoints: [] });
      expect(res.body.daily).toHaveLength(7);
      expect(res.body.daily.every((d: any) => d.requests === 0 && d.errors === 0)).toBe(true);
    });

    it.each([
      ["days=0", "days"],
      ["days=91", "days"],
      ["days=abc", "days"],
      ["key_id=nope", "key_id"],
      ["status=200", "status"],
    ])("rejects %s with 400 validation_failed naming %s", async (query, param) => {
      const res = await api.get(`/request-logs/stats?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param });
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
      const stored = await server().running.db.prisma.requestLog.findMany({ where: { id: { in: aRows.map((r) => r.request_id) } } });
      expect(stored).toHaveLength(aRows.length);
      expect(stored.every((row) => row.workspaceId === a.workspaceId)).toBe(true);

      // Another workspace's key id filters to nothing; its stats are not counted.
      expect(await allPages(aApi, `key_id=${b.keyId}`)).toEqual([]);
      const statsByB = await aApi.get(`/request-logs/stats?key_id=${b.keyId}`);
      expect(statsByB.body.total).toBe(0);
      const gql = await graphql(server().url, a.key)(`query($k: String) { requestLogs(key_id: $k) { data { request_id } } }`, { k: b.keyId });
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
        expect(gql.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "logs.read" });
        const gqlStats = await graphql(server().url, key.key)(`{ requestLogStats { total } }`);
        expect(gqlStats.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "logs.read" });
      }
      const reader = await server().key(tenant.workspaceId, ["logs.read"]);
      expect((await rest(server().api, reader.key).get("/request-logs")).status).toBe(200);
    });
  });

  describe("retention", () => {
    it("deletes rows older than 30 days and keeps younger ones", async () => {
      const prisma = server().running.db.prisma;
      const expired = oldRow(tenant.workspaceId, new Date(Date.now() - 31 * DAY_MS));
      const expiredAnonymous = oldRow(null, new Date(Date.now() - 45 * DAY_MS));
      const kept = oldRow(tenant.workspaceId, new Date(Date.now() - 29 * DAY_MS));
      await prisma.requestLog.createMany({ data: [expired, expiredAnonymous, kept] });
      expect(await prisma.requestLog.count({ where: { id: { in: [expired.id, expiredAnonymous.id, kept.id] } } })).toBe(3);

      const deleted = await deleteExpiredRequestLogs(prisma);
      expect(deleted).toBeGreaterThanOrEqual(2);
      const left = await prisma.requestLog.findMany({ where: { id: { in: [expired.id, expiredAnonymous.id, kept.id] } } });
      expect(left.map((r) => r.id)).toEqual([kept.id]);
      expect(await prisma.requestLog.count({ where: { createdAt: { lt: new Date(Date.now() - 30 * DAY_MS) } } })).toBe(0);
    });
  });
});

describe("request logs: flush on close", () => {
  for (const stack of stacks()) {
    it(`writes buffered rows when the server closes, and they are there after reopening [${stack}]`, async () => {
      const scratch = await provisionStack(stack);
      const config = loadConfig({ PORT: "0", KONTOR_ENV: "development", KONTOR_LOG: "silent", ...scratch.env });
      try {
        const running = await startServer(config, { publicUrlFromPort: true });
        const ws = await createWorkspace(running.db.prisma, {
          name: "Flush",
          plan: "pro",
          ownerEmail: "flush@example.com",
          ownerPassword: "correct horse battery staple",
        });
        const key = await createApiKey(running.db.prisma, { workspaceId: ws.workspace_id, scopes: [...SCOPES] });
        // Hold the background flush so the rows are certainly still in memory at close.
        requestLogWriter(running.db)!.pauseBackgroundFlush();
        const api = rest(`${running.url}/v1`, key.key);
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push(idOf(await api.get(i % 2 ? "/leads" : `/leads/${MISSING_LEAD}`)));
        expect(requestLogWriter(running.db)!.pending).toBeGreaterThanOrEqual(5);
        expect(await running.db.prisma.requestLog.count({ where: { id: { in: ids } } })).toBe(0);
        await running.close();

        const reopened = await openDatabase(config);
        try {
          const rows = await reopened.prisma.requestLog.findMany({ where: { id: { in: ids } }, orderBy: { id: "asc" } });
          expect(rows.map((r) => r.id)).toEqual([...ids].sort());
          expect(rows.every((r) => r.workspaceId === ws.workspace_id && r.credentialId === key.id)).toBe(true);
          expect(rows.filter((r) => r.status === 404 && r.route === "/v1/leads/{id}")).toHaveLength(3);
        } finally {
          await reopened.close();
        }
      } finally {
        await scratch.drop();
      }
    }, 120_000); // a fresh embedded database takes a while to create
  }
});
