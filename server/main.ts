import { baseUrl, ConfigError, loadConfig } from "./config.ts";
import { DatabaseLockedError } from "./db/lock.ts";
import { startServer } from "./http.ts";
import { describeError, log, logLevel } from "./log.ts";
import { installProcessGuards } from "./process-guards.ts";
import { seedDemo } from "./seed.ts";

async function main() {
  installProcessGuards();
  const config = loadConfig();
  logLevel();
  const running = await startServer(config);

  // Handled from the moment the server listens: a signal during seeding still closes the database.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log("info", "shutting down", { signal });
    await running.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));

  const where = running.db.kind === "embedded" ? `embedded PostgreSQL in ${config.dataDir}/db` : "PostgreSQL";
  // Announced once the demo workspace exists, so the key the banner prints already works.
  let demo: Awaited<ReturnType<typeof seedDemo>> = null;
  try {
    if (config.env === "development") demo = await seedDemo(running.db.prisma);
  } catch (error) {
    if (stopping) return; // the database closed under the seeding: stop() exits
    throw error;
  }
  if (stopping) return;
  log("info", "Kontor listening", { port: config.port, database: where, env: config.env });
  console.log(`\nKontor is running (${config.env}, ${where}).
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

main().catch((error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EADDRINUSE") console.error(`kontor: port ${process.env.PORT ?? 4000} is already in use; set PORT to another one.`);
  else if (error instanceof ConfigError || error instanceof DatabaseLockedError) console.error(`kontor: ${error.message}`);
  else {
    console.error(`kontor: could not start: ${(error as Error).message ?? String(error)}`);
    log("error", "start-up failed", describeError(error));
  }
  process.exit(1);
});
