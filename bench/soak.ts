/**
 * `npm run bench -- --soak` (or `npm run bench:soak`, or BENCH_SOAK_MINUTES=10 npm run bench): does
 * Kontor's memory grow under sustained load? Not part of `npm test`, not run by default.
 *
 * - A scratch PostgreSQL database (dropped afterwards, with its Redis keys); one Kontor server
 *   (`dist/server/main.js`, the production build, KONTOR_ENV=production, policies on, one process) as a child process.
 * - After a warm-up, its idle RSS; then autocannon (BENCH_CONNECTIONS, 10) loads it for
 *   BENCH_SOAK_MINUTES (default 10) with every kind the main bench measures in turn on each
 *   connection: `GET /v1/leads/{id}`, `GET /v1/leads`, GraphQL `lead(id)`, `POST /v1/leads` (with an
 *   Idempotency-Key each; leads, events, request logs and idempotency records accumulate, as they
 *   would in service). Keys rotate so no rate limit is hit.
 * - Every BENCH_SOAK_SAMPLE_SECONDS (30) it samples the server's RSS (VmRSS of its process tree),
 *   the requests served and the CPU it used since the last sample; after the load, RSS again.
 * - Growth: the mean RSS of the samples of the last minute against those of the first minute;
 *   "no growth" when it is within BENCH_SOAK_TOLERANCE percent (default 10). The slope of RSS over
 *   the second half of the run is reported with it (a leak keeps climbing, a warm heap levels off).
 *
 * Results: printed, and written to bench/soak-results.md.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { createFixture, requestOf } from "./load.ts";
import { cpuDelta, cpuTimes, processTree, treeMemory } from "./proc.ts";
import { createScratch } from "./scratch.ts";
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

const MINUTES = num("BENCH_SOAK_MINUTES", 10);
const SAMPLE_SECONDS = num("BENCH_SOAK_SAMPLE_SECONDS", 30);
const TOLERANCE = num("BENCH_SOAK_TOLERANCE", 10);
const CONNECTIONS = num("BENCH_CONNECTIONS", 10);
const WARMUP = num("BENCH_WARMUP", 3);
const KEYS = num("BENCH_KEYS", 300);

interface Point {
  seconds: number;
  rssMb: number;
  rps: number;
  cores: number;
  non2xx: number;
}

const fmt = (n: number | undefined, digits = 0) =>
  n === undefined || !Number.isFinite(n)
    ? "n/a"
    : n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
const mean = (values: number[]) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN);

/** Least-squares slope of y over x. */
function slope(points: { x: number; y: number }[]): number {
  if (points.length < 2) return NaN;
  const mx = mean(points.map((p) => p.x));
  const my = mean(points.map((p) => p.y));
  const num_ = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return den ? num_ / den : NaN;
}

async function main() {
  const started = Date.now();
  const scratch = await createScratch(KEYS);
  let child: ServerChild | undefined;
  try {
    child = await startServerChild(
      "soak",
      { ...scratch.env, ...kontorSettings(randomBytes(32).toString("base64url")) },
      await freePort(),
    );
    const pid = child.process.pid!;
    const fx = await createFixture(child.url, scratch.keys);
    await sleep(500);
    const afterStart = treeMemory(pid)?.rssMb;
    const kinds = ["get", "list", "graphql", "post"] as const;
    await autocannon({
      url: child.url,
      connections: CONNECTIONS,
      duration: WARMUP,
      requests: kinds.map((k) => requestOf(k, fx)),
    });
    await sleep(1_000);
    const idle = treeMemory(pid)?.rssMb;
    const loadBefore = loadavg()[0]!;
    console.log(
      `Kontor soak: ${MINUTES} min of mixed load (${kinds.join(", ")}), ${CONNECTIONS} connections, RSS every ${SAMPLE_SECONDS} s; idle RSS ${fmt(idle)} MB`,
    );

    let responses = 0;
    let non2xx = 0;
    const points: Point[] = [];
    const t0 = Date.now();
    let last = { at: t0, responses: 0, non2xx: 0, cpu: cpuTimes(processTree(pid)) };
    let instance!: autocannon.Instance;
    const done = new Promise<autocannon.Result>((resolve, reject) => {
      instance = autocannon(
        {
          url: child!.url,
          connections: CONNECTIONS,
          duration: MINUTES * 60,
          requests: kinds.map((k) => requestOf(k, fx)),
        },
        (error, result) => (error ? reject(error) : resolve(result)),
      );
    });
    instance.on("response", (_client, status) => {
      responses++;
      if (status < 200 || status > 299) non2xx++;
    });
    const timer = setInterval(() => {
      const now = Date.now();
      const cpu = cpuTimes(processTree(pid));
      const point: Point = {
        seconds: (now - t0) / 1000,
        rssMb: treeMemory(pid)?.rssMb ?? NaN,
        rps: ((responses - last.responses) * 1000) / (now - last.at),
        cores: cpuDelta(last.cpu, cpu) / (now - last.at),
        non2xx: non2xx - last.non2xx,
      };
      points.push(point);
      last = { at: now, responses, non2xx, cpu };
      console.log(
        `  ${fmt(point.seconds).padStart(5)} s  RSS ${fmt(point.rssMb)} MB  ${fmt(point.rps)} req/s  server ${fmt(point.cores, 2)} cores${point.non2xx ? `  ${point.non2xx} non-2xx` : ""}`,
      );
    }, SAMPLE_SECONDS * 1000);
    const result = await done;
    clearInterval(timer);
    await sleep(5_000);
    const after = treeMemory(pid);
    const loadAfter = loadavg()[0]!;

    const total = MINUTES * 60;
    const first = points.filter((p) => p.seconds <= 60 + 1);
    const lastMinute = points.filter((p) => p.seconds >= total - 60 - 1);
    const firstMb = mean(first.map((p) => p.rssMb));
    const lastMb = mean(lastMinute.map((p) => p.rssMb));
    const growth = ((lastMb - firstMb) / firstMb) * 100;
    const secondHalf = points
      .filter((p) => p.seconds >= total / 2)
      .map((p) => ({ x: p.seconds / 60, y: p.rssMb }));
    const trend = slope(secondHalf);
    const atFive = points.length
      ? points.reduce((best, p) => (Math.abs(p.seconds - 300) < Math.abs(best.seconds - 300) ? p : best))
      : undefined;
    const verdict =
      first.length && lastMinute.length && MINUTES >= 2
        ? growth <= TOLERANCE
          ? `no growth (within ${TOLERANCE} %)`
          : `GROWTH over ${TOLERANCE} %`
        : "too short to judge (needs 2 minutes or more)";

    const summary = [
      "| measure | value |",
      "|---|---:|",
      `| RSS after start | ${fmt(afterStart)} MB |`,
      `| RSS idle after a ${WARMUP} s warm-up | ${fmt(idle)} MB |`,
      `| RSS, mean of the first minute of load | ${fmt(firstMb)} MB |`,
      atFive && MINUTES >= 5
        ? `| RSS after ${fmt(atFive.seconds / 60, 1)} min of load | ${fmt(atFive.rssMb)} MB |`
        : undefined,
      `| RSS, mean of the last minute of load | ${fmt(lastMb)} MB |`,
      `| growth, last minute against first | **${fmt(growth, 1)} %**: ${verdict} |`,
      `| RSS slope over the second half | ${fmt(trend, 2)} MB/min |`,
      `| RSS 5 s after the load | ${fmt(after?.rssMb)} MB (peak ${fmt(after?.peakMb)} MB) |`,
      `| requests served, req/s | ${fmt(result.requests.total)}, ${fmt(result.requests.average)} |`,
      `| non-2xx answers, errors | ${result.non2xx}, ${result.errors} |`,
    ]
      .filter(Boolean)
      .join("\n");
    const samples = [
      "| after | RSS MB | req/s | server cores | non-2xx |",
      "|---:|---:|---:|---:|---:|",
      ...points.map(
        (p) =>
          `| ${fmt(p.seconds / 60, 1)} min | ${fmt(p.rssMb)} | ${fmt(p.rps)} | ${fmt(p.cores, 2)} | ${p.non2xx} |`,
      ),
    ].join("\n");
    const report = `# Soak: Kontor's memory under ${MINUTES} minutes of load

Generated by \`npm run bench -- --soak\` (bench/soak.ts) on ${new Date().toISOString()}; overwritten on every soak.

Setup: PostgreSQL (scratch database, dropped afterwards) + Redis; one Kontor server (\`dist/server/main.js\`,
KONTOR_ENV=production, policies on, one process); autocannon in the bench process, ${CONNECTIONS} connections,
each sending \`GET /v1/leads/{id}\`, \`GET /v1/leads\`, GraphQL \`lead(id)\` and \`POST /v1/leads\` in turn.
RSS is VmRSS of the server's processes (/proc). Machine: ${cpus().length} CPUs, Node ${process.version}; 1-minute load
average ${fmt(loadBefore, 1)} before, ${fmt(loadAfter, 1)} after. ${fmt((Date.now() - started) / 60_000, 1)} min in all.

${summary}

${samples}
`;
    writeFileSync(join(ROOT, "bench", "soak-results.md"), report);
    console.log(`\n${summary}\n\nWritten to bench/soak-results.md`);
  } finally {
    await stopServerChild(child);
    await scratch.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
