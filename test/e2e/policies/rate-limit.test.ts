import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS, PLANS, type PlanName } from "../../../schema/lib/plans.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { call, raw, rest } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

function limitHeaders(headers: Headers) {
  return {
    limit: Number(headers.get("x-ratelimit-limit")),
    remaining: Number(headers.get("x-ratelimit-remaining")),
    reset: Number(headers.get("x-ratelimit-reset")),
    plan: headers.get("x-ratelimit-plan"),
  };
}

/** `n` requests, a few at a time: statuses in the order they were sent. */
async function burst(
  n: number,
  send: (i: number) => Promise<{ status: number }>,
  parallel = 10,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, n - i) }, (_, j) => send(i + j));
    statuses.push(...(await Promise.all(batch)).map((r) => r.status));
  }
  return statuses;
}

const tally = (statuses: number[]) => ({
  ok: statuses.filter((s) => s === 200).length,
  limited: statuses.filter((s) => s === 429).length,
});

const graphqlPost = (url: string, key: string, query: string) =>
  raw(`${url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });

e2e("rate limits", (server) => {
  it("puts limit, remaining, reset and plan on every response, remaining counting down", async () => {
    const tenant = await server().tenant({ plan: "pro" });
    const api = rest(server().api, tenant.key);
    const first = await api.get("/workspace");
    const second = await api.get("/leads/lead_00000000000000000000000000");
    expect(first.status).toBe(200);
    expect(second.status).toBe(404);
    const a = limitHeaders(first.headers);
    const b = limitHeaders(second.headers);
    expect(a).toMatchObject({ limit: 600, remaining: 599, plan: "pro" });
    expect(b).toMatchObject({ limit: 600, remaining: 598, plan: "pro" });

    const now = Date.now() / 1000;
    for (const { reset } of [a, b]) {
      expect(Number.isInteger(reset)).toBe(true);
      expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
      expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 60);
    }
  });

  it.each(PLANS)("reports the %s plan and its limit", async (plan: PlanName) => {
    const tenant = await server().tenant({ plan });
    const res = await rest(server().api, tenant.key).get("/workspace");
    expect(res.status).toBe(200);
    expect(limitHeaders(res.headers)).toMatchObject({
      plan,
      limit: PLAN_LIMITS[plan].requests_per_minute,
      remaining: PLAN_LIMITS[plan].requests_per_minute - 1,
    });
  });

  it("gives a free key exactly 120 requests, then 429 with Retry-After and nothing executed", async () => {
    const tenant = await server().tenant({ plan: "free" });
    const api = rest(server().api, tenant.key);
    const statuses = await burst(FREE, () => api.get("/workspace"));
    expect(tally(statuses)).toEqual({ ok: FREE, limited: 0 });

    const refused = await api.post("/leads", { first_name: "Over" });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
    expect(refused.body.error.request_id).toBe(refused.headers.get("x-request-id"));
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limitHeaders(refused.headers)).toMatchObject({ limit: FREE, remaining: 0, plan: "free" });

    // Another key of the same workspace has its own bucket, and sees that no lead was written.
    const other = await server().key(tenant.workspaceId, [...SCOPES]);
    const leads = await rest(server().api, other.key).get("/leads");
    expect(leads.status).toBe(200);
    expect(leads.body.data).toEqual([]);
    expect(limitHeaders(leads.headers)).toMatchObject({ remaining: FREE - 1, plan: "free" });
  });

  it("keeps separate buckets for separate keys", async () => {
    const a = await server().tenant({ plan: "free" });
    const b = await server().tenant({ plan: "free" });
    const statuses = await burst(FREE + 5, () => rest(server().api, a.key).get("/workspace"));
    expect(tally(statuses)).toEqual({ ok: FREE, limited: 5 });

    const res = await rest(server().api, b.key).get("/workspace");
    expect(res.status).toBe(200);
    expect(limitHeaders(res.headers).remaining).toBe(FREE - 1);
  });

  it("limits /graphql in the same bucket and answers 429 in the GraphQL shape", async () => {
    const tenant = await server().tenant({ plan: "free" });
    const ok = await graphqlPost(server().url, tenant.key, "{ workspace { id } }");
    expect(ok.status).toBe(200);
    expect(limitHeaders(ok.headers)).toMatchObject({ limit: FREE, remaining: FREE - 1, plan: "free" });

    const statuses = await burst(FREE - 1, () => rest(server().api, tenant.key).get("/workspace"));
    expect(tally(statuses)).toEqual({ ok: FREE - 1, limited: 0 });

    const refused = await graphqlPost(
      server().url,
      tenant.key,
      'mutation { createLead(first_name: "Over") { id } }',
    );
    expect(refused.status).toBe(429);
    expect(refused.json.data).toBeUndefined();
    expect(refused.json.errors[0].extensions).toMatchObject({
      code: "rate_limit_exceeded",
      type: "rate_limit_error",
      request_id: refused.headers.get("x-request-id"),
    });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limitHeaders(refused.headers)).toMatchObject({ remaining: 0, plan: "free" });
  });

  // Unauthenticated requests share one bucket per client IP: this test exhausts it, so it runs last.
  it("counts requests without a credential per IP at the free rate, 401s included", async () => {
    const before = await call("GET", `${server().api}/workspace`);
    const after = await call("GET", `${server().api}/workspace`, { key: `ktr_live_${"A".repeat(43)}` });
    const document = await raw(`${server().api}/openapi.json`);
    expect([before.status, after.status, document.status]).toEqual([401, 401, 200]);
    const [a, b, c] = [
      limitHeaders(before.headers),
      limitHeaders(after.headers),
      limitHeaders(document.headers),
    ];
    expect(a).toMatchObject({ limit: FREE, plan: "free" });
    expect(b.remaining).toBe(a.remaining - 1);
    expect(c.remaining).toBe(a.remaining - 2);
    expect(c.reset).toBeGreaterThan(0);

    const statuses = await burst(c.remaining + 3, () => call("GET", `${server().api}/workspace`));
    expect(statuses.filter((s) => s === 401)).toHaveLength(c.remaining);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);

    const refused = await call("GET", `${server().api}/workspace`);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe("rate_limit_exceeded");
    expect(refused.headers.get("x-request-id")).toBe(refused.body.error.request_id);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(limitHeaders(refused.headers)).toMatchObject({ limit: FREE, remaining: 0, plan: "free" });

    // The request log records what the caller got: the 429, not the 401 it replaced.
    const refusedId = refused.body.error.request_id as string;
    await flushRequestLogs(server().running.db);
    const row = await server().running.db.prisma.requestLog.findUnique({ where: { id: refusedId } });
    expect(row).toMatchObject({
      status: 429,
      errorCode: "rate_limit_exceeded",
      route: "/v1/workspace",
      credentialId: null,
    });

    // A key from the same address is not affected.
    const tenant = await server().tenant({ plan: "free" });
    expect((await rest(server().api, tenant.key).get("/workspace")).status).toBe(200);
  });
});

describe.runIf(stacks().includes("postgres"))("rate limits across processes [postgres]", () => {
  let drop: () => Promise<void>;
  const servers: RunningServer[] = [];

  beforeAll(async () => {
    const scratch = await provisionStack("postgres");
    drop = scratch.drop;
    const { DATABASE_URL, REDIS_URL, DATA_DIR } = scratch.env;
    for (let i = 0; i < 2; i++) {
      const config = loadConfig({
        DATABASE_URL,
        REDIS_URL,
        DATA_DIR,
        PORT: "0",
        KONTOR_ENV: "production",
        KONTOR_SECRET_KEY: "rate-limit-test-secret-key-0123456789abcdef",
      });
      servers.push(await startServer(config, { publicUrlFromPort: true }));
    }
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await drop?.();
  });

  it("stops requests alternating between two processes at exactly the plan's limit in sum", async () => {
    const workspace = await createWorkspace(servers[0]!.db.prisma, {
      name: `Test ${randomBytes(3).toString("hex")}`,
      plan: "free",
      ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    const { key } = await createApiKey(servers[0]!.db.prisma, {
      workspaceId: workspace.workspace_id,
      scopes: [...SCOPES],
    });

    const statuses = await burst(FREE + 10, (i) => rest(`${servers[i % 2]!.url}/v1`, key).get("/workspace"));
    expect(tally(statuses)).toEqual({ ok: FREE, limited: 10 });

    const perServer = servers.map((_, s) => tally(statuses.filter((_, i) => i % 2 === s)));
    expect(perServer.every(({ ok, limited }) => ok > 0 && limited > 0)).toBe(true);
  });
});
