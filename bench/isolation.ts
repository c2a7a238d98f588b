/**
 * `npm run bench`, third part: isolation. One noisy workspace at its limits beside a quiet one, on
 * one server process (`dist/server/main.js`, PostgreSQL + Redis); the quiet workspace's latency alone,
 * beside the noise, and alone again.
 *
 * - A scratch PostgreSQL database (dropped afterwards, with its Redis keys). The quiet workspace
 *   (max plan) has one lead to read and a webhook endpoint at a receiver here that answers at once;
 *   the noisy one (free plan, "one free account") has BENCH_ISOLATION_NOISE_KEYS keys, a bucket, and
 *   as many webhook endpoints as its plan lets it make (of BENCH_ISOLATION_NOISE_ENDPOINTS tries)
 *   at a receiver here that never answers.
 * - The quiet workspace sends BENCH_ISOLATION_RATE requests a second, open loop (on schedule,
 *   whatever the answers): `GET /v1/leads/{id}`, `GET /v1/leads`, `GET /v1/leads/{id}`, `POST
 *   /v1/leads` (each with an Idempotency-Key, as the SDK sends), in turn; its latency is each
 *   answer's time, and its webhook latency each delivery's arrival − its event's `created_at`
 *   (filed under the phase its create was sent in).
 * - Phases of BENCH_ISOLATION_SECONDS each, after a 3 s warm-up: quiet alone; quiet beside the
 *   noise (bench/isolation-noise.ts in a process of its own, started 2 s before the phase and
 *   stopped after it); quiet alone again, which shows how much of a difference is drift.
 * - The noise, at its limits with whatever the server has: BENCH_ISOLATION_CONNECTIONS requests at
 *   once over all its keys (creates with 10 000-character notes and fresh Idempotency-Keys, GraphQL
 *   queries of 100 leads' notes with fresh keys, `limit=100` pages of leads and events), and
 *   BENCH_ISOLATION_UPLOADS raw uploads open at once (twice the free plan's slots), each trickling
 *   1 MiB; its writes fan out to its endpoints that never answer. At most
 *   BENCH_ISOLATION_NOISE_MAX API requests. Every answer is counted by status and error code, so
 *   the report says which limits refused what.
 * - Each workspace's requests carry its own X-Forwarded-For (the server trusts loopback as its
 *   proxy), as two clients behind a load balancer would: per-address limits see two clients.
 *
 * Traffic goes only to 127.0.0.1. Results: printed, and written to bench/isolation-results.md.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { PLAN_LIMITS } from "../schema/lib/plans.ts";
import { SCOPES } from "../schema/lib/scopes.ts";
import { createWorkspace } from "../server/accounts/workspaces.ts";
import { createApiKey } from "../server/auth/api-keys.ts";
import { openDatabase } from "../server/db/open.ts";
import type { NoiseReport, NoiseSettings } from "./isolation-noise.ts";
import { treeMemory } from "./proc.ts";
import { createScratch } from "./scratch.ts";
import {
  freePort,
  num,
  REDIS_URL,
  ROOT,
  type ServerChild,
  sleep,
  startServerChild,
  stopServerChild,
} from "./support.ts";

const SECONDS = num("BENCH_ISOLATION_SECONDS", 20);
const RATE = num("BENCH_ISOLATION_RATE", 20);
const CONNECTIONS = num("BENCH_ISOLATION_CONNECTIONS", 16);
const NOISE_KEYS = num("BENCH_ISOLATION_NOISE_KEYS", 20);
const NOISE_MAX = num("BENCH_ISOLATION_NOISE_MAX", 200_000);
/** A whole number ≥ 0 from the environment, or `fallback`. */
function whole(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number of at least 0.`);
  return value;
}

const NOISE_ENDPOINTS = whole("BENCH_ISOLATION_NOISE_ENDPOINTS", 16);
const UPLOADS = whole("BENCH_ISOLATION_UPLOADS", 2 * PLAN_LIMITS.free.concurrent_uploads);
const WARMUP_SECONDS = 3;
const RAMP_SECONDS = 2;
const QUIET_ADDRESS = "203.0.113.9";
const NOISY_ADDRESS = "198.51.100.7";

/** `{"201": 3, "403 plan_limit_reached": 13}` as `201: 3, 403 plan_limit_reached: 13`, the most frequent first. */
const answers = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([answer, n]) => `${answer}: ${n}`)
    .join(", ");
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
const ms = (value: number) =>
  Number.isNaN(value) ? "–" : value < 10 ? value.toFixed(1) : String(Math.round(value));

type Phase = "warm-up" | "alone" | "beside the noise" | "alone again";
const MEASURED: Phase[] = ["alone", "beside the noise", "alone again"];

interface Sample {
  phase: Phase;
  kind: string;
  ms: number;
  status: number;
}

/** A receiver that answers every delivery at once, noting its arrival, the event's `created_at` and the lead's `first_name`. */
async function fastReceiver() {
  const arrivals: { at: number; createdAt: number; name: string }[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (part: Buffer) => parts.push(part));
    req.on("end", () => {
      const at = Date.now();
      try {
        const event = JSON.parse(Buffer.concat(parts).toString("utf8")) as {
          created_at: string;
          data?: { object?: { first_name?: string } };
        };
        arrivals.push({
          at,
          createdAt: Date.parse(event.created_at),
          name: event.data?.object?.first_name ?? "",
        });
      } catch {
        // not an event
      }
      res.end("ok");
    });
  });
  return { ...(await listen(server)), arrivals };
}

/** A receiver that takes every delivery and never answers (until the bench closes it). */
async function hangingReceiver() {
  let held = 0;
  const server = createServer(() => void held++);
  return { ...(await listen(server)), held: () => held };
}

async function listen(server: HttpServer) {
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function redisMemoryMb(): Promise<number> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  await redis.connect();
  try {
    const info = await redis.info("memory");
    return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? NaN) / 1e6;
  } finally {
    redis.disconnect();
  }
}

/** The noise in its own process; resolves with its report once it has ended. */
function startNoise(settings: NoiseSettings): Promise<NoiseReport> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/isolation-noise.ts"], {
    cwd: ROOT,
    env: { ...process.env, BENCH_NOISE: JSON.stringify(settings) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  // Bounded: the noise stops itself at its deadline; past it and a margin, it is killed.
  const killer = setTimeout(() => child.kill("SIGKILL"), (settings.seconds + 30) * 1000);
  return new Promise((resolve, reject) =>
    child.once("close", (code) => {
      clearTimeout(killer);
      const line = stdout.trim().split("\n").at(-1);
      if (code !== 0 || !line) return reject(new Error(`the noise exited with ${code}: ${stderr}`));
      resolve(JSON.parse(line) as NoiseReport);
    }),
  );
}

async function post(url: string, key: string, path: string, body: unknown, address: string) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      "x-forwarded-for": address,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

async function main() {
  const scratch = await createScratch(4);
  const secretKey = randomBytes(32).toString("base64url");
  const fast = await fastReceiver();
  const hanging = await hangingReceiver();
  let server: ServerChild | undefined;
  try {
    // The noisy workspace: free, with many keys (each has the plan's rate of its own).
    const database = await openDatabase({
      databaseUrl: scratch.env.DATABASE_URL,
      dataDir: scratch.env.DATA_DIR,
    });
    const noisyKeys: string[] = [];
    try {
      const ws = await createWorkspace(database.prisma, {
        name: "Noisy",
        plan: "free",
        ownerEmail: `noisy-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      for (let i = 0; i < NOISE_KEYS; i++)
        noisyKeys.push(
          (await createApiKey(database.prisma, { workspaceId: ws.workspace_id, scopes: [...SCOPES] })).key,
        );
    } finally {
      await database.close();
    }
    const env = {
      ...scratch.env,
      KONTOR_ENV: "development",
      KONTOR_SECRET_KEY: secretKey,
      KONTOR_TRUST_PROXY: "loopback",
      KONTOR_ACCESS_LOG: "off",
    };
    server = await startServerChild("isolation", env, await freePort());
    const url = server.url;
    const quietKeys = scratch.keys;

    // The quiet workspace's lead and endpoint; the noisy one's bucket and endpoints.
    const lead = await post(
      url,
      quietKeys[0]!,
      "/v1/leads",
      { full_name: "Ada Lovelace", email: "ada@example.com", notes: "Quiet." },
      QUIET_ADDRESS,
    );
    if (lead.status !== 201) throw new Error(`could not create the quiet lead: ${JSON.stringify(lead.json)}`);
    const quietEndpoint = await post(
      url,
      quietKeys[0]!,
      "/v1/webhook-endpoints",
      { url: fast.url, events: ["lead.created"] },
      QUIET_ADDRESS,
    );
    if (quietEndpoint.status !== 201)
      throw new Error(`could not create the quiet endpoint: ${JSON.stringify(quietEndpoint.json)}`);
    const bucket = await post(
      url,
      noisyKeys[0]!,
      "/v1/buckets",
      { name: `noise-${randomBytes(3).toString("hex")}` },
      NOISY_ADDRESS,
    );
    if (bucket.status !== 201)
      throw new Error(`could not create the noisy bucket: ${JSON.stringify(bucket.json)}`);
    const endpointAnswers: Record<string, number> = {};
    for (let i = 0; i < NOISE_ENDPOINTS; i++) {
      const made = await post(
        url,
        noisyKeys[i % noisyKeys.length]!,
        "/v1/webhook-endpoints",
        { url: hanging.url, events: ["lead.created"] },
        NOISY_ADDRESS,
      );
      const answer = `${made.status}${made.status === 201 ? "" : ` ${made.json.error?.code ?? ""}`}`;
      endpointAnswers[answer] = (endpointAnswers[answer] ?? 0) + 1;
    }

    console.log(
      `Kontor isolation bench: a quiet workspace at ${RATE} req/s, alone then beside a noisy free workspace ` +
        `(${CONNECTIONS} requests at once over ${NOISE_KEYS} keys, ${UPLOADS} uploads), ${SECONDS} s per phase; ${cpus().length} CPUs`,
    );
    const loadBefore = loadavg()[0]!;
    const samples: Sample[] = [];
    const pending: Promise<void>[] = [];
    let phase: Phase = "warm-up";
    /** The phase each quiet create was sent in, by its lead's first_name. */
    const createdIn = new Map<string, Phase>();
    const kinds = ["GET /v1/leads/{id}", "GET /v1/leads", "GET /v1/leads/{id}", "POST /v1/leads"] as const;
    let sentQuiet = 0;
    /** Sends the quiet workspace's requests on schedule for `seconds`, each timed and filed under the phase it started in. */
    const quietFor = async (seconds: number) => {
      const start = Date.now();
      const total = Math.round(RATE * seconds);
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / RATE;
        if (due > Date.now()) await sleep(due - Date.now());
        const n = sentQuiet++;
        const kind = kinds[n % kinds.length]!;
        const at = phase;
        if (kind === "POST /v1/leads") createdIn.set(`Quiet ${n}`, at);
        const t0 = performance.now();
        const headers: Record<string, string> = {
          authorization: `Bearer ${quietKeys[n % quietKeys.length]}`,
          "x-forwarded-for": QUIET_ADDRESS,
        };
        const init: RequestInit =
          kind === "POST /v1/leads"
            ? {
                method: "POST",
                headers: { ...headers, "content-type": "application/json", "idempotency-key": `quiet-${n}` },
                body: JSON.stringify({ first_name: `Quiet ${n}` }),
              }
            : { headers };
        const path =
          kind === "GET /v1/leads"
            ? "/v1/leads"
            : kind === "POST /v1/leads"
              ? "/v1/leads"
              : `/v1/leads/${lead.json.id as string}`;
        pending.push(
          fetch(`${url}${path}`, init)
            .then(async (res) => {
              await res.arrayBuffer();
              samples.push({ phase: at, kind, ms: performance.now() - t0, status: res.status });
            })
            .catch(() => void samples.push({ phase: at, kind, ms: performance.now() - t0, status: 0 })),
        );
      }
    };
    const measure = async (name: Phase, seconds: number) => {
      phase = name;
      await quietFor(seconds);
    };

    const rss: Record<string, number | undefined> = { start: treeMemory(server.process.pid!)?.rssMb };
    const redisMb: Record<string, number> = { start: await redisMemoryMb() };
    await measure("warm-up", WARMUP_SECONDS);
    await measure("alone", SECONDS);
    rss.alone = treeMemory(server.process.pid!)?.rssMb;

    const noise = startNoise({
      url,
      keys: noisyKeys,
      forwardedFor: NOISY_ADDRESS,
      seconds: RAMP_SECONDS + SECONDS,
      connections: CONNECTIONS,
      maxRequests: NOISE_MAX,
      notesChars: 10_000,
      uploads: UPLOADS,
      bucketId: bucket.json.id as string,
      uploadBytes: 1024 * 1024,
      uploadChunkBytes: 64 * 1024,
      uploadIntervalMs: 100,
    });
    noise.catch(() => undefined);
    phase = "warm-up";
    await quietFor(RAMP_SECONDS);
    await measure("beside the noise", SECONDS);
    const noiseReport = await noise;
    rss.noise = treeMemory(server.process.pid!)?.rssMb;
    redisMb.noise = await redisMemoryMb();
    await measure("alone again", SECONDS);
    await Promise.all(pending);
    // The last deliveries of the quiet workspace's creates.
    await sleep(2_000);
    rss.end = treeMemory(server.process.pid!)?.rssMb;
    const loadAfter = loadavg()[0]!;

    const rows = MEASURED.map((name) => {
      const mine = samples.filter((s) => s.phase === name);
      const times = mine.map((s) => s.ms).sort((a, b) => a - b);
      const hooks = fast.arrivals
        .filter((a) => createdIn.get(a.name) === name)
        .map((a) => a.at - a.createdAt)
        .sort((a, b) => a - b);
      const failed = mine.filter((s) => s.status < 200 || s.status >= 300).length;
      return { name, times, hooks, failed, count: mine.length };
    });
    const [alone, noisy, again] = rows as [(typeof rows)[0], (typeof rows)[0], (typeof rows)[0]];
    const table = [
      "| quiet workspace | alone | beside the noise | alone again |",
      "|---|---:|---:|---:|",
      `| HTTP latency p50 / p99 (ms) | ${rows.map((r) => `${ms(percentile(r.times, 0.5))} / ${ms(percentile(r.times, 0.99))}`).join(" | ")} |`,
      `| requests (not 2xx) | ${rows.map((r) => `${r.count} (${r.failed})`).join(" | ")} |`,
      `| webhook delivery p50 / p99 (ms) | ${rows.map((r) => `${ms(percentile(r.hooks, 0.5))} / ${ms(percentile(r.hooks, 0.99))}`).join(" | ")} |`,
      `| deliveries | ${rows.map((r) => r.hooks.length).join(" | ")} |`,
    ].join("\n");
    const p50Ratio = percentile(noisy.times, 0.5) / percentile(alone.times, 0.5);
    const p99Ratio = percentile(noisy.times, 0.99) / percentile(alone.times, 0.99);
    const noiseRows = Object.entries(noiseReport.kinds).map(
      ([kind, entry]) => `| ${kind} | ${entry.sent} | ${answers(entry.answers)} |`,
    );
    const noiseTable = [
      "| noisy workspace's requests | sent | answers |",
      "|---|---:|---|",
      ...noiseRows,
    ].join("\n");
    const report = `# Benchmark: isolation

Generated by \`npm run bench\` (bench/isolation.ts) on ${new Date().toISOString()}; overwritten on every run.

Setup: PostgreSQL (scratch database, dropped afterwards) + Redis; one server process
(\`dist/server/main.js\`, development mode so webhooks may go to loopback, the client address taken from
X-Forwarded-For of loopback). A quiet workspace (max plan) sends ${RATE} requests a second on schedule
(\`GET /v1/leads/{id}\` twice, \`GET /v1/leads\`, \`POST /v1/leads\` in turn) and has one webhook endpoint
at a receiver answering at once; ${SECONDS} s alone, ${SECONDS} s beside a noisy free workspace at its
limits (a process of its own: ${CONNECTIONS} requests at once over ${NOISE_KEYS} keys — creates with
10 000-character notes and fresh Idempotency-Keys, GraphQL queries of 100 leads' notes with fresh keys,
\`limit=100\` pages of leads and events — and ${UPLOADS} raw uploads open at once, each trickling 1 MiB;
its webhook endpoints (${NOISE_ENDPOINTS} tries: ${answers(endpointAnswers)}) at a receiver that
never answers), then ${SECONDS} s alone again. Machine: ${cpus().length} CPUs
(${cpus()[0]?.model.split(" ").slice(0, 2).join(" ")}), Node ${process.version}; the server, both clients,
PostgreSQL and Redis share it. 1-minute load average: ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after.

${table}

Beside the noise, the quiet workspace's p50 is ${p50Ratio.toFixed(2)}× and its p99 ${p99Ratio.toFixed(2)}× what they
were alone.

${noiseTable}

The noise sent ${Object.values(noiseReport.kinds).reduce((n, k) => n + k.sent, 0)} requests in ${noiseReport.seconds.toFixed(1)} s;
${hanging.held()} deliveries reached its receiver that never answers. Server RSS: ${rss.start?.toFixed(0)} MB at start,
${rss.alone?.toFixed(0)} MB after the quiet phase, ${rss.noise?.toFixed(0)} MB after the noise, ${rss.end?.toFixed(0)} MB at the end.
Redis used memory (every deployment on it): ${redisMb.start!.toFixed(1)} MB at start, ${redisMb.noise!.toFixed(1)} MB after the noise.
`;
    console.log(`\n${table}\n\n${noiseTable}\n`);
    writeFileSync(join(ROOT, "bench", "isolation-results.md"), report);
    console.log("Written to bench/isolation-results.md");
    if (again.count === 0) throw new Error("no quiet request was measured after the noise");
  } finally {
    await stopServerChild(server);
    await fast.close();
    await hanging.close();
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
