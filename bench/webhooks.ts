/**
 * `npm run bench` (second part): webhook deliveries per second to a local receiver, and the time
 * from an event's commit to its delivery, on PostgreSQL + Redis (BullMQ).
 *
 * - A scratch PostgreSQL database (dropped afterwards); one server child process (`dist/server/main.js`);
 *   a receiver in this process on loopback that answers 200 at once and notes when each
 *   delivery arrived. One endpoint subscribed to lead.created.
 * - Latency: leads are created through `POST /v1/leads` at a steady BENCH_WEBHOOK_RATE per second
 *   for BENCH_DURATION seconds; latency = arrival at the receiver − the event's created_at
 *   (the commit, written by PostgreSQL's clock on this same machine).
 * - Throughput: BENCH_WEBHOOK_BACKLOG events are committed to the outbox at once (one statement,
 *   as a burst of API writes would leave them); deliveries per second = backlog ÷ the time from
 *   that commit to the last arrival (fan-out, queueing, signing, sending and recording included).
 *
 * BENCH_PROFILE_DIR: a CPU profile of the server goes there. Results: printed, and written to
 * bench/webhooks-results.md.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { ulid } from "ulid";
import { SCOPES } from "../schema/lib/scopes.ts";
import { createWorkspace } from "../server/accounts/workspaces.ts";
import { createApiKey } from "../server/auth/api-keys.ts";
import { openDatabase } from "../server/db/open.ts";
import {
  admin,
  databaseUrl,
  freePort,
  num,
  REDIS_URL,
  ROOT,
  type ServerChild,
  sleep,
  startServerChild,
  stopServerChild,
} from "./support.ts";

const DURATION = num("BENCH_DURATION", 10);
const RATE = num("BENCH_WEBHOOK_RATE", 50);
const BACKLOG = num("BENCH_WEBHOOK_BACKLOG", 10_000);
const TARGET_RATE = 500;
const TARGET_P50_MS = 200;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;

/** Arrival time of every delivery, by event id. */
async function startReceiver() {
  const arrivals = new Map<string, { at: number; createdAt: number }>();
  let duplicates = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const at = Date.now();
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { id: string; created_at: string };
      if (arrivals.has(event.id)) duplicates++;
      else arrivals.set(event.id, { at, createdAt: Date.parse(event.created_at) });
      res.end("ok");
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    duplicates: () => duplicates,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function main() {
  const name = `kontor_bench_${randomBytes(6).toString("hex")}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kontor-bench-"));
  await admin((c) => c.query(`create database ${name}`));
  const env = {
    DATABASE_URL: databaseUrl(name),
    REDIS_URL,
    DATA_DIR: dataDir,
    KONTOR_SECRET_KEY: randomBytes(32).toString("base64url"),
  };
  const receiver = await startReceiver();
  const db = new pg.Client({ connectionString: env.DATABASE_URL });
  let server: ServerChild | undefined;
  try {
    const database = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir });
    let key: string;
    let workspaceId: string;
    try {
      const ws = await createWorkspace(database.prisma, {
        name: "Bench",
        plan: "max",
        ownerEmail: `bench-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      workspaceId = ws.workspace_id;
      key = (await createApiKey(database.prisma, { workspaceId, scopes: [...SCOPES] })).key;
    } finally {
      await database.close();
    }
    await db.connect();
    server = await startServerChild("webhooks", { ...env, KONTOR_ENV: "development" }, await freePort());
    const url = server.url;
    const post = (path: string, body: unknown) =>
      fetch(`${url}/v1${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const endpoint = await post("/webhook-endpoints", { url: receiver.url, events: ["lead.created"] });
    if (endpoint.status !== 201) throw new Error(`could not create the endpoint: ${await endpoint.text()}`);

    console.log(
      `Kontor webhook bench: ${RATE} events/s through POST /v1/leads for ${DURATION} s, then a backlog of ${BACKLOG} events; ${cpus().length} CPUs`,
    );
    const loadBefore = loadavg()[0]!;

    // 1. Steady load through the API.
    const sent: Promise<Response>[] = [];
    const writeMs: number[] = [];
    const started = Date.now();
    for (let i = 0; i < RATE * DURATION; i++) {
      const due = started + (i * 1000) / RATE;
      if (due > Date.now()) await sleep(due - Date.now());
      const t0 = Date.now();
      sent.push(
        post("/leads", { first_name: `Bench ${i}` }).then((res) => {
          writeMs.push(Date.now() - t0);
          return res;
        }),
      );
    }
    const responses = await Promise.all(sent);
    writeMs.sort((a, b) => a - b);
    const failedWrites = responses.filter((r) => r.status !== 201).length;
    const steadyIds = (
      await db.query<{ id: string }>(`select id from events where type = 'lead.created'`)
    ).rows.map((r) => r.id);
    const steadyDeadline = Date.now() + 60_000;
    while (steadyIds.some((id) => !receiver.arrivals.has(id)) && Date.now() < steadyDeadline) await sleep(50);
    const latencies = steadyIds
      .map((id) => receiver.arrivals.get(id))
      .filter((a) => a !== undefined)
      .map((a) => a.at - a.createdAt)
      .sort((a, b) => a - b);
    const steadyMissing = steadyIds.length - latencies.length;

    // 2. A backlog committed at once.
    const lead = JSON.stringify({ object: "lead", first_name: "Backlog" });
    const ids = Array.from({ length: BACKLOG }, () => `evt_${ulid()}`);
    const committed = Date.now();
    await db.query(
      `insert into events (id, workspace_id, type, data, created_at)
       select id, $2, 'lead.created', $3::json, now() from unnest($1::text[]) as id`,
      [ids, workspaceId, lead],
    );
    const backlogDeadline = Date.now() + 300_000;
    while (ids.some((id) => !receiver.arrivals.has(id)) && Date.now() < backlogDeadline) await sleep(100);
    const arrived = ids.map((id) => receiver.arrivals.get(id)).filter((a) => a !== undefined);
    const last = Math.max(...arrived.map((a) => a.at));
    const first = Math.min(...arrived.map((a) => a.at));
    const drainSeconds = (last - committed) / 1000;
    const rate = arrived.length / drainSeconds;
    const sendingRate = arrived.length / Math.max(0.001, (last - first) / 1000);
    // Arrival is what the receiver sees; the record of each attempt follows it: wait for every one.
    const recordDeadline = Date.now() + 60_000;
    while (Date.now() < recordDeadline) {
      const open = await db.query<{ n: string }>(
        `select count(*) as n from webhook_deliveries where status in ('pending', 'retrying')`,
      );
      if (Number(open.rows[0]!.n) === 0) break;
      await sleep(100);
    }
    const recordedSeconds = (Date.now() - committed) / 1000;
    const statuses = (
      await db.query<{ status: string; n: string }>(
        `select status, count(*) as n from webhook_deliveries group by status order by status`,
      )
    ).rows;
    const loadAfter = loadavg()[0]!;

    const p50 = percentile(latencies, 0.5);
    const p99 = percentile(latencies, 0.99);
    const table = [
      "| measure | value | target |",
      "|---|---:|---|",
      `| event → delivery latency p50 (${latencies.length} events at ${RATE}/s via the API) | ${p50} ms | < ${TARGET_P50_MS} ms: ${p50 < TARGET_P50_MS ? "met" : "NOT met"} |`,
      `| event → delivery latency p99 | ${p99} ms | |`,
      `| for comparison: POST /v1/leads response time p50 / p99 | ${percentile(writeMs, 0.5)} / ${percentile(writeMs, 0.99)} ms | |`,
      `| backlog of ${BACKLOG}: deliveries/s, commit → last arrival (${drainSeconds.toFixed(1)} s) | ${Math.round(rate)} | ≥ ${TARGET_RATE}: ${rate >= TARGET_RATE ? "met" : "NOT met"} |`,
      `| backlog: deliveries/s, first → last arrival | ${Math.round(sendingRate)} | |`,
      `| backlog: every attempt recorded in the database after | ${recordedSeconds.toFixed(1)} s | |`,
    ].join("\n");
    const report = `# Benchmark: webhook deliveries

Generated by \`npm run bench\` (bench/webhooks.ts) on ${new Date().toISOString()}; overwritten on every run.

Setup: PostgreSQL (scratch database, dropped afterwards) + Redis (BullMQ); one server process
(\`dist/server/main.js\`); the receiver runs in the bench process on loopback and answers 200 at once.
Machine: ${cpus().length} CPUs (${cpus()[0]?.model.split(" ").slice(0, 2).join(" ")}), Node ${process.version}; server, receiver,
PostgreSQL and Redis share it. 1-minute load average: ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after.

${table}

Writes refused during the steady phase: ${failedWrites}. Events never delivered: ${steadyMissing + (BACKLOG - arrived.length)}.
Duplicate arrivals: ${receiver.duplicates()}. Delivery states at the end: ${statuses.map((s) => `${s.status} ${s.n}`).join(", ")}.
`;
    console.log(`\n${table}\n`);
    writeFileSync(join(ROOT, "bench", "webhooks-results.md"), report);
    console.log("Written to bench/webhooks-results.md");
  } finally {
    await stopServerChild(server);
    await db.end().catch(() => undefined);
    await receiver.close();
    await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
