/**
 * `npm run bench`, first part: Kontor's throughput against what a user would run instead, measured
 * side by side in one run on PostgreSQL + Redis, with the CPU and memory each server needs.
 *
 * - A scratch PostgreSQL database (dropped afterwards, with its Redis keys); one workspace on the
 *   max plan, BENCH_KEYS keys of it, one lead with every field set and 40 more for the list.
 * - Servers, each a child process so autocannon (here) stays off their event loops; only one is
 *   loaded at a time:
 *   - Fastify + Prisma: bench/fastify.ts, Fastify with Kontor's own Prisma client, the same key
 *     check and JSON, no limits or request logs: the peer the targets compare Kontor with;
 *   - bare: bench/bare.ts, `node:http` + `pg`, the same key check, query and JSON: the floor, for
 *     information;
 *   - Kontor (`dist/server/main.js`, the production build as `npm start` runs it, KONTOR_ENV=production) with the policies;
 *   - Kontor with KONTOR_POLICIES=off (what the policies cost, for information);
 *   - Kontor with KONTOR_WORKERS=BENCH_WORKERS (2), the cluster mode, when the server supports it
 *     (it forks workers below the process started): started for its comparison only.
 *   The bodies of both peers are checked byte for byte against Kontor's before measuring.
 * - Cases (BENCH_CASES, default all, comma-separated):
 *   - get: `GET /v1/leads/{id}` bare, Fastify + Prisma, Kontor REST, Kontor GraphQL (`lead(id)`
 *     with the same 21 fields), Kontor MCP, Kontor REST with policies off;
 *   - list: `GET /v1/leads` (20 per page, newest first) bare, Fastify + Prisma, Kontor;
 *   - post: `POST /v1/leads` (lead + its lead.created outbox event in one transaction) bare,
 *     Fastify + Prisma, Kontor, each request with its own Idempotency-Key (as the SDK sends one per
 *     create; the peers ignore it);
 *   - cluster: `GET /v1/leads/{id}` Kontor one process vs BENCH_WORKERS workers on one port.
 *   Every case measures its servers in rounds, forward then backward (ABCD DCBA with
 *   BENCH_ROUNDS=2), so drift of the machine does not favour one; each measurement is warmed up.
 *   Cases run in the order above, creates last; each starts once the webhook dispatchers have
 *   taken every event of the outbox. The cluster is stopped after its case.
 * - Targets: Kontor REST ≥ 80 % of Fastify + Prisma on `GET /v1/leads/{id}`, ≥ 70 % on
 *   `GET /v1/leads` and `POST /v1/leads`; GraphQL `lead(id)` ≥ 95 % of REST; one production process
 *   ≤ 120 MB RSS idle after start and ≤ 200 MB after this run's load (growth over time is the
 *   soak's, bench/soak.ts); KONTOR_WORKERS=2 ≥ 1.7× one process (judged only when the machine has
 *   cores to spare). Ratios to bare, MCP against GraphQL and the policies' cost are information.
 * - Requests rotate over the keys, so the limiter (which counts every request in Redis) refuses
 *   none; any non-2xx answer is reported.
 * - During each measurement the CPU time of the loaded server's process tree, of autocannon (this
 *   process), of PostgreSQL (the bench database's backends, and all its processes), of Redis and of
 *   the whole machine is read from /proc; RSS (VmRSS, VmHWM) of every server after start, idle
 *   after a warm-up, and after the run's load. The report gives each server's CPU per request (and
 *   PostgreSQL's and Redis's), from which what N cores serve follows.
 *
 * Environment: BENCH_DURATION (s per measurement, default 10), BENCH_WARMUP (s, default 3),
 * BENCH_CONNECTIONS (10), BENCH_ROUNDS (2), BENCH_KEYS (300), BENCH_WORKERS (2),
 * BENCH_CLUSTER_WARMUP_REQUESTS (5000 per worker before the cluster is measured), BENCH_CASES
 * (get,list,cluster,post), BENCH_POSTGRES_URL, BENCH_REDIS_URL, BENCH_PROFILE_DIR (a CPU profile of
 * each Kontor server goes there), BENCH_PROFILE (auto, always or off; see below). Results: printed,
 * and written to bench/results.md.
 *
 * Where the time goes: for every throughput target not met (BENCH_PROFILE=auto, the default;
 * `always` for every case, `off` never), a fresh Fastify + Prisma server and a fresh Kontor (or
 * Kontor alone, GraphQL against REST) run under V8's CPU profiler (`--cpu-prof`) and are loaded
 * once more, case by case; each load's window of the profile is summed by part of the stack
 * (bench/profile.ts) into CPU microseconds per request, side by side: what Kontor spends beyond
 * the peer, and where.
 */
import { execSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";
import pg from "pg";
import { PLAN_LIMITS } from "../schema/lib/plans.ts";
import {
  call,
  createFixture,
  type Fixture,
  KIND_LABEL,
  type Kind,
  MCP_HEADERS,
  mcpCall,
  mcpStructured,
  POST_BODY,
  requestOf,
} from "./load.ts";
import { cpuDelta, cpuTimes, machineCpu, memory, processesNamed, processTree, treeMemory } from "./proc.ts";
import {
  LIBRARIES,
  mainThreadByPart,
  NODE,
  nowUs,
  PARTS,
  type Part,
  readProfiles,
  type Window,
} from "./profile.ts";
import { createScratch, type Scratch } from "./scratch.ts";
import {
  freePort,
  kontorSettings,
  num,
  ROOT,
  type ServerChild,
  sleep,
  startServerChild,
  stopServerChild,
} from "./support.ts";

const DURATION = num("BENCH_DURATION", 10);
const WARMUP = num("BENCH_WARMUP", 3);
const CONNECTIONS = num("BENCH_CONNECTIONS", 10);
const ROUNDS = num("BENCH_ROUNDS", 2);
const KEYS = num("BENCH_KEYS", 300);
const WORKERS = num("BENCH_WORKERS", 2);
const WARMUP_REQUESTS = num("BENCH_CLUSTER_WARMUP_REQUESTS", 5_000);
const ALL_CASES = ["get", "list", "cluster", "post"] as const;
type Case = (typeof ALL_CASES)[number];
const CASES = (process.env.BENCH_CASES ?? ALL_CASES.join(","))
  .split(",")
  .map((c) => c.trim())
  .filter(Boolean) as Case[];
for (const c of CASES)
  if (!ALL_CASES.includes(c))
    throw new Error(`BENCH_CASES: unknown case '${c}' (known: ${ALL_CASES.join(", ")}).`);
const BENCH_SECRET_KEY = randomBytes(32).toString("base64url");

/** Throughput ratios to reach (mcp and policies are shown as information), RSS limits in MB. */
const TARGETS = {
  get: 0.8,
  list: 0.7,
  post: 0.7,
  graphql: 0.95,
  mcp: 1 / 1.2,
  cluster: 1.7,
  policies: 0.15,
  rssIdle: 120,
  rssAfter: 200,
  /** A production start (migrations applied) to its first `/health` answer, ms. */
  startMs: 2_000,
};
/** Production starts timed (the median is the target's value). */
const STARTS = num("BENCH_STARTS", 5);
const PROFILE = process.env.BENCH_PROFILE ?? "auto";
if (!["auto", "always", "off"].includes(PROFILE))
  throw new Error(`BENCH_PROFILE must be auto, always or off, got '${PROFILE}'.`);

// ---- servers ----

/** Kontor, or one of the peers it is compared with. */
type Role = "kontor" | "bare" | "fastify";
/** The child process of each peer. */
const PEER_SCRIPTS = { bare: "bench/bare.ts", fastify: "bench/fastify.ts" } as const;

interface Server {
  name: string;
  role: Role;
  kontor: boolean;
  child: ServerChild;
  pid: number;
  url: string;
  /** Seconds of load it served (warm-ups included). */
  loadedSeconds: number;
  /** MB, summed over its process tree; `own…`: the process started alone (a tree may hold a loader's helper). */
  rss: {
    start?: number;
    idle?: number;
    after?: number;
    peak?: number;
    processes?: number;
    ownStart?: number;
    ownAfter?: number;
  };
  /** CPU it uses with no request coming in (timers, pollers), in cores. */
  idleCores?: number;
}

/** CPU the servers use over `seconds` with nothing sent to them. */
async function idleCpu(servers: Server[], seconds = 2) {
  const before = servers.map((s) => cpuTimes(processTree(s.pid)));
  await sleep(seconds * 1000);
  for (const [i, s] of servers.entries()) {
    s.idleCores = cpuDelta(before[i]!, cpuTimes(processTree(s.pid))) / (seconds * 1000);
  }
}

/**
 * Target 4: `npm start`'s production build started `STARTS` times on the run's database (migrated
 * already, as a deployment's is), each timed from its spawn to its first `/health` answer (tried
 * every 10 ms), then stopped. Run first, with no other server started yet.
 */
async function timeStarts(env: NodeJS.ProcessEnv): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const child = await startServerChild("start time", env, await freePort(), {
      readyPath: "/health",
      pollMs: 10,
      profile: false,
    });
    times.push(child.startedInMs);
    await stopServerChild(child);
  }
  return times;
}

/** A peer's child process; `profileDir`: under V8's CPU profiler, writing there. */
const startPeer = (
  name: string,
  role: Exclude<Role, "kontor">,
  env: NodeJS.ProcessEnv,
  port: number,
  profileDir?: string,
) =>
  startServerChild(name, env, port, {
    script: PEER_SCRIPTS[role],
    readyPath: "/ready",
    ...(profileDir ? { profileDir } : { profile: false }),
  });

async function start(name: string, role: Role, env: NodeJS.ProcessEnv, port: number): Promise<Server> {
  const child =
    role === "kontor" ? await startServerChild(name, env, port) : await startPeer(name, role, env, port);
  const server: Server = {
    name,
    role,
    kontor: role === "kontor",
    child,
    pid: child.process.pid!,
    url: child.url,
    loadedSeconds: 0,
    rss: {},
  };
  await sleep(500);
  server.rss.start = treeMemory(server.pid)?.rssMb;
  server.rss.ownStart = memory(server.pid)?.rssMb;
  return server;
}

function afterLoad(server: Server) {
  const mem = treeMemory(server.pid);
  server.rss.after = mem?.rssMb;
  server.rss.peak = mem?.peakMb;
  server.rss.processes = mem?.processes.length;
  server.rss.ownAfter = memory(server.pid)?.rssMb;
}

// ---- measuring ----

/** CPU used during one measurement, in ms, by part. */
interface CpuUse {
  wallMs: number;
  server: number;
  perProcess: Map<number, number>;
  autocannon: number;
  pgBench: number;
  pgAll: number;
  redis: number;
  machineBusy: number;
  machineTotal: number;
}

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  cpu: CpuUse | null;
}

async function snapshot(server: Server, db: pg.Client) {
  const backends = (
    await db.query<{ pid: number }>("select pid from pg_stat_activity where datname = current_database()")
  ).rows.map((r) => r.pid);
  const tree = processTree(server.pid);
  return {
    at: performance.now(),
    self: process.cpuUsage(),
    tree: cpuTimes(tree),
    pgBench: cpuTimes(backends),
    pgAll: cpuTimes(processesNamed("postgres")),
    redis: cpuTimes(processesNamed("redis-server")),
    machine: machineCpu(),
  };
}

function cpuUse(
  before: Awaited<ReturnType<typeof snapshot>>,
  after: Awaited<ReturnType<typeof snapshot>>,
): CpuUse | null {
  if (!after.tree.size || !before.machine || !after.machine) return null;
  const self = process.cpuUsage(before.self);
  const perProcess = new Map<number, number>();
  for (const [pid, ms] of after.tree) perProcess.set(pid, ms - (before.tree.get(pid) ?? 0));
  return {
    wallMs: after.at - before.at,
    server: cpuDelta(before.tree, after.tree),
    perProcess,
    autocannon: (self.user + self.system) / 1000,
    pgBench: cpuDelta(before.pgBench, after.pgBench),
    pgAll: cpuDelta(before.pgAll, after.pgAll),
    redis: cpuDelta(before.redis, after.redis),
    machineBusy: after.machine.busyMs - before.machine.busyMs,
    machineTotal: after.machine.totalMs - before.machine.totalMs,
  };
}

const cannon = (url: string, request: autocannon.Request, seconds: number) =>
  autocannon({ url, connections: CONNECTIONS, duration: seconds, requests: [request] });

async function measure(server: Server, kind: Kind, fx: Fixture, db: pg.Client): Promise<Sample> {
  await cannon(server.url, requestOf(kind, fx), WARMUP);
  const before = await snapshot(server, db);
  const result = await cannon(server.url, requestOf(kind, fx), DURATION);
  const after = await snapshot(server, db);
  server.loadedSeconds += WARMUP + DURATION;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    cpu: cpuUse(before, after),
  };
}

interface Variant {
  id: string;
  label: string;
  server: Server;
  kind: Kind;
  samples: Sample[];
}

/**
 * Waits (up to 60 s) until the outbox holds no event the webhook dispatchers have not taken: the
 * creates of one case must not leave the servers busy fanning out during the next one.
 */
async function drainOutbox(db: pg.Client) {
  const started = Date.now();
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      "select count(*)::int as n from events where dispatched_at is null",
    );
    if (rows[0]!.n === 0 || Date.now() - started > 60_000) {
      if (Date.now() - started > 1_000)
        console.log(
          `  (waited ${fmt((Date.now() - started) / 1000, 1)} s for the outbox to drain; ${rows[0]!.n} events left)`,
        );
      return;
    }
    await sleep(250);
  }
}

async function runCase(title: string, variants: Variant[], fx: Fixture, db: pg.Client) {
  console.log(`\n${title}`);
  await drainOutbox(db);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const sample = await measure(v.server, v.kind, fx, db);
      v.samples.push(sample);
      console.log(
        `  round ${round + 1}  ${v.label.padEnd(40)} ${fmt(sample.rps).padStart(6)} req/s  p50 ${sample.p50} ms  p99 ${sample.p99} ms` +
          (sample.cpu ? `  server ${fmt((sample.cpu.server / sample.cpu.wallMs) * 1, 2)} cores` : "") +
          (sample.non2xx || sample.errors ? `  ${sample.non2xx} non-2xx, ${sample.errors} errors` : ""),
      );
    }
  }
}

// ---- checks ----

function same(
  what: string,
  a: { status: number; text: string },
  b: { status: number; text: string },
  status: number,
) {
  if (a.status !== status || b.status !== status || a.text !== b.text) {
    throw new Error(
      `${what}: the bodies differ (or a status is not ${status}):\n  ${a.status} ${a.text}\n  ${b.status} ${b.text}`,
    );
  }
}

/** A created lead or its event with what differs between two creates (id, times) blanked. */
function masked(text: string): string {
  const value = JSON.parse(text) as Record<string, unknown>;
  return JSON.stringify({ ...value, id: "…", created_at: "…", updated_at: "…" });
}

/** Bodies (and the outbox rows of a create) of every peer equal Kontor's, before anything is measured. */
async function checkBodies(kontor: Server[], peers: Server[], fx: Fixture, db: pg.Client) {
  const key = fx.keys[1]!;
  for (const k of kontor) {
    const page = JSON.parse((await call(k.url, "/v1/leads", key)).text) as { next_cursor: string };
    const second = `/v1/leads?limit=5&cursor=${page.next_cursor}`;
    for (const peer of peers) {
      same(
        `GET /v1/leads/{id}, ${k.name} vs ${peer.name}`,
        await call(k.url, `/v1/leads/${fx.leadId}`, key),
        await call(peer.url, `/v1/leads/${fx.leadId}`, key),
        200,
      );
      same(
        `GET /v1/leads, ${k.name} vs ${peer.name}`,
        await call(k.url, "/v1/leads", key),
        await call(peer.url, "/v1/leads", key),
        200,
      );
      same(
        `GET /v1/leads (second page), ${k.name} vs ${peer.name}`,
        await call(k.url, second, key),
        await call(peer.url, second, key),
        200,
      );
    }
    const rest = await call(k.url, `/v1/leads/${fx.leadId}`, key);
    const gql = await call(k.url, "/graphql", key, {
      method: "POST",
      body: JSON.stringify({ query: fx.query }),
    });
    const gqlLead = JSON.stringify((JSON.parse(gql.text) as { data?: { lead?: unknown } }).data?.lead);
    if (gql.status !== 200 || gqlLead !== rest.text)
      throw new Error(`GraphQL and REST differ on ${k.name}: ${rest.text} vs ${gql.text}`);
    const mcp = await call(k.url, "/mcp", key, {
      method: "POST",
      body: mcpCall(fx.leadId),
      headers: MCP_HEADERS,
    });
    const mcpLead = JSON.stringify(mcpStructured(mcp.text));
    if (mcp.status !== 200 || mcpLead !== rest.text)
      throw new Error(`MCP and REST differ on ${k.name}: ${rest.text} vs ${mcp.text}`);
  }
  // A create through each: the same answer and the same lead.created event in the outbox.
  const kontorPost = await call(kontor[0]!.url, "/v1/leads", key, { method: "POST", body: POST_BODY });
  const posts = [kontorPost];
  for (const peer of peers) {
    const peerPost = await call(peer.url, "/v1/leads", key, { method: "POST", body: POST_BODY });
    if (
      kontorPost.status !== 201 ||
      peerPost.status !== 201 ||
      masked(kontorPost.text) !== masked(peerPost.text)
    ) {
      throw new Error(
        `POST /v1/leads, Kontor vs ${peer.name}: the answers differ beyond id and times:\n  ${kontorPost.status} ${kontorPost.text}\n  ${peerPost.status} ${peerPost.text}`,
      );
    }
    posts.push(peerPost);
  }
  for (const post of posts) {
    const id = (JSON.parse(post.text) as { id: string }).id;
    const { rows } = await db.query<{ type: string; workspace_id: string; data: string }>(
      "select type, workspace_id, data::text as data from events where data->>'id' = $1",
      [id],
    );
    if (rows.length !== 1 || rows[0]!.type !== "lead.created" || rows[0]!.data !== post.text) {
      throw new Error(
        `POST /v1/leads: the outbox of ${id} is not one lead.created event holding the answer: ${JSON.stringify(rows)}`,
      );
    }
  }
}

/** What each policy did on the policies-on server, observed from outside. */
async function probePolicies(on: Server, db: pg.Client, key: string, leadId: string) {
  const found: Record<string, string> = {};
  const res = await fetch(`${on.url}/v1/leads/${leadId}`, { headers: { authorization: `Bearer ${key}` } });
  found["rate limits"] = res.headers.get("x-ratelimit-limit")
    ? `active (X-RateLimit-Limit ${res.headers.get("x-ratelimit-limit")}, plan ${res.headers.get("x-ratelimit-plan")})`
    : "no X-RateLimit headers: stub or inactive";
  const idem = `bench-${randomBytes(6).toString("hex")}`;
  const post = () =>
    fetch(`${on.url}/v1/leads`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "idempotency-key": idem,
      },
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
    body: JSON.stringify({
      query: "{ projects { data { tasks { project { tasks { project { tasks { id } } } } } } } }",
    }),
  });
  const deepBody = (await deep.json()) as { errors?: { extensions?: { code?: string } }[] };
  found["GraphQL limits"] =
    deep.status === 400 && deepBody.errors?.[0]?.extensions?.code === "query_too_costly"
      ? "active (lists of lists of lists: 400 query_too_costly)"
      : `not refusing lists of lists of lists (status ${deep.status})`;
  try {
    await sleep(1_000); // request logs are written in the background
    const { rows } = await db.query<{ n: string }>("select count(*)::text as n from request_logs");
    found["request logs"] =
      Number(rows[0]!.n) > 0
        ? `active (${fmt(Number(rows[0]!.n))} rows in request_logs after the run)`
        : "request_logs is empty: stub or inactive";
  } catch (error) {
    found["request logs"] = `no request_logs table (${(error as Error).message}): stub or inactive`;
  }
  return found;
}

// ---- the cluster ----

/** A start-up failure in a sentence: the `error` of a JSON log line, else the first line, shortened. */
function firstLine(message: string): string {
  const line = message.trim().split("\n")[0] ?? "";
  const json = /\{.*\}/.exec(line)?.[0];
  let text = line;
  try {
    if (json)
      text = `${line.slice(0, line.indexOf(json))}${String((JSON.parse(json) as { error?: unknown }).error ?? json)}`;
  } catch {
    // not JSON
  }
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/**
 * Kontor with KONTOR_WORKERS: resolves with the server once processes below the one started exist
 * and each of them has served part of a warm-up (connections are spread over the workers as they
 * are opened, so a worker not listening yet would get none), or with why not.
 */
async function startCluster(env: NodeJS.ProcessEnv, fx: Fixture): Promise<{ server?: Server; note: string }> {
  let server: Server;
  try {
    server = await start(
      `Kontor, KONTOR_WORKERS=${WORKERS}`,
      "kontor",
      { ...env, KONTOR_WORKERS: String(WORKERS) },
      await freePort(),
    );
  } catch (error) {
    console.error(error);
    return {
      note: `Kontor did not start with KONTOR_WORKERS=${WORKERS} (${firstLine((error as Error).message)}), so target 5 was not measured.`,
    };
  }
  const deadline = Date.now() + 30_000;
  let tree = processTree(server.pid);
  while (tree.length < WORKERS + 1 && Date.now() < deadline) {
    await sleep(250);
    tree = processTree(server.pid);
  }
  server.rss.start = treeMemory(server.pid)?.rssMb;
  if (tree.length === 1) {
    await stopServerChild(server.child);
    return {
      note: `KONTOR_WORKERS=${WORKERS} started no worker process (one process, pid ${server.pid}): the cluster mode is not in this build, so target 5 was not measured.`,
    };
  }
  for (let attempt = 0; attempt < 10; attempt++) {
    const before = cpuTimes(processTree(server.pid));
    await cannon(server.url, requestOf("get", fx), WARMUP);
    server.loadedSeconds += WARMUP;
    const used = [...cpuTimes(processTree(server.pid))].map(([pid, ms]) => ({
      pid,
      ms: ms - (before.get(pid) ?? 0),
    }));
    const total = used.reduce((a, u) => a + u.ms, 0);
    const serving = used.filter((u) => u.ms >= total * 0.1);
    if (serving.length >= Math.min(WORKERS, used.length)) {
      // Fresh processes against one warmed by the whole run: V8 optimises after enough calls, so
      // the workers are warmed by requests (BENCH_CLUSTER_WARMUP_REQUESTS each, default 5 000),
      // in slices of 2 s, for 90 s at most.
      const goal = WARMUP_REQUESTS * WORKERS;
      const until = Date.now() + 90_000;
      let served = 0;
      while (served < goal && Date.now() < until) {
        served += (await cannon(server.url, requestOf("get", fx), 2)).requests.total;
        server.loadedSeconds += 2;
      }
      await sleep(1_000);
      const mem = treeMemory(server.pid);
      server.rss.idle = mem?.rssMb;
      server.rss.processes = mem?.processes.length;
      await idleCpu([server]);
      return {
        server,
        note: `${used.length} processes (pid ${server.pid} and ${used.length - 1} below it); ${serving.length} of them served the warm-up.`,
      };
    }
    await sleep(1_000);
  }
  const note = `KONTOR_WORKERS=${WORKERS} started ${tree.length} processes, but fewer than ${WORKERS} of them served load in 10 warm-ups.`;
  await stopServerChild(server.child);
  return { note: `${note} Target 5 was not measured.` };
}

// ---- where the time goes ----

type Side = { label: string; server: Role; kind: Kind };
interface Comparison {
  title: string;
  why: string;
  base: Side;
  subject: Side;
}
interface ProfiledLoad {
  window: Window;
  requests: number;
  rps: number;
  problems: number;
  byPart?: { total: number; parts: Map<Part, number> };
}

const loadKey = (side: Side) => `${side.server}:${side.kind}`;
/**
 * Loads a fresh server of each side (a peer, Kontor) under V8's CPU profiler, one kind of request
 * at a time, and sets the comparisons side by side by part of the stack, in CPU µs per request.
 */
async function whereTheTimeGoes(
  comparisons: Comparison[],
  env: NodeJS.ProcessEnv,
  fx: Fixture,
): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "kontor-bench-profile-"));
  const loads = new Map<string, ProfiledLoad>();
  const sides = [
    ...new Map(comparisons.flatMap((c) => [c.base, c.subject]).map((side) => [loadKey(side), side])).values(),
  ];
  const roles = [...new Set(sides.map((side) => side.server))];
  const started: Partial<Record<Role, ServerChild>> = {};
  const dirOf = (role: Role) => join(dir, role);
  console.log(`
Where the time goes: ${comparisons.map((c) => c.title).join("; ")} (CPU profiles, ${DURATION} s per load)`);
  try {
    for (const role of roles) {
      started[role] =
        role === "kontor"
          ? await startServerChild(
              "Kontor, profiled",
              { ...env, ...kontorSettings(BENCH_SECRET_KEY) },
              await freePort(),
              {
                profileDir: dirOf(role),
              },
            )
          : await startPeer(
              `${role}, profiled`,
              role,
              { DATABASE_URL: env.DATABASE_URL },
              await freePort(),
              dirOf(role),
            );
    }
    for (const side of sides) {
      const url = started[side.server]!.url;
      await cannon(url, requestOf(side.kind, fx), WARMUP);
      const fromUs = nowUs();
      const result = await cannon(url, requestOf(side.kind, fx), DURATION);
      loads.set(loadKey(side), {
        window: { fromUs, toUs: nowUs() },
        requests: result.requests.total,
        rps: result.requests.average,
        problems: result.non2xx + result.errors,
      });
      console.log(`  ${side.label.padEnd(40)} ${fmt(result.requests.average)} req/s under the profiler`);
    }
  } finally {
    for (const role of roles) await stopServerChild(started[role]);
  }
  try {
    for (const role of roles) {
      const profiles = readProfiles(dirOf(role));
      for (const side of sides.filter((s) => s.server === role)) {
        const load = loads.get(loadKey(side))!;
        load.byPart = mainThreadByPart(profiles, load.window);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const perRequest = (load: ProfiledLoad, parts: readonly Part[]) =>
    parts.reduce((a, part) => a + (load.byPart!.parts.get(part) ?? 0), 0) / Math.max(1, load.requests);
  const sections = comparisons.map((c) => {
    const base = loads.get(loadKey(c.base))!;
    const subject = loads.get(loadKey(c.subject))!;
    const diff = perRequest(subject, PARTS) - perRequest(base, PARTS);
    const rows = PARTS.map((part) => ({ part, a: perRequest(base, [part]), b: perRequest(subject, [part]) }))
      .filter((r) => r.a >= 0.5 || r.b >= 0.5)
      .sort((x, y) => y.b - y.a - (x.b - x.a))
      .map(
        (r) =>
          `| ${r.part} | ${fmt(r.a)} | ${fmt(r.b)} | ${r.b - r.a >= 0 ? "+" : "−"}${fmt(Math.abs(r.b - r.a))} | ${diff > 0 ? pct((r.b - r.a) / diff) : "n/a"} |`,
      );
    const totalA = perRequest(base, PARTS);
    const totalB = perRequest(subject, PARTS);
    const share = (parts: Part[]) =>
      diff > 0 ? pct((perRequest(subject, parts) - perRequest(base, parts)) / diff) : "n/a";
    const problems = base.problems + subject.problems;
    return `### ${c.title}

${c.why}

| part of the stack (main thread, CPU µs per request) | ${c.base.label} (${fmt(base.rps)} req/s) | ${c.subject.label} (${fmt(subject.rps)} req/s) | difference | share of the difference |
|---|---:|---:|---:|---:|
${rows.join("\n")}
| **all** | **${fmt(totalA)}** | **${fmt(totalB)}** | **${diff >= 0 ? "+" : "−"}${fmt(Math.abs(diff))}** | 100 % |

Under the profiler ${c.base.label} needed ${fmt(totalA)} µs of CPU per request on its main thread, ${c.subject.label} ${fmt(totalB)} µs (a ratio
of ${pct(totalA / totalB)}: with the server's thread the bottleneck, the most ${c.subject.label} can serve of ${c.base.label}'s requests). ${
      diff > 0
        ? `Of the ${fmt(diff)} µs more, the stack's libraries take ${share(LIBRARIES)} (Prisma ${share(["Prisma client (query compiler, interpreter, mapping)"])}, GraphQL execution + Pothos
${share(["GraphQL execution (graphql-js, @graphql-tools/executor)", "Pothos (scope-auth, resolvers)"])}, Yoga + Fetch API + Sofa ${share(["Yoga + envelop + armor", "Fetch API layer (@whatwg-node)", "Sofa"])}, ioredis ${share(["ioredis + rate-limiter-flexible"])}), Node and native code ${share(NODE)},
the garbage collector and V8 ${share(["garbage collector", "V8 (compiler, runtime: no JS frame)"])}, Kontor's own code ${share(["Kontor's code (server/, schema/)"])}.`
        : `${c.subject.label} used no more CPU per request than ${c.base.label} under the profiler: the gap measured above is not the server's main thread.`
    }${problems ? ` (${problems} non-2xx answers or errors while profiling.)` : ""}`;
  });
  return sections.join("\n\n");
}

// ---- summary helpers ----

const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);
const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || !Number.isFinite(n)
    ? "n/a"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const pct = (ratio: number) => `${fmt(ratio * 100)} %`;
const times = (ratio: number) => `${fmt(ratio, 2)}×`;
const rpsOf = (v: Variant) => mean(v.samples.map((s) => s.rps));
/** Per-round ratios of a to b (the same round of each), then the ratio of the means. */
function ratio(a: Variant, b: Variant) {
  const rounds = a.samples.map((s, i) => s.rps / b.samples[i]!.rps);
  return { value: rpsOf(a) / rpsOf(b), rounds };
}
const cores = (v: Variant, part: (c: CpuUse) => number) =>
  mean(v.samples.filter((s) => s.cpu).map((s) => part(s.cpu!) / s.cpu!.wallMs));
/** CPU µs per request a part used, mean over the rounds. */
const perRequest = (v: Variant, part: (c: CpuUse) => number) =>
  mean(v.samples.filter((s) => s.cpu).map((s) => (part(s.cpu!) * 1000) / Math.max(1, s.requests)));

function gitState(): string {
  try {
    const commit = execSync("git rev-parse --short HEAD", { cwd: ROOT }).toString().trim();
    const dirty = execSync("git status --porcelain", { cwd: ROOT }).toString().trim()
      ? " with uncommitted changes"
      : "";
    return `${commit}${dirty}`;
  } catch {
    return "unknown";
  }
}

// ---- main ----

async function main() {
  const runStarted = Date.now();
  const scratch: Scratch = await createScratch(KEYS);
  const { env, keys } = scratch;
  const servers: Server[] = [];
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  try {
    await db.connect();
    const starts = await timeStarts({ ...env, ...kontorSettings(BENCH_SECRET_KEY) });
    const peerEnv = { DATABASE_URL: env.DATABASE_URL };
    const bare = await start("bare node:http + pg", "bare", peerEnv, await freePort());
    servers.push(bare);
    const fastify = await start("Fastify + Prisma", "fastify", peerEnv, await freePort());
    servers.push(fastify);
    const on = await start(
      "Kontor",
      "kontor",
      { ...env, ...kontorSettings(BENCH_SECRET_KEY) },
      await freePort(),
    );
    servers.push(on);
    const off = CASES.includes("get")
      ? await start(
          "Kontor, policies off",
          "kontor",
          { ...env, ...kontorSettings(BENCH_SECRET_KEY, false) },
          await freePort(),
        )
      : undefined;
    if (off) servers.push(off);

    const fixture = await createFixture(on.url, keys);
    const { fields } = fixture;
    const fx: Fixture = fixture;
    await checkBodies(off ? [on, off] : [on], [bare, fastify], fx, db);

    // Warm every server up on every kind it serves, then its idle memory.
    for (const server of servers) {
      const kinds: Kind[] = server.kontor
        ? ["get", "list", "graphql", "mcp", "post"]
        : ["get", "list", "post"];
      await autocannon({
        url: server.url,
        connections: CONNECTIONS,
        duration: WARMUP,
        requests: kinds.map((k) => requestOf(k, fx)),
      });
      server.loadedSeconds += WARMUP;
    }
    await sleep(1_000);
    for (const server of servers) server.rss.idle = treeMemory(server.pid)?.rssMb;
    await idleCpu(servers);

    const loadBefore = loadavg()[0]!;
    console.log(
      `Kontor bench: ${DURATION} s per measurement after ${WARMUP} s warm-up, ${CONNECTIONS} connections, ${ROUNDS} round(s), ${KEYS} keys, ${cpus().length} CPUs; cases ${CASES.join(", ")}`,
    );
    const variant = (id: string, label: string, server: Server, kind: Kind): Variant => ({
      id,
      label,
      server,
      kind,
      samples: [],
    });
    const v: Record<string, Variant> = {};
    if (CASES.includes("get")) {
      v.bareGet = variant("bareGet", "bare GET /v1/leads/{id}", bare, "get");
      v.fastifyGet = variant("fastifyGet", "Fastify + Prisma GET /v1/leads/{id}", fastify, "get");
      v.rest = variant("rest", "Kontor REST GET /v1/leads/{id}", on, "get");
      v.graphql = variant("graphql", "Kontor GraphQL lead(id), same fields", on, "graphql");
      v.mcp = variant("mcp", "Kontor MCP tools/call get_lead", on, "mcp");
      v.restOff = variant("restOff", "Kontor REST GET, policies off", off!, "get");
      await runCase(
        "GET /v1/leads/{id}: bare, Fastify + Prisma, Kontor REST, GraphQL, MCP, REST with policies off",
        [v.bareGet, v.fastifyGet, v.rest, v.graphql, v.mcp, v.restOff],
        fx,
        db,
      );
    }
    if (CASES.includes("list")) {
      v.bareList = variant("bareList", "bare GET /v1/leads", bare, "list");
      v.fastifyList = variant("fastifyList", "Fastify + Prisma GET /v1/leads", fastify, "list");
      v.list = variant("list", "Kontor REST GET /v1/leads", on, "list");
      await runCase(
        "GET /v1/leads (20 per page): bare, Fastify + Prisma, Kontor",
        [v.bareList, v.fastifyList, v.list],
        fx,
        db,
      );
    }
    let clusterNote = "not run (BENCH_CASES)";
    let cluster: Server | undefined;
    if (CASES.includes("cluster")) {
      const started = await startCluster({ ...env, ...kontorSettings(BENCH_SECRET_KEY) }, fx);
      clusterNote = started.note;
      cluster = started.server;
      if (cluster) {
        servers.push(cluster);
        same(
          `GET /v1/leads/{id}, cluster vs bare`,
          await call(cluster.url, `/v1/leads/${fx.leadId}`, keys[1]!),
          await call(bare.url, `/v1/leads/${fx.leadId}`, keys[1]!),
          200,
        );
        v.single = variant("single", "Kontor REST GET, one process", on, "get");
        v.cluster = variant("cluster", `Kontor REST GET, ${WORKERS} workers`, cluster, "get");
        await runCase(
          `GET /v1/leads/{id}: Kontor one process vs KONTOR_WORKERS=${WORKERS}`,
          [v.single, v.cluster],
          fx,
          db,
        );
        // Its memory now, then out of the way of the next case.
        await sleep(1_000);
        afterLoad(cluster);
        await stopServerChild(cluster.child);
      } else {
        console.log(`\nCluster: ${clusterNote}`);
      }
    }
    if (CASES.includes("post")) {
      v.barePost = variant("barePost", "bare POST /v1/leads", bare, "post");
      v.fastifyPost = variant("fastifyPost", "Fastify + Prisma POST /v1/leads", fastify, "post");
      v.post = variant("post", "Kontor REST POST /v1/leads", on, "post");
      await runCase(
        "POST /v1/leads (lead + outbox event): bare, Fastify + Prisma, Kontor",
        [v.barePost, v.fastifyPost, v.post],
        fx,
        db,
      );
    }
    const loadAfter = loadavg()[0]!;

    await sleep(1_000);
    for (const server of servers) if (server.rss.after === undefined) afterLoad(server);
    const policies = await probePolicies(on, db, keys[2]!, fx.leadId);

    // ---- the report ----
    const variants = Object.values(v);
    const problems = variants.reduce((a, x) => a + x.samples.reduce((b, s) => b + s.non2xx + s.errors, 0), 0);
    const peakKontorRps = Math.max(
      0,
      ...variants
        .filter((x) => x.server.kontor && x.server.pid === on.pid)
        .flatMap((x) => x.samples.map((s) => s.rps)),
    );
    const keyLimit = PLAN_LIMITS.max.requests_per_minute;
    const perKeyPerMinute = (peakKontorRps * 60) / KEYS;

    const targetRows: string[] = [];
    const infoRows: string[] = [];
    const target = (
      name: string,
      r: { value: number; rounds: number[] } | null,
      goal: number,
      text: (x: number) => string,
      verdict?: string,
    ) => {
      if (!r) return;
      targetRows.push(
        `| ${name} | **${text(r.value)}** | ≥ ${text(goal)} | ${verdict ?? (r.value >= goal ? "met" : "NOT met")} | ${r.rounds.map(text).join(", ")} |`,
      );
    };
    /** A row comparing variant `a` with `b`, when both were measured. */
    const ratioTarget = (name: string, a: Variant | undefined, b: Variant | undefined, goal: number) => {
      if (a && b) target(name, ratio(a, b), goal, pct);
    };
    /** An information row: a ratio of `a` to `b` with no verdict. */
    const ratioInfo = (name: string, a: Variant | undefined, b: Variant | undefined) => {
      if (!a || !b) return;
      const r = ratio(a, b);
      infoRows.push(`| ${name} | ${pct(r.value)} | ${r.rounds.map(pct).join(", ")} |`);
    };
    ratioTarget(
      "1. `GET /v1/leads/{id}`: Kontor REST (policies on) ÷ Fastify + Prisma",
      v.rest,
      v.fastifyGet,
      TARGETS.get,
    );
    ratioTarget(
      "1. `GET /v1/leads` (20 per page): Kontor ÷ Fastify + Prisma",
      v.list,
      v.fastifyList,
      TARGETS.list,
    );
    ratioTarget(
      "1. `POST /v1/leads` (+ outbox event): Kontor ÷ Fastify + Prisma",
      v.post,
      v.fastifyPost,
      TARGETS.post,
    );
    ratioTarget("2. GraphQL `lead(id)` (same 21 fields) ÷ REST", v.graphql, v.rest, TARGETS.graphql);
    // The process started, alone: a child of it (a TypeScript loader's helper) is not Kontor's.
    const rssRow = (
      name: string,
      mb: number | undefined,
      tree: number | undefined,
      goal: number,
      note: string,
    ) =>
      targetRows.push(
        `| ${name} | **${fmt(mb)} MB** | ≤ ${goal} MB | ${mb === undefined ? "not measured" : mb <= goal ? "met" : "NOT met"} | ${note}${
          tree !== undefined && mb !== undefined && tree - mb >= 1
            ? `; with the processes below it ${fmt(tree)} MB`
            : ""
        } |`,
      );
    rssRow(
      "3. RSS of one production Kontor process, idle after start",
      on.rss.ownStart,
      on.rss.start,
      TARGETS.rssIdle,
      `${fmt(on.rss.idle)} MB idle after the warm-up`,
    );
    rssRow(
      `3. RSS of one production Kontor process after this run's load (${fmt(on.loadedSeconds)} s)`,
      on.rss.ownAfter,
      on.rss.after,
      TARGETS.rssAfter,
      `peak ${fmt(on.rss.peak)} MB; growth over time: \`npm run bench -- --soak\``,
    );
    const startMedian = [...starts].sort((a, b) => a - b)[Math.floor(starts.length / 2)]!;
    targetRows.push(
      `| 4. A production start (migrations applied) to its first \`/health\` answer, median of ${starts.length} | **${fmt(startMedian / 1000, 2)} s** | ≤ ${fmt(TARGETS.startMs / 1000)} s | ${startMedian <= TARGETS.startMs ? "met" : "NOT met"} | ${starts.map((ms) => `${fmt(ms / 1000, 2)} s`).join(", ")} |`,
    );
    let clusterVerdict = "";
    if (v.cluster) {
      const r = ratio(v.cluster, v.single!);
      const busy = mean(
        v.cluster.samples.filter((s) => s.cpu).map((s) => s.cpu!.machineBusy / s.cpu!.machineTotal),
      );
      const saturated = !(busy < 0.85);
      clusterVerdict = saturated
        ? `not judged: the machine was saturated (${pct(busy)} of ${cpus().length} CPUs busy)`
        : r.value >= TARGETS.cluster
          ? "met"
          : "NOT met";
      target(
        `5. ${WORKERS} workers on one port ÷ one process (\`GET /v1/leads/{id}\`)`,
        r,
        TARGETS.cluster,
        times,
        clusterVerdict,
      );
    } else {
      targetRows.push(
        `| 5. ${WORKERS} workers on one port ÷ one process | n/a | ≥ ${times(TARGETS.cluster)} | not measured (see Cluster below) | |`,
      );
    }
    ratioInfo("`GET /v1/leads/{id}`: Kontor REST ÷ bare", v.rest, v.bareGet);
    ratioInfo("`GET /v1/leads`: Kontor ÷ bare", v.list, v.bareList);
    ratioInfo("`POST /v1/leads`: Kontor ÷ bare", v.post, v.barePost);
    ratioInfo("`GET /v1/leads/{id}`: Fastify + Prisma ÷ bare", v.fastifyGet, v.bareGet);
    ratioInfo("`GET /v1/leads`: Fastify + Prisma ÷ bare", v.fastifyList, v.bareList);
    ratioInfo("`POST /v1/leads`: Fastify + Prisma ÷ bare", v.fastifyPost, v.barePost);
    // Throughput at the same connections: 1/1.2 of GraphQL's is an MCP call's latency 1.2× GraphQL's.
    ratioInfo("MCP `tools/call get_lead` ÷ GraphQL `lead(id)`", v.mcp, v.graphql);
    if (v.restOff && v.rest) {
      const r = ratio(v.rest, v.restOff);
      infoRows.push(
        `| what the policies cost: 1 − REST on ÷ off | ${pct(1 - r.value)} | ${r.rounds.map((x) => pct(1 - x)).join(", ")} |`,
      );
    }
    const targetTable = [
      "| target | measured | goal | verdict | per round |",
      "|---|---:|---:|---|---|",
      ...targetRows,
    ].join("\n");
    const infoTable = infoRows.length
      ? ["| for information | measured | per round |", "|---|---:|---|", ...infoRows].join("\n")
      : "";

    const comparisons: Comparison[] = [];
    const compare = (
      a: Variant | undefined,
      b: Variant | undefined,
      goal: number,
      c: Omit<Comparison, "why">,
    ) => {
      if (!a || !b) return;
      const r = ratio(a, b).value;
      if (PROFILE === "always" || (PROFILE === "auto" && r < goal)) {
        comparisons.push({
          ...c,
          why: `Measured above: ${pct(r)} (goal ≥ ${pct(goal)}, ${r >= goal ? "met" : "not met"}).`,
        });
      }
    };
    const fastifySide = (kind: Kind): Side => ({ label: "Fastify + Prisma", server: "fastify", kind });
    const kontorSide = (kind: Kind, label = "Kontor"): Side => ({ label, server: "kontor", kind });
    compare(v.rest, v.fastifyGet, TARGETS.get, {
      title: "`GET /v1/leads/{id}`: Kontor REST against Fastify + Prisma",
      base: fastifySide("get"),
      subject: kontorSide("get"),
    });
    compare(v.list, v.fastifyList, TARGETS.list, {
      title: "`GET /v1/leads`: Kontor against Fastify + Prisma",
      base: fastifySide("list"),
      subject: kontorSide("list"),
    });
    compare(v.post, v.fastifyPost, TARGETS.post, {
      title: "`POST /v1/leads`: Kontor against Fastify + Prisma",
      base: fastifySide("post"),
      subject: kontorSide("post"),
    });
    compare(v.graphql, v.rest, TARGETS.graphql, {
      title: "GraphQL `lead(id)` against REST `GET /v1/leads/{id}`",
      base: kontorSide("get", "REST"),
      subject: kontorSide("graphql", "GraphQL"),
    });
    const whereText = comparisons.length
      ? `## Where the time goes

${
  PROFILE === "always" ? "Every case" : "Every ratio of targets 1 and 2 not met"
}, profiled: a fresh Kontor (policies on), and a fresh Fastify + Prisma server when it is compared, under
V8's CPU profiler, loaded again as above (${WARMUP} s warm-up, ${DURATION} s measured), the profile of each load's window
summed by part of the stack (bench/profile.ts). Main-thread CPU only: PostgreSQL, Redis and Node's helper threads
are in "CPU by part" below. The profiler slows the servers, deep stacks more than shallow ones (the req/s each
served under it are given): read the shares and the differences, not the absolute microseconds.

${await whereTheTimeGoes(comparisons, env, fx)}
`
      : "";

    const serverTable = [
      "| case | server | req/s | p50 ms | p99 ms | server cores used | non-2xx, errors |",
      "|---|---|---:|---:|---:|---:|---:|",
      ...variants.map(
        (x) =>
          `| ${KIND_LABEL[x.kind]} | ${x.label} | ${fmt(rpsOf(x))} | ${fmt(mean(x.samples.map((s) => s.p50)), 1)} | ${fmt(mean(x.samples.map((s) => s.p99)), 1)} | ${fmt(
            cores(x, (c) => c.server),
            2,
          )} | ${x.samples.reduce((a, s) => a + s.non2xx + s.errors, 0)} |`,
      ),
    ].join("\n");

    // Grouped by server, in the order they were started.
    const byServer = [...variants].sort((a, b) => servers.indexOf(a.server) - servers.indexOf(b.server));
    const perRequestTable = [
      "| server, request | req/s | server CPU µs per request | PostgreSQL (the bench database's backends) µs | Redis µs | all three µs | req/s per core of the server | req/s per core of all three | server RSS after load, MB |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...byServer.map((x) => {
        const server = perRequest(x, (c) => c.server);
        const all = perRequest(x, (c) => c.server + c.pgBench + c.redis);
        return `| ${x.label} | ${fmt(rpsOf(x))} | ${fmt(server)} | ${fmt(perRequest(x, (c) => c.pgBench))} | ${fmt(
          perRequest(x, (c) => c.redis),
        )} | ${fmt(all)} | ${fmt(1e6 / server)} | ${fmt(1e6 / all)} | ${fmt(x.server.rss.after)} |`;
      }),
    ].join("\n");

    const n = cpus().length;
    const cpuTable = [
      `| server (cores = CPU s per s of the measurement) | the server's processes | autocannon (bench process) | PostgreSQL: the bench database's backends | PostgreSQL: all its processes | Redis | everything else (other processes, kernel) | the machine: busy of ${n} |`,
      "|---|---:|---:|---:|---:|---:|---:|---:|",
      ...variants.map(
        (x) =>
          `| ${x.label} | ${[
            cores(x, (c) => c.server),
            cores(x, (c) => c.autocannon),
            cores(x, (c) => c.pgBench),
            cores(x, (c) => c.pgAll),
            cores(x, (c) => c.redis),
            cores(x, (c) => c.machineBusy - c.server - c.autocannon - c.pgAll - c.redis),
            cores(x, (c) => (c.machineBusy / c.machineTotal) * c.wallMs * n),
          ]
            .map((value) => fmt(value, 2))
            .join(" | ")} |`,
      ),
    ].join("\n");

    let clusterText = `Cluster (target 5): ${clusterNote}`;
    if (v.cluster && v.single) {
      const perProcess = new Map<number, number[]>();
      for (const s of v.cluster.samples)
        for (const [pid, ms] of s.cpu?.perProcess ?? [])
          perProcess.set(pid, [...(perProcess.get(pid) ?? []), ms / s.cpu!.wallMs]);
      const split = [...perProcess]
        .map(
          ([pid, c]) => `pid ${pid}${pid === v.cluster!.server.pid ? " (started)" : ""}: ${fmt(mean(c), 2)}`,
        )
        .join(", ");
      const perReq = (x: Variant) => perRequest(x, (c) => c.server);
      const busy = (x: Variant) =>
        mean(x.samples.filter((s) => s.cpu).map((s) => s.cpu!.machineBusy / s.cpu!.machineTotal));
      clusterText = `Cluster (target 5): ${clusterNote} Cores used by each of its processes during the measurement: ${split}.
One process used ${fmt(
        cores(v.single, (c) => c.server),
        2,
      )} cores for ${fmt(rpsOf(v.single))} req/s (${fmt(perReq(v.single))} µs of CPU per request); ${WORKERS} workers used
${fmt(
  cores(v.cluster, (c) => c.server),
  2,
)} cores for ${fmt(rpsOf(v.cluster))} req/s (${fmt(perReq(v.cluster))} µs per request). The machine was ${pct(busy(v.single))} and
${pct(busy(v.cluster))} busy (of ${cpus().length} CPUs). With no request coming in, one process used ${fmt(v.single.server.idleCores, 3)} cores and the
cluster ${fmt(v.cluster.server.idleCores, 3)} (timers and pollers of each process). ${
        clusterVerdict.startsWith("not judged")
          ? `With the machine saturated, the ratio shows what ${cpus().length} CPUs shared by the servers, autocannon, PostgreSQL and Redis allow, not how Kontor scales: the target needs a machine with cores to spare (the CPU each part used is in the table above).`
          : "The machine had CPU to spare, so the ratio is Kontor's."
      }`;
    }

    const memRows = servers.map(
      (s) =>
        `| ${s.name}${(s.rss.processes ?? 1) > 1 ? ` (${s.rss.processes} processes, summed)` : ""} | ${fmt(s.rss.start)} | ${fmt(s.rss.idle)} | ${fmt(s.rss.after)} | ${fmt(s.loadedSeconds)} s | ${fmt(s.rss.peak)} | ${fmt(s.idleCores, 3)} |`,
    );
    const memTable = [
      "| server | RSS after start, MB | idle after warm-up | after the run's load | load served | peak (VmHWM) | CPU when idle, cores |",
      "|---|---:|---:|---:|---:|---:|---:|",
      ...memRows,
    ].join("\n");

    const minutes = (Date.now() - runStarted) / 60_000;
    const report = `# Benchmark: Kontor against Fastify + Prisma, and what it costs to run

Kontor's throughput against the server a user would write instead (Fastify with Kontor's own Prisma client),
GraphQL against REST, the cluster mode, and the CPU per request and memory of every server.

Generated by \`npm run bench\` (bench/run.ts) on ${new Date().toISOString()} in ${fmt(minutes, 1)} min; overwritten on every run. Code: ${gitState()}.

Setup: PostgreSQL (scratch database, dropped afterwards) + Redis, all on this machine: ${cpus().length} CPUs
(${cpus()[0]?.model ?? "unknown"}), Node ${process.version}. Servers are child processes, loaded one at a time by
autocannon in the bench process (${CONNECTIONS} connections): Fastify + Prisma (bench/fastify.ts: Fastify with
Kontor's generated Prisma client over @prisma/adapter-pg and a \`pg\` Pool of 10 as the server builds it, the same key
check with its 4 s cache and the same JSON, no limits, no request logs), the bare handlers (bench/bare.ts:
\`node:http\` + a \`pg\` Pool of 10, the same key check, plain SQL statements and the same JSON), Kontor
(\`dist/server/main.js\`, the production build, KONTOR_ENV=production, policies on), Kontor with KONTOR_POLICIES=off${cluster ? `, and Kontor with KONTOR_WORKERS=${WORKERS}` : ""}.
Each measurement: ${WARMUP} s warm-up, then ${DURATION} s; ${ROUNDS} round(s) per case${ROUNDS >= 2 ? ", forward then backward (ABCD DCBA)" : ""}; values are
means over the rounds. 1-minute load average: ${fmt(loadBefore, 1)} before, ${fmt(loadAfter, 1)} after measuring${
      Math.max(loadBefore, loadAfter) > cpus().length
        ? " (other work was running: treat the numbers with care)"
        : ""
    }.

Checked before measuring: Fastify + Prisma, bare and Kontor answer \`GET /v1/leads/{id}\` and \`GET /v1/leads\` (two
pages) with the same bytes; GraphQL's \`lead\` (${fields.length} fields) equals the REST body; \`POST /v1/leads\` answers the
same lead (id and times aside) and leaves one \`lead.created\` event holding exactly the answer, through each. Creates
send an Idempotency-Key each (the peers ignore it). Requests rotate over ${KEYS} keys of a max-plan workspace
(${keyLimit} requests per minute each): at Kontor's peak of ${fmt(peakKontorRps)} req/s a key saw about ${fmt(perKeyPerMinute)} a minute,
${perKeyPerMinute < keyLimit ? "under" : "OVER"} its limit. Non-2xx answers and errors while measuring: ${problems}${problems ? " (not clean: see the table)" : ""}.

## Targets

${targetTable}

${infoTable}

${whereText}
## Every server

${serverTable}

## CPU per request by server

${perRequestTable}

CPU time of each process tree read from /proc over each measurement, divided by the requests it served (mean over
the rounds); PostgreSQL is the bench database's backends only (its WAL writer and checkpointer are in "CPU by part").
"Per core" is 10⁶ ÷ µs: what one core of it serves, so N cores serve about N times that when nothing else is short.

## CPU by part

${cpuTable}

${clusterText}

## Memory

${memTable}

Idle: after start, the checks and a ${WARMUP} s warm-up, then 1 s quiet. Growth under sustained load is
measured by the soak mode: \`npm run bench -- --soak\` (bench/soak-results.md).

## Policies on the policies-on server (probed after measuring)

${Object.entries(policies)
  .map(([policy, state]) => `- ${policy}: ${state}`)
  .join("\n")}
`;
    writeFileSync(join(ROOT, "bench", "results.md"), report);
    console.log(
      `\n${targetTable}\n\n${infoTable}\n\n${whereText ? `${whereText}\n` : ""}${serverTable}\n\n${perRequestTable}\n\n${cpuTable}\n\n${clusterText}\n\n${memTable}\n`,
    );
    for (const [policy, state] of Object.entries(policies)) console.log(`- ${policy}: ${state}`);
    console.log(`\nNon-2xx or errors: ${problems}. ${fmt(minutes, 1)} min. Written to bench/results.md`);
  } finally {
    for (const server of servers.reverse()) await stopServerChild(server.child);
    await db.end().catch(() => {});
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
