/**
 * `npm run bench`: bench/run.ts (the targets: Kontor against Fastify + Prisma, GraphQL against
 * REST, RSS, the cluster mode; CPU per request of every server), then bench/webhooks.ts (webhook deliveries), then
 * bench/isolation.ts (a quiet workspace's latency alone and beside a noisy one at its limits), each
 * in its own process. Never part of `npm test`.
 *
 *   npm run bench                      all three parts (about 8–9 minutes with the defaults)
 *   npm run bench -- --no-webhooks     without the webhook part (or BENCH_WEBHOOKS=off)
 *   npm run bench -- --no-isolation    without the isolation part (or BENCH_ISOLATION=off)
 *   npm run bench -- --isolation       the isolation part only (about 2 minutes)
 *   npm run bench -- --soak[=MINUTES]  instead: the soak (bench/soak.ts), 10 minutes unless given
 *                                      (or BENCH_SOAK_MINUTES=MINUTES npm run bench)
 *
 * Settings are environment variables, described at the top of each part.
 */
import { spawnSync } from "node:child_process";
import { ROOT } from "./support.ts";

const args = process.argv.slice(2);
const env = { ...process.env };
let soak = env.BENCH_SOAK_MINUTES !== undefined && env.BENCH_SOAK_MINUTES !== "";
let webhooks = env.BENCH_WEBHOOKS !== "off";
let isolation = env.BENCH_ISOLATION !== "off";
let isolationOnly = false;
for (const arg of args) {
  const match = /^--soak(?:=(.+))?$/.exec(arg);
  if (match) {
    soak = true;
    if (match[1]) env.BENCH_SOAK_MINUTES = match[1];
  } else if (arg === "--no-webhooks") {
    webhooks = false;
  } else if (arg === "--no-isolation") {
    isolation = false;
  } else if (arg === "--isolation") {
    isolationOnly = true;
  } else {
    console.error(
      `bench: unknown argument '${arg}' (known: --soak[=MINUTES], --no-webhooks, --no-isolation, --isolation)`,
    );
    process.exit(2);
  }
}

const parts = soak
  ? ["bench/soak.ts"]
  : isolationOnly
    ? ["bench/isolation.ts"]
    : [
        "bench/run.ts",
        ...(webhooks ? ["bench/webhooks.ts"] : []),
        ...(isolation ? ["bench/isolation.ts"] : []),
      ];
for (const part of parts) {
  const { status, signal } = spawnSync(process.execPath, ["--import", "tsx", part], {
    cwd: ROOT,
    env,
    stdio: "inherit",
  });
  if (status !== 0) {
    console.error(`bench: ${part} ${signal ? `was stopped by ${signal}` : `failed (exit code ${status})`}`);
    process.exit(status ?? 1);
  }
}
