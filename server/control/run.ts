import { agentKeyBox, SigningKeys } from "../agents/keys.ts";
import { DatabaseLockedError } from "../db/lock.ts";
import { MigrationError } from "../db/migrate.ts";
import { type Database, openDatabase } from "../db/open.ts";
import { type Config, loadConfig } from "../runtime/config.ts";
import { type PreparedCommand, prepare, USAGE } from "./commands.ts";
import { classify, errorText, type Failure, oneLine } from "./errors.ts";
import { type ControlResponse, controlSocketPath } from "./protocol.ts";
import { CliRevocations } from "./revocations.ts";
import { SocketUnavailableError, sendCommand } from "./socket-client.ts";

/** Where a CLI run reads its settings and writes its lines: the process's own, or a caller's. */
export interface CliIO {
  env: NodeJS.ProcessEnv;
  out(line: string): void;
  err(line: string): void;
}

export const processIO: CliIO = {
  env: process.env,
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

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
async function viaServer(
  config: Config,
  argv: string[],
  locked: DatabaseLockedError,
): Promise<ControlResponse> {
  const path = controlSocketPath(config.dataDir);
  try {
    return await sendCommand(path, argv);
  } catch (error) {
    if (error instanceof SocketUnavailableError) {
      return {
        exit: 1,
        message: oneLine(
          `${locked.message} Its control socket does not answer: ${error.message}; a server that is still starting answers once it listens.`,
        ),
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
    const revocations = new CliRevocations(config.redisUrl, db.deploymentId);
    try {
      return {
        exit: 0,
        ...(await command.run({
          prisma: db.prisma,
          migrate: async () => db.migrated,
          signingKeys,
          revocations,
        })),
      };
    } finally {
      await revocations.close();
    }
  } catch (error) {
    return classify(error);
  } finally {
    await db.close().catch(() => {});
  }
}

/** One CLI command from its arguments to its exit status (0 done, 1 failed, 2 bad arguments). */
export async function runCli(argv: string[], io: CliIO = processIO): Promise<number> {
  const json = argv.includes("--json");
  const fail = ({ exit, message }: Failure) => {
    if (json) io.out(JSON.stringify({ error: message }));
    io.err(exit === 2 ? `kontor: ${message}\n\n${USAGE}` : `kontor: ${message}`);
    return exit;
  };
  if (argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    io.out(USAGE);
    return 0;
  }
  if (argv.length === 0) return fail({ exit: 2, message: "no command given." });
  try {
    const command = prepare(argv);
    const result = await execute(command, argv, loadConfig(io.env));
    if (result.exit !== 0) return fail(result);
    io.out(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (error) {
    return fail(classify(error));
  }
}
