import { loadConfig, type Config } from "./config.ts";
import { prepare, USAGE, type PreparedCommand } from "./control/commands.ts";
import { classify, errorText, oneLine, type Failure } from "./control/errors.ts";
import { controlSocketPath, type ControlResponse } from "./control/protocol.ts";
import { sendCommand, SocketUnavailableError } from "./control/socket-client.ts";
import { DatabaseLockedError } from "./db/lock.ts";
import { MigrationError } from "./db/migrate.ts";
import { openDatabase, type Database } from "./db/open.ts";
import { agentKeyBox, SigningKeys } from "./agents/keys.ts";

/** Where the database is, for a message: never the password of a DATABASE_URL. */
function describeDatabase(config: Config): string {
  if (!config.databaseUrl) return `the embedded database in ${config.dataDir}/db`;
  try {
    const url = new URL(config.databaseUrl);
    return `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`;
  } catch {
    return "PostgreSQL (DATABASE_URL)";
  }
}

/** The embedded database belongs to the running server: its control socket runs the command. */
async function viaServer(config: Config, argv: string[], locked: DatabaseLockedError): Promise<ControlResponse> {
  const path = controlSocketPath(config.dataDir);
  try {
    return await sendCommand(path, argv);
  } catch (error) {
    if (error instanceof SocketUnavailableError) {
      return {
        exit: 1,
        message: oneLine(`${locked.message} Its control socket does not answer: ${error.message}; a server that is still starting answers once it listens.`),
      };
    }
    return classify(error);
  }
}

/** Runs the command on a database handle of its own (no server, or PostgreSQL), else through the server. */
async function execute(command: PreparedCommand, argv: string[], config: Config): Promise<ControlResponse> {
  let db: Database;
  try {
    db = await openDatabase(config);
  } catch (error) {
    if (error instanceof DatabaseLockedError && !config.databaseUrl) return viaServer(config, argv, error);
    if (error instanceof DatabaseLockedError || error instanceof MigrationError) return classify(error);
    return { exit: 1, message: oneLine(`cannot open ${describeDatabase(config)}: ${errorText(error)}`) };
  }
  try {
    const signingKeys = () => new SigningKeys(db.prisma, agentKeyBox(config));
    return { exit: 0, ...(await command.run({ prisma: db.prisma, migrate: async () => db.migrated, signingKeys })) };
  } catch (error) {
    return classify(error);
  } finally {
    await db.close().catch(() => {});
  }
}

export async function runCli(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  const fail = ({ exit, message }: Failure) => {
    if (json) console.log(JSON.stringify({ error: message }));
    console.error(exit === 2 ? `kontor: ${message}\n\n${USAGE}` : `kontor: ${message}`);
    return exit;
  };
  if (argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    console.log(USAGE);
    return 0;
  }
  if (argv.length === 0) return fail({ exit: 2, message: "no command given." });
  try {
    const command = prepare(argv);
    const result = await execute(command, argv, loadConfig());
    if (result.exit !== 0) return fail(result);
    console.log(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (error) {
    return fail(classify(error));
  }
}

// `kontor keys list | head -1`: a reader that went away is no failure worth a stack trace.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
process.exitCode = await runCli(process.argv.slice(2));
