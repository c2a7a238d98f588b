/**
 * `npm run bench`: what the policies (rate limits, idempotency, request logs, GraphQL limits)
 * cost in throughput, on PostgreSQL + Redis.
 *
 * - A scratch PostgreSQL database is created and dropped afterwards (as test/support/server.ts
 *   does); Redis is shared, its keys namespaced by that database.
 * - Two servers are started as child processes (`server/main.ts`, as `npm start` runs it), one
 *   with the policies and one with KONTOR_POLICIES=off, on the same database. Child processes
 *   keep autocannon, which runs here, off the servers' event loops. Only one is loaded at a time.
 * - One workspace on the max plan (1 200 requests per minute per credential) with one lead is
 *   read by `GET /v1/leads/{id}` and by the same fields through `POST /graphql`. One key would be
 *   capped at 20 requests/s, so requests rotate over a pool of BENCH_KEYS keys of that workspace
 *   (the same rotation in both modes): the limiter still counts every request in Redis, it just
 *   never refuses one. The run checks that and reports any non-2xx answer.
 * - Every case is warmed up, then measured; with BENCH_ROUNDS=2 (default) each endpoint is
 *   measured off, on, on, off (ABBA) so drift of the machine does not favour one mode.
 *
 * Environment: BENCH_DURATION (s, default 10), BENCH_WARMUP (s, default 3), BENCH_CONNECTIONS
 * (default 10), BENCH_ROUNDS (default 2), BENCH_KEYS (default 300), BENCH_POSTGRES_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres), BENCH_REDIS_URL (default
 * redis://127.0.0.1:6379), BENCH_PROFILE_DIR (a CPU profile of each server goes there). Results: printed, and written to bench/results.md.
 */
import { execSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import pg from "pg";
import { SCOPES } from "../schema/lib/scopes.ts";
import { PLAN_LIMITS } from "../schema/lib/plans.ts";
import { createApiKey } from "../server/auth/api-keys.ts";
import { openDatabase } from "../server/db/open.ts";
import { createWorkspace } from "../server/workspaces.ts";
import { admin, databaseUrl, num, REDIS_URL, ROOT, startServerChild, stopServerChild, type ServerChild } from "./support.ts";

const DURATION = num("BENCH_DURATION", 10);
const WARMUP = num("BENCH_WARMUP", 3);
const CONNECTIONS = num("BENCH_CONNECTIONS", 10);
const ROUNDS = num("BENCH_ROUNDS", 2);
const KEYS = num("BENCH_KEYS", 300);
const TARGET_OVERHEAD = 15;
const BENCH_SECRET_KEY = randomBytes(32).toString("base64url");

type Mode = "on" | "off";
type Endpoint = "REST GET /v1/leads/{id}" | "GraphQL POST /graphql lead";
const ENDPOINTS: Endpoint[] = ["REST GET /v1/leads/{id}", "GraphQL POST /graphql lead"];

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
}


interface Child extends ServerChild {
  mode: Mode;
}

async function startChild(mode: Mode, env: NodeJS.ProcessEnv, port: number): Promise<Child> {
  const settings = { KONTOR_ENV: "production", KONTOR_SECRET_KEY: BENCH_SECRET_KEY, KONTOR_POLICIES: mode === "on" ? "on" : "off" };
  return { mode, ...(await startServerChild(`policies ${mode}`, { ...env, ...settings }, port)) };
}

function cannon(url: string, endpoint: Endpoint, keys: string[], leadId: string, query: string, seconds: number) {
  let next = 0;
  const auth = () => `Bearer ${keys[next++ % keys.length]}`;
  const request: autocannon.Request =
    endpoint === "REST GET /v1/leads/{id}"
      ? { method: "GET", path: `/v1/leads/${leadId}`, setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: auth() } }) }
      : {
          method: "POST",
          path: "/graphql",
          body: JSON.stringify({ query }),
          setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: auth(), "content-type": "application/json" } }),
        };
  return autocannon({ url, connections: CONNECTIONS, duration: seconds, requests: [request] });
}

async function measure(child: Child, endpoint: Endpoint, keys: string[], leadId: string, query: string): Promise<Sample> {
  await cannon(child.url, endpoint, keys, leadId, query, WARMUP);
  const result = await cannon(child.url, endpoint, keys, leadId, query, DURATION);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** What each policy did on the policies-on server at the time of the run, observed from outside. */
async function probePolicies(on: Child, db: pg.Client, key: string, leadId: string) {
  const found: Record<string, string> = {};
  const res = await fetch(`${on.url}/v1/leads/${leadId}`, { headers: { authorization: `Bearer ${key}` } });
  found["rate limits"] = res.headers.get("x-ratelimit-limit")
    ? `active (X-RateLimit-Limit ${res.headers.get("x-ratelimit-limit")}, plan ${res.headers.get("x-ratelimit-plan")})`
    : "no X-RateLimit headers: stub or inactive";

  const idem = `bench-${randomBytes(6).toString("hex")}`;
  const post = () =>
    fetch(`${on.url}/v1/leads`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idem },
      body: JSON.stringify({ first_name: "Idempotency probe" }),
    }).then(async (r) => ({ headers: r.headers, body: (await r.json()) as { id?: string } }));
  const first = await post();
  const second = await post();
  found.idempotency =
    first.body.id && first.body.id === second.body.id
      ? `active (a repeated POST with the same Idempotency-Key replayed ${first.body.id}${second.headers.get("idempotent-replay") ? ", Idempotent-Replay: true" : ""})`
      : "a repeated POST created a second lead: stub or inactive";

  const deep = await fetch(`${on.url}/graphql`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ query: "{ projects { data { tasks { project { tasks { project { tasks { id } } } } } } } }" }),
  });
  const deepBody = (await deep.json()) as { errors?: { extensions?: { code?: string } }[] };
  found["GraphQL limits"] =
    deep.status === 400 && deepBody.errors?.[0]?.extensions?.code === "query_too_costly"
      ? "active (lists of lists of lists: 400 query_too_costly)"
      : `not refusing lists of lists of lists (status ${deep.status})`;

  try {
    await new Promise((r) => setTimeout(r, 1_000)); // request logs are written in the background
    const { rows } = await db.query<{ n: string }>("select count(*)::text as n from request_logs");
    found["request logs"] = Number(rows[0]!.n) > 0 ? `active (${fmt(Number(rows[0]!.n))} rows in request_logs after the run)` : "request_logs is empty: stub or inactive";
  } catch (error) {
    found["request logs"] = `no request_logs table (${(error as Error).message}): stub or inactive`;
  }
  return found;
}

function gitState(): string {
  try {
    const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
    const dirty = execSync("git status --porcelain", { cwd: ROOT }).toString().trim() ? " with uncommitted changes" : "";
    return `${commit}${dirty}`;
  } catch {
    return "unknown";
  }
}

async function main() {
  const name = `kontor_bench_${randomBytes(6).toString("hex")}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kontor-bench-"));
  await admin((c) => c.query(`create database ${name}`));
  const env = { DATABASE_URL: databaseUrl(name), REDIS_URL, DATA_DIR: dataDir };
  const children: Partial<Record<Mode, Child>> = {};
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  try {
    // Migrate, then the workspace (max plan), its key pool and a lead.
    const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir });
    let keys: string[];
    let workspaceId: string;
    try {
      const ws = await createWorkspace(database.prisma, {
        name: "Bench",
        plan: "max",
        ownerEmail: `bench-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      workspaceId = ws.workspace_id;
      keys = [];
      for (let i = 0; i < KEYS; i++) keys.push((await createApiKey(database.prisma, { workspaceId, scopes: [...SCOPES] })).key);
    } finally {
      await database.close();
    }
    await db.connect();

    children.off = await startChild("off", env, 4700 + Math.floor(Math.random() * 500));
    children.on = await startChild("on", env, 5300 + Math.floor(Math.random() * 500));

    const created = await fetch(`${children.off.url}/v1/leads`, {
      method: "POST",
      headers: { authorization: `Bearer ${keys[0]}`, "content-type": "application/json" },
      body: JSON.stringify({ full_name: "Ada Lovelace", company_name: "Analytical Engines", email: "ada@example.com", stage: "qualified", estimated_value: 1200 }),
    });
    const lead = (await created.json()) as Record<string, unknown>;
    if (created.status !== 201) throw new Error(`could not create the lead: ${JSON.stringify(lead)}`);
    const leadId = String(lead.id);
    // The GraphQL read selects exactly the fields the REST representation has.
    const fields = Object.keys(lead);
    const query = `query { lead(id: "${leadId}") { ${fields.join(" ")} } }`;
    for (const child of [children.off, children.on]) {
      const rest = await fetch(`${child.url}/v1/leads/${leadId}`, { headers: { authorization: `Bearer ${keys[1]}` } });
      const gql = await fetch(`${child.url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${keys[1]}`, "content-type": "application/json" },
        body: JSON.stringify({ query }),
      });
      const restBody = await rest.json();
      const gqlBody = (await gql.json()) as { data?: { lead?: unknown } };
      if (rest.status !== 200 || gql.status !== 200 || JSON.stringify(gqlBody.data?.lead) !== JSON.stringify(restBody)) {
        throw new Error(`the two reads differ on policies ${child.mode}: ${JSON.stringify(restBody)} vs ${JSON.stringify(gqlBody)}`);
      }
    }

    const empty = () => Object.fromEntries(ENDPOINTS.map((e) => [e, [] as Sample[]])) as Record<Endpoint, Sample[]>;
    const samples: Record<Mode, Record<Endpoint, Sample[]>> = { on: empty(), off: empty() };
    const loadBefore = loadavg()[0]!;
    console.log(
      `Kontor bench: ${DURATION} s per case after ${WARMUP} s warm-up, ${CONNECTIONS} connections, ${ROUNDS} round(s), ${KEYS} keys, ${cpus().length} CPUs`,
    );
    for (const endpoint of ENDPOINTS) {
      for (let round = 0; round < ROUNDS; round++) {
        const order: Mode[] = round % 2 === 0 ? ["off", "on"] : ["on", "off"];
        for (const mode of order) {
          const sample = await measure(children[mode]!, endpoint, keys, leadId, query);
          samples[mode][endpoint].push(sample);
          console.log(
            `  ${endpoint.padEnd(28)} policies ${mode.padEnd(3)} round ${round + 1}: ${fmt(sample.rps)} req/s, p50 ${sample.p50} ms, p99 ${sample.p99} ms` +
              (sample.non2xx || sample.errors ? `, ${sample.non2xx} non-2xx, ${sample.errors} errors` : ""),
          );
        }
      }
    }

    const loadAfter = loadavg()[0]!;
    const policies = await probePolicies(children.on, db, keys[2]!, leadId);

    // Summary.
    const rows: string[] = [];
    const overheads: { endpoint: Endpoint; pct: number }[] = [];
    let problems = 0;
    let peakOnRps = 0;
    for (const endpoint of ENDPOINTS) {
      const byMode = {} as Record<Mode, { rps: number; p50: number; p99: number; non2xx: number; errors: number }>;
      for (const mode of ["off", "on"] as Mode[]) {
        const list = samples[mode][endpoint];
        byMode[mode] = {
          rps: mean(list.map((s) => s.rps)),
          p50: mean(list.map((s) => s.p50)),
          p99: mean(list.map((s) => s.p99)),
          non2xx: list.reduce((a, s) => a + s.non2xx, 0),
          errors: list.reduce((a, s) => a + s.errors, 0),
        };
        problems += byMode[mode].non2xx + byMode[mode].errors;
        rows.push(
          `| ${endpoint} | ${mode} | ${fmt(byMode[mode].rps)} | ${fmt(byMode[mode].p50, 1)} | ${fmt(byMode[mode].p99, 1)} | ${byMode[mode].non2xx} |`,
        );
      }
      peakOnRps = Math.max(peakOnRps, ...samples.on[endpoint].map((s) => s.rps));
      overheads.push({ endpoint, pct: (1 - byMode.on.rps / byMode.off.rps) * 100 });
    }
    const perKeyPerMinute = (peakOnRps * 60) / KEYS;
    const keyLimit = PLAN_LIMITS.max.requests_per_minute;
    const verdict = (pct: number) => (pct <= TARGET_OVERHEAD ? "met" : "NOT met");
    const table = [
      "| endpoint | policies | req/s | p50 ms | p99 ms | non-2xx |",
      "|---|---|---:|---:|---:|---:|",
      ...rows,
    ].join("\n");
    const overheadLines = overheads
      .map(({ endpoint, pct }) => `- ${endpoint}: policies cost **${fmt(pct, 1)} %** of throughput (target ≤ ${TARGET_OVERHEAD} %: ${verdict(pct)})`)
      .join("\n");

    const report = `# Benchmark: the cost of the policies

Generated by \`npm run bench\` (bench/run.ts) on ${new Date().toISOString()}; overwritten on every run.

Setup: PostgreSQL (scratch database, dropped afterwards) + Redis; two servers as child processes
(\`server/main.ts\`, KONTOR_ENV=production, KONTOR_LOG=silent), one with the policies, one with
KONTOR_POLICIES=off; autocannon in the parent process, ${CONNECTIONS} connections, ${WARMUP} s warm-up
then ${DURATION} s per case, ${ROUNDS} round(s) per endpoint${ROUNDS >= 2 ? " in ABBA order (off, on, on, off)" : ""}; values are means over
rounds. Machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? "unknown"}), Node ${process.version}; server, autocannon,
PostgreSQL and Redis share it, so expect a few percent of noise between runs. 1-minute load average: ${fmt(loadBefore, 1)} before,
${fmt(loadAfter, 1)} after measuring${Math.max(loadBefore, loadAfter) > cpus().length ? " (other work was running: treat the numbers with care)" : ""}. Code: ${gitState()}.

Read: \`GET /v1/leads/{id}\` and \`POST /graphql\` with \`query { lead(id: …) { ${fields.length} fields } }\`,
the same fields as the REST representation (checked equal before measuring).

Rate limit: the workspace is on the max plan (${keyLimit} requests per minute per credential). One key
would cap the run at ${keyLimit / 60} req/s, so requests rotate over ${KEYS} keys of the workspace, in both
modes. Every request is still counted by the limiter (in Redis); at the peak of ${fmt(peakOnRps)} req/s each key saw about
${fmt(perKeyPerMinute)} requests per minute, ${perKeyPerMinute < keyLimit ? "under" : "OVER"} its limit. Non-2xx answers during the measurement: ${problems}${problems ? " (the measurement is not clean: see the table)" : ""}.

${table}

${overheadLines}

Policies on the policies-on server at the time of the run (probed after measuring):

${Object.entries(policies)
  .map(([policy, state]) => `- ${policy}: ${state}`)
  .join("\n")}
`;
    writeFileSync(join(ROOT, "bench", "results.md"), report);
    console.log(`\n${table}\n\n${overheadLines}\n`);
    for (const [policy, state] of Object.entries(policies)) console.log(`- ${policy}: ${state}`);
    console.log(`\nKeys: peak ${fmt(perKeyPerMinute)} requests/min per key (limit ${keyLimit}); non-2xx or errors: ${problems}.`);
    console.log("Written to bench/results.md");
  } finally {
    await stopServerChild(children.on);
    await stopServerChild(children.off);
    await db.end().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
