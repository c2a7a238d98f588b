import cluster from "node:cluster";
import { onPrimaryMessage, runPrimary, tellPrimary, workerNumber } from "./cluster.ts";
import { baseUrl, ConfigError, loadConfig, type Config } from "./config.ts";
import { DatabaseLockedError } from "./db/lock.ts";
import { describeError, log, logLevel } from "./log.ts";
import { installProcessGuards } from "./process-guards.ts";
import type { DemoSeed } from "./seed.ts";

async function main() {
  installProcessGuards();
  const config = loadConfig();
  logLevel();
  if (cluster.isPrimary && config.workers > 1) {
    // The primary loads none of the server: it starts, watches and stops the workers, and sums
    // their metrics for whichever worker is scraped.
    const { aggregateWorkerMetrics } = await import("./plugins/metrics-cluster.ts");
    aggregateWorkerMetrics();
    runPrimary(config, { onReady: (demo) => announce(config, "PostgreSQL", demo) });
    return;
  }
  await serve(config);
}

/** One server process: the whole server when KONTOR_WORKERS is 1, else one cluster worker. */
async function serve(config: Config) {
  const { startServer } = await import("./http.ts");
  const { seedDemo } = await import("./seed.ts");
  const running = await startServer(config);

  // Handled from the moment the server listens: a signal during seeding still closes the database.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("info", "shutting down", { signal, ...(workerNumber() !== undefined && { worker: workerNumber() }) });
    await running.close();
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
  const how = config.workers > 1 ? `${config.env}, ${where}, ${config.workers} workers` : `${config.env}, ${where}`;
  console.log(`\nKontor is running (${how}).
  REST:     ${baseUrl(config)}   (OpenAPI: ${baseUrl(config)}/openapi.json)
  GraphQL:  ${config.publicUrl}/graphql`);
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
  const expected = code === "EADDRINUSE" || error instanceof ConfigError || error instanceof DatabaseLockedError;
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
