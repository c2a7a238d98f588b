import { beforeAll, describe, expect, it } from "vitest";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { graphql } from "../../support/graphql.ts";
import { raw, rest } from "../../support/http.ts";
import { logged } from "../../support/request-logs.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, DAY_MS, idOf, MISSING_LEAD, oldRow } from "./support.ts";

/** PostgreSQL's percentile_cont over the latencies, to check the SQL against. */
function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = p * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}

e2e("request logs: stats", (server) => {
  let tenant: Tenant;
  let api: Api;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
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
      ids.push(
        idOf(
          await raw(`${s.url}/graphql`, {
            method: "POST",
            headers: { authorization: `Bearer ${fresh.key}`, "content-type": "application/json" },
            body: JSON.stringify({ query: "{ workspace { id } }" }),
          }),
        ),
      );
      ids.push(idOf(await rest(s.api, other.key).get("/leads")));
      // Unauthenticated: no workspace, so never counted.
      await raw(`${s.api}/leads`);
      await logged(s, ids);
      // Two requests three days ago (one a 500), and one 40 days ago (outside the default window).
      const threeDaysAgo = new Date(Date.now() - 3 * DAY_MS);
      await prisma.requestLog.createMany({
        data: [
          oldRow(fresh.workspaceId, threeDaysAgo, { latencyMs: 900, credentialId: fresh.keyId }),
          oldRow(fresh.workspaceId, new Date(threeDaysAgo.getTime() + 1), {
            status: 500,
            errorCode: "internal_error",
            latencyMs: 1000,
            credentialId: fresh.keyId,
          }),
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
      expect(stats.latency_ms.p50).toBeCloseTo(
        percentile(
          recent.map((r) => r.latencyMs),
          0.5,
        )!,
        2,
      );
      expect(stats.latency_ms.p95).toBeCloseTo(
        percentile(
          recent.map((r) => r.latencyMs),
          0.95,
        )!,
        2,
      );
      expect(stats.latency_ms.p95).toBeGreaterThanOrEqual(stats.latency_ms.p50);

      expect(stats.daily).toHaveLength(30);
      const today = new Date().toISOString().slice(0, 10);
      const todays = recent
        .filter((r) => r.createdAt.toISOString().slice(0, 10) === today)
        .map((r) => r.latencyMs);
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
      expect(stats.daily.find((d: any) => d.requests === 0)).toMatchObject({
        error_rate: 0,
        p50_ms: null,
        p95_ms: null,
      });
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
      expect(oneDay.body).toMatchObject({
        days: 1,
        total: 12,
        daily: [{ date: today, requests: 12, errors: 4 }],
      });
      expect(oneDay.body.error_rate).toBeCloseTo(4 / 12, 4);

      // Per key.
      const perKey = await freshApi.get(`/request-logs/stats?key_id=${other.id}`);
      expect(perKey.body).toMatchObject({
        key_id: other.id,
        total: 1,
        error_rate: 0,
        top_endpoints: [{ method: "GET", route: "/v1/leads", requests: 1 }],
      });

      // GraphQL: the same figures (plus the two REST stats requests, now logged).
      await logged(s, [idOf(oneDay), idOf(perKey)]);
      const gql = await graphql(
        s.url,
        fresh.key,
      )(
        `{ requestLogStats(days: 30) { object days total error_rate latency_ms { p50 p95 } daily { date requests errors } top_endpoints { method route requests } } }`,
      );
      expect(gql.errors).toBeUndefined();
      expect(gql.data.requestLogStats).toMatchObject({ object: "request_log_stats", days: 30, total: 16 });
      expect(gql.data.requestLogStats.error_rate).toBeCloseTo(5 / 16, 4);
      expect(gql.data.requestLogStats.top_endpoints).toContainEqual({
        method: "GET",
        route: "/v1/request-logs/stats",
        requests: 3,
      });
    });

    it("answers an empty workspace with zeros", async () => {
      const fresh = await server().tenant();
      const res = await rest(server().api, fresh.key).get("/request-logs/stats?days=7");
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        days: 7,
        total: 0,
        error_rate: 0,
        latency_ms: { p50: null, p95: null },
        top_endpoints: [],
      });
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
});
