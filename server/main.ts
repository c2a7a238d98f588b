import cluster from "node:cluster";
import type { DemoSeed } from "./accounts/seed.ts";
import { DatabaseLockedError } from "./db/lock.ts";
import { describeError, log, logLevel } from "./observability/log.ts";
import { onPrimaryMessage, runPrimary, tellPrimary, workerNumber } from "./runtime/cluster.ts";
import { baseUrl, type Config, ConfigError, loadConfig } from "./runtime/config.ts";
import { shutdownBoundMs } from "./runtime/drain.ts";
import { installProcessGuards } from "./runtime/process-guards.ts";

async function main() {
  installProcessGuards();
  const config = loadConfig();
  logLevel();
  if (cluster.isPrimary && config.workers > 1) {
    // The primary loads none of the server: it starts, watches and stops the workers, and sums
    // their metrics for whichever worker is scraped.
    const { aggregateWorkerMetrics } = await import("./observability/metrics-cluster.ts");
    aggregateWorkerMetrics();
    runPrimary(config, { onReady: (demo) => announce(config, "PostgreSQL", demo) });
    return;
  }
  await serve(config);
}

/** One server process: the whole server when KONTOR_WORKERS is 1, else one cluster worker. */
async function serve(config: Config) {
  // Read as the server's modules load: graphql-js then drops the multi-realm check it adds to every
  // instanceof it does (about 1 % of a request's CPU in a profile); Prisma's and Yoga's error details
  // are already set for production by configuration.
  if (config.env === "production") process.env.NODE_ENV ??= "production";
  const { startServer } = await import("./runtime/server.ts");
  const { seedDemo } = await import("./accounts/seed.ts");
  const running = await startServer(config);

  // Handled from the moment the server listens: a signal during seeding still closes the database.
  let stopping = false;
  const worker = workerNumber();
  const tag = worker !== undefined ? { worker } : {};
  const stop = async (signal: string) => {
    if (stopping) {
      // A cluster worker gets its primary's signal and, from a terminal's Ctrl-C, the terminal's
      // too: only the primary forces a cluster's exit (it kills the workers on a second signal).
      if (worker !== undefined) return;
      log("warn", "second signal: exiting without waiting for the requests in flight", {
        signal,
        in_flight: running.inFlight(),
      });
      process.exit(1);
    }
    stopping = true;
    const timeoutMs = config.shutdownTimeoutMs;
    const inFlight = running.inFlight();
    // Closes the listener before returning: once the line below is written, new connections are refused.
    const draining = running.drain(timeoutMs);
    log("info", "shutting down", { signal, in_flight: inFlight, timeout_ms: timeoutMs, ...tag });
    // The primary then neither counts this worker's exit as a crash nor replaces it while it stops.
    if (worker !== undefined) void tellPrimary({ kontor: "stopping" });
    // Past the drain's bound, the closing steps get their own (a delivery in flight its timeout): then the process exits anyway.
    const bound = shutdownBoundMs(config);
    setTimeout(() => {
      log("error", "shutdown did not finish in time: exiting", { after_ms: bound, ...tag });
      process.exit(1);
    }, bound);
    try {
      const drained = await draining;
      if (drained.outcome === "drained")
        log("info", "requests drained", { duration_ms: drained.durationMs, ...tag });
      else
        log("warn", "drain timed out: closed the connections still serving requests", {
          in_flight: drained.cut,
          timeout_ms: timeoutMs,
          ...tag,
        });
      // Then the webhook runtime (claims no more; deliveries in flight finish), Redis and the database.
      await running.close();
    } catch (error) {
      log("error", "shutdown failed", { ...describeError(error), ...tag });
      process.exit(1);
    }
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  const seed = async () => {
    try {
      return config.env === "development" ? await seedDemo(running.db.prisma) : null;
    } catch (error) {
      if (stopping) return undefined; // the database closed under the seeding: stop() exits
      throw error;
    }
  };

  if (workerNumber() !== undefined) {
    // The primary announces the cluster once every worker serves, and asks one worker to seed.
    onPrimaryMessage(() => {
      seed().then(
        (demo) => {
          if (demo !== undefined) void tellPrimary({ kontor: "seeded", demo });
        },
        (error: unknown) => fail(error),
      );
    });
    await tellPrimary({ kontor: "ready" });
    return;
  }

  const where = running.db.kind === "embedded" ? `embedded PostgreSQL in ${config.dataDir}/db` : "PostgreSQL";
  // Announced once the demo workspace exists, so the key the banner prints already works.
  const demo = await seed();
  if (demo === undefined || stopping) return;
  announce(config, where, demo);
}

/** The `Kontor listening` line and the banner (with the Demo workspace's credentials on its first start). */
function announce(config: Config, where: string, demo: DemoSeed | null) {
  const workers = config.workers > 1 ? { workers: config.workers } : {};
  log("info", "Kontor listening", { port: config.port, database: where, env: config.env, ...workers });
  const how =
    config.workers > 1 ? `${config.env}, ${where}, ${config.workers} workers` : `${config.env}, ${where}`;
  console.log(`\nKontor is running (${how}).
  REST:     ${baseUrl(config)}   (OpenAPI: ${baseUrl(config)}/openapi.json)
  GraphQL:  ${config.publicUrl}/graphql
  Docs:     ${config.publicUrl}/docs`);
  if (demo) {
    console.log(`
First start: created the Demo workspace. These are shown once; keep them.
  Owner:    ${demo.owner_email}  password: ${demo.owner_password}
  Dashboard: ${config.publicUrl}/dashboard   (sign in as the owner)
  API key:  ${demo.key}   (every scope)
  Try:      curl -H "Authorization: Bearer ${demo.key}" ${baseUrl(config)}/workspace`);
  }
}

/** A start that failed: one line for the operator (a cluster worker's goes through its primary), exit 1. */
async function fail(error: unknown): Promise<never> {
  const code = (error as NodeJS.ErrnoException).code;
  const expected =
    code === "EADDRINUSE" || error instanceof ConfigError || error instanceof DatabaseLockedError;
  const message =
    code === "EADDRINUSE"
      ? `port ${process.env.PORT ?? 4000} is already in use; set PORT to another one.`
      : expected
        ? (error as Error).message
        : `could not start: ${(error as Error).message ?? String(error)}`;
  if (workerNumber() !== undefined && process.connected) await tellPrimary({ kontor: "failed", message });
  else console.error(`kontor: ${message}`);
  if (!expected) log("error", "start-up failed", describeError(error));
  process.exit(1);
}

main().catch(fail);
