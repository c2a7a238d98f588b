import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { FOLD_AT_ROWS, foldDataUsage } from "../../../server/policies/data-quota.ts";
import { identity } from "../../support/agent-flow.ts";
import { graphql } from "../../support/graphql.ts";
import { call, raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/** Text PostgreSQL cannot compress (it stores repeated characters in a few bytes). */
const noise = (length: number) => randomBytes(length).toString("base64").slice(0, length);

/** The tables the data quota counts, each with how a row finds its workspace. */
const COUNTED = [
  "clients",
  "leads",
  "invoices",
  "payments",
  "inventory_items",
  "projects",
  "tasks",
  "events",
  "request_logs",
  "audit_events",
  "webhook_endpoints",
  "webhook_deliveries",
  "buckets",
  "objects",
];

/** What the workspace's rows take, measured afresh table by table: what the counter must equal. */
async function measured(server: TestServer, workspaceId: string): Promise<number> {
  const prisma = server.running.db.prisma;
  let total = 0;
  for (const table of COUNTED) {
    const [row] = await prisma.$queryRawUnsafe<{ bytes: bigint }[]>(
      `select coalesce(sum(pg_column_size(t.*)), 0)::bigint as bytes from ${table} t where workspace_id = $1`,
      workspaceId,
    );
    total += Number(row!.bytes);
  }
  const [items] = await prisma.$queryRaw<{ bytes: bigint }[]>`
    select coalesce(sum(pg_column_size(x.*)), 0)::bigint as bytes from invoice_items x join invoices i on i.id = x.invoice_id
    where i.workspace_id = ${workspaceId}`;
  return total + Number(items!.bytes);
}

/** The counter: the sum of the workspace's usage rows. */
async function counted(server: TestServer, workspaceId: string): Promise<{ bytes: number; rows: number }> {
  const [row] = await server.running.db.prisma.$queryRaw<{ bytes: bigint; rows: bigint }[]>`
    select coalesce(sum(bytes), 0)::bigint as bytes, count(*)::bigint as rows from data_usage where workspace_id = ${workspaceId}`;
  return { bytes: Number(row!.bytes), rows: Number(row!.rows) };
}

interface Usage {
  data_bytes: number;
  idempotency_bytes: number;
  data_quota_bytes: number;
  storage_bytes: number;
  webhook_endpoints: number;
}

const workspace = async (server: TestServer, key: string) => {
  const res = await rest(server.api, key).get("/workspace");
  expect(res.status).toBe(200);
  return res.body as { limits: Record<string, number>; usage: Usage };
};

e2e("data quota: the counter", (server) => {
  it("counts every row of the workspace as the database stores it, through creates, updates and deletes", async () => {
    const tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    const client = await api.post("/clients", { name: "Ada", notes: noise(3_000) });
    expect(client.status).toBe(201);
    const lead = await api.post("/leads", { full_name: "Grace Hopper", notes: noise(2_000) });
    const gone = await api.post("/leads", { full_name: "Gone Soon" });
    expect(
      (await api.patch(`/leads/${lead.body.id}`, { notes: noise(6_000), stage: "qualified" })).status,
    ).toBe(200);
    expect((await api.delete(`/leads/${gone.body.id}`)).status).toBe(200);
    // Text PostgreSQL compresses counts as compressed, the same going in as coming out.
    const squeezed = await api.post("/leads", { full_name: "Squeezed", notes: "z".repeat(9_000) });
    expect((await api.patch(`/leads/${squeezed.body.id}`, { notes: "w".repeat(9_500) })).status).toBe(200);
    expect((await api.delete(`/leads/${squeezed.body.id}`)).status).toBe(200);
    const items = Array.from({ length: 30 }, (_, i) => ({
      description: `Line ${i} ${noise(300)}`,
      quantity: 1,
      unit_price: 10,
    }));
    const invoice = await api.post("/invoices", { client_id: client.body.id, items });
    expect(invoice.status).toBe(201);
    expect((await api.patch(`/invoices/${invoice.body.id}`, { items: items.slice(0, 5) })).status).toBe(200);
    expect(
      (await api.post(`/invoices/${invoice.body.id}/payments`, { amount: 10, payment_method: "cash" }))
        .status,
    ).toBe(201);
    const project = await api.post("/projects", { name: "Roof" });
    expect(
      (await api.post(`/projects/${project.body.id}/tasks`, { title: "Tiles", description: noise(1_000) }))
        .status,
    ).toBe(201);
    expect((await api.post("/inventory/items", { name: "Tile", quantity: 5 })).status).toBe(201);
    await flushRequestLogs(server().running.db);

    const expected = await measured(server(), tenant.workspaceId);
    // Far more than an empty workspace: the notes, lines and events above are all in it.
    expect(expected).toBeGreaterThan(20_000);
    expect((await counted(server(), tenant.workspaceId)).bytes).toBe(expected);

    // Folding keeps the sum and leaves one row per workspace.
    await foldDataUsage(server().running.db.prisma);
    expect(await counted(server(), tenant.workspaceId)).toEqual({ bytes: expected, rows: 1 });

    // GET /workspace shows it (its own request log row is written after it answers).
    const { usage } = await workspace(server(), tenant.key);
    expect(usage.data_bytes).toBeGreaterThanOrEqual(expected);
    expect(usage.data_bytes).toBeLessThan(expected + 4_000);
  });

  it("folds a busy workspace's usage rows when a write reads them, keeping the sum", async () => {
    const tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    expect((await api.post("/leads", { full_name: "First" })).status).toBe(201);
    // Rows as a workspace writing fast leaves them between two sweeps: many, summing to nothing.
    await server().running.db.prisma.$executeRaw`
      insert into data_usage (workspace_id, bytes)
      select ${tenant.workspaceId}, case when g = 1 then ${-FOLD_AT_ROWS * 2}::bigint else 1 end
      from generate_series(1, ${FOLD_AT_ROWS * 2 + 1}::int) g`;
    const before = await counted(server(), tenant.workspaceId);
    expect(before.rows).toBeGreaterThan(FOLD_AT_ROWS * 2);

    // The next write reads the usage (the quota check) and has them folded once it has answered.
    expect((await api.post("/leads", { full_name: "Second" })).status).toBe(201);
    // The folded row, and those of statements that committed after the fold (the create's own, request logs).
    const after = await eventually(
      () => counted(server(), tenant.workspaceId),
      (usage) => usage.rows < 10,
    );
    expect(after.rows).toBeLessThan(10);
    await flushRequestLogs(server().running.db);
    // Read until no write came between the two reads (the webhook dispatcher marks events sent).
    const sums = await eventually(
      async () => [
        (await counted(server(), tenant.workspaceId)).bytes,
        await measured(server(), tenant.workspaceId),
      ],
      ([bytes, stored]) => bytes === stored,
    );
    expect(sums[0]).toBe(sums[1]);
  });

  it("shows the plan's limits, a sandbox's tenth of free's data quota, and what is used", async () => {
    const tenant = await server().tenant({ plan: "plus" });
    const { limits, usage } = await workspace(server(), tenant.key);
    expect(limits).toMatchObject({
      data_quota_bytes: PLAN_LIMITS.plus.data_quota_bytes,
      idempotency_bytes: PLAN_LIMITS.plus.idempotency_bytes,
      webhook_endpoints: PLAN_LIMITS.plus.webhook_endpoints,
      concurrent_uploads: PLAN_LIMITS.plus.concurrent_uploads,
      ai_tokens_daily: PLAN_LIMITS.plus.ai_tokens_daily,
    });
    expect(usage).toMatchObject({
      data_quota_bytes: 2e9,
      storage_bytes: 0,
      webhook_endpoints: 0,
      idempotency_bytes: 0,
    });

    const prisma = server().running.db.prisma;
    const sandbox = await prisma.workspace.create({
      data: {
        id: `ws_${randomUUID().replaceAll("-", "").slice(0, 26)}`,
        name: "Sandbox",
        plan: "free",
        agentAuthEnabled: true,
        sandboxExpiresAt: new Date(Date.now() + 3_600_000),
      },
    });
    const key = await createApiKey(prisma, { workspaceId: sandbox.id, scopes: ["leads.read"] });
    const seen = await workspace(server(), key.key);
    expect(seen.limits.data_quota_bytes).toBe(PLAN_LIMITS.free.data_quota_bytes / 10);
    expect(seen.usage.data_quota_bytes).toBe(PLAN_LIMITS.free.data_quota_bytes / 10);
  });

  it("counts a write by index lookups, never by scanning the table, whatever the planner's statistics say", async () => {
    const prisma = server().running.db.prisma;
    // Every counting trigger plans with index lookups only (a plan it kept from when its table was
    // small would otherwise scan the whole table on every later write of its connection).
    const functions = await prisma.$queryRaw<{ name: string; config: string[] | null }[]>`
      select proname as name, proconfig as config from pg_proc where proname like 'kontor_count_%' order by proname`;
    expect(functions.map((f) => f.name).sort()).toEqual(
      [...COUNTED, "invoice_items"].map((table) => `kontor_count_${table}`).sort(),
    );
    for (const f of functions)
      expect(f.config, f.name).toEqual(
        expect.arrayContaining(["enable_seqscan=off", "enable_hashjoin=off", "enable_mergejoin=off"]),
      );

    // A batch of request log rows written where a scan would look cheapest: no scan of request_logs.
    const tenant = await server().tenant();
    const scans = await prisma.$transaction(async (tx) => {
      await tx.$executeRaw`set local seq_page_cost = 0.0001`;
      await tx.$executeRaw`
        insert into request_logs (id, workspace_id, method, route, status, latency_ms, created_at)
        select 'req_' || ${randomBytes(6).toString("hex")} || g, ${tenant.workspaceId}, 'GET', '/v1/leads', 200, 1, now()
        from generate_series(1, 50) g`;
      const [row] = await tx.$queryRaw<{ seq: bigint; idx: bigint }[]>`
        select seq_scan as seq, idx_scan as idx from pg_stat_xact_user_tables where relname = 'request_logs'`;
      return { seq: Number(row!.seq), idx: Number(row!.idx) };
    });
    expect(scans.seq).toBe(0);
    expect(scans.idx).toBeGreaterThanOrEqual(50);
  });

  it("counts idempotency records in the workspace's usage", async () => {
    const tenant = await server().tenant();
    const before = (await workspace(server(), tenant.key)).usage;
    const res = await call("POST", `${server().api}/leads`, {
      key: tenant.key,
      body: { full_name: "Kept Response", notes: noise(5_000) },
      headers: { "Idempotency-Key": randomUUID() },
    });
    expect(res.status).toBe(201);
    const after = (await workspace(server(), tenant.key)).usage;
    expect(after.idempotency_bytes).toBeGreaterThan(5_000);
    // The lead, its event and the kept response: each about 5 kB.
    expect(after.data_bytes - before.data_bytes).toBeGreaterThan(15_000);
  });
});

/** The quota every plan is capped to in this suite. */
const CAP = 120_000;
/** Bytes of request log rows that may land between reading the usage and the next write. */
const LOG_ROOM = 5_000;

e2e(
  "data quota: at its boundary",
  (server) => {
    it("refuses writes once the records reach the quota, keeps reads and deletes, and writes again below it", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const bucket = await api.post("/buckets", { name: `b-${randomUUID().slice(0, 8)}` });
      expect(bucket.status).toBe(201);
      const created: string[] = [];
      let refused;
      for (let i = 0; i < 40 && !refused; i++) {
        const before = (await workspace(server(), tenant.key)).usage;
        const res = await api.post("/leads", { full_name: `Lead ${i}`, notes: noise(8_000) });
        if (res.status === 201) {
          // Accepted only while the workspace was under its quota.
          expect(before.data_bytes).toBeLessThan(CAP);
          created.push(res.body.id);
        } else refused = { res, before };
      }
      expect(refused, "the quota was never reached").toBeDefined();
      const { res, before } = refused!;
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ type: "permission_error", code: "data_quota_exceeded" });
      // What the check saw: at least what GET /workspace showed before (request logs land after
      // their answers, so it may be a little more), and at the quota.
      const [, seenBytes, quota] = /\((\d+) bytes\).* data quota of (\d+) bytes/.exec(
        res.body.error.message,
      )!;
      expect(Number(quota)).toBe(CAP);
      expect(Number(seenBytes)).toBeGreaterThanOrEqual(Math.max(CAP, before.data_bytes));
      expect(res.body.error.request_id).toMatch(/^req_/);
      // Nothing was written by the refused request.
      expect((await api.get("/leads?limit=100")).body.data).toHaveLength(created.length);

      // Updates are writes too; GraphQL says the same.
      expect((await api.patch(`/leads/${created[0]}`, { stage: "won" })).body.error.code).toBe(
        "data_quota_exceeded",
      );
      const gql = await graphql(server().url, tenant.key)(`mutation { createLead(first_name: "G") { id } }`);
      expect(gql.errors?.[0]?.extensions).toMatchObject({
        code: "data_quota_exceeded",
        type: "permission_error",
      });
      expect(gql.data).toBeNull();
      // A raw upload runs no mutation: it is checked all the same, and stores nothing.
      const upload = await raw(`${server().api}/buckets/${bucket.body.id}/objects?file_name=a.txt`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "text/plain" },
        body: "hello",
      });
      expect(upload.status).toBe(403);
      expect(upload.json.error.code).toBe("data_quota_exceeded");
      expect((await api.get(`/buckets/${bucket.body.id}/objects`)).body.data).toEqual([]);

      // Reads and deletes still work; deleting brings the workspace under its quota again.
      expect((await api.get(`/leads/${created[0]}`)).status).toBe(200);
      // Under it with room for the request log rows still to land (each well under 1 kB).
      const settled = async () => {
        await flushRequestLogs(server().running.db);
        return (await workspace(server(), tenant.key)).usage;
      };
      let usage = await settled();
      while (usage.data_bytes >= CAP - LOG_ROOM && created.length > 0) {
        expect((await api.delete(`/leads/${created.pop()}`)).status).toBe(200);
        usage = await settled();
      }
      expect(usage.data_bytes).toBeLessThan(CAP - LOG_ROOM);
      expect((await api.post("/leads", { full_name: "Back again" })).status).toBe(201);
    });

    it("counts the idempotency records in the check before a write: they can reach the quota with the rows under it", async () => {
      const tenant = await server().tenant();
      let refused;
      for (let i = 0; i < 40 && !refused; i++) {
        const res = await call("POST", `${server().api}/leads`, {
          key: tenant.key,
          body: { full_name: `Kept ${i}`, notes: noise(8_000) },
          headers: { "Idempotency-Key": randomUUID() },
        });
        if (res.status !== 201) refused = res;
      }
      expect(refused, "the quota was never reached").toBeDefined();
      expect(refused!.body.error.code).toBe("data_quota_exceeded");
      const [, seenBytes] = /\((\d+) bytes\)/.exec(refused!.body.error.message)!;
      expect(Number(seenBytes)).toBeGreaterThanOrEqual(CAP);
      // The rows alone (each lead, its event, the request logs) were still under the quota.
      await flushRequestLogs(server().running.db);
      expect((await counted(server(), tenant.workspaceId)).bytes).toBeLessThan(CAP);
    });

    it("bounds each workspace alone: another workspace still writes", async () => {
      const other = await server().tenant();
      expect((await rest(server().api, other.key).post("/leads", { full_name: "Unbothered" })).status).toBe(
        201,
      );
    });
  },
  { KONTOR_DATA_QUOTA_CAP_BYTES: String(CAP) },
);

e2e(
  "anonymous sandboxes: the deployment's cap",
  (server) => {
    it("refuses anonymous registration past KONTOR_MAX_SANDBOXES live sandboxes, and takes one again when one expires", async () => {
      const first = await identity(server(), { type: "anonymous", agent_name: "One" });
      const second = await identity(server(), { type: "anonymous", agent_name: "Two" });
      expect([first.status, second.status]).toEqual([200, 200]);
      const third = await identity(server(), { type: "anonymous", agent_name: "Three" });
      expect(third.status).toBe(429);
      expect(third.json).toMatchObject({ error: "rate_limit_exceeded" });
      expect(third.json.error_description).toMatch(/most live sandboxes \(2\)/);
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(third.headers.get("retry-after"))).toBeLessThanOrEqual(3600);

      // An expired sandbox no longer counts, even before the sweep deletes it.
      await server().running.db.prisma.$executeRaw`
        update workspaces set sandbox_expires_at = now() - interval '1 second'
        where id = (select workspace_id from agent_registrations where id = ${first.json.registration_id})`;
      expect((await identity(server(), { type: "anonymous", agent_name: "Four" })).status).toBe(200);
    });

    it("lets concurrent registrations pass the cap by none", async () => {
      await server().running.db.prisma
        .$executeRaw`update workspaces set sandbox_expires_at = now() - interval '1 second' where sandbox_expires_at is not null`;
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          identity(server(), { type: "anonymous", agent_name: `Racer ${i}` }),
        ),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429, 429, 429, 429]);
    });
  },
  { KONTOR_MAX_SANDBOXES: "2", KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "50" },
);

describe("data quota: what a write is", () => {
  it("lets deletes, removals, revocations and rotations run past the quota", async () => {
    const { countsAsWrite } = await import("../../../schema/plugins/data-quota.ts");
    expect(
      ["deleteLead", "removeMember", "revokeApiKey", "rotateWebhookEndpointSecret"].map(countsAsWrite),
    ).toEqual([false, false, false, false]);
    expect(
      ["createLead", "updateLead", "recordPayment", "voidInvoice", "uploadFile"].map(countsAsWrite),
    ).toEqual([true, true, true, true, true]);
  });
});
