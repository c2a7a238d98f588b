import { chmodSync, rmSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import type { Revocations } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { SigningKeys } from "../agents/keys.ts";
import { loadMigrations } from "../db/migrate.ts";
import type { Database } from "../db/open.ts";
import { log } from "../observability/log.ts";
import { type CommandContext, prepare } from "./commands.ts";
import { CommandError, classify } from "./errors.ts";
import {
  type ControlResponse,
  controlSocketPath,
  LineTooLongError,
  MAX_REQUEST_BYTES,
  parseRequest,
  readLine,
  socketPathProblem,
} from "./protocol.ts";

export interface ControlSocket {
  path: string;
  close(): Promise<void>;
}

/** A client that connects and says nothing is dropped after this. */
const IDLE_MS = 10_000;

/** The server migrated on start; files added since need a restart, which applies them. */
async function pendingMigrations(prisma: PrismaClient): Promise<string[]> {
  const rows = await prisma.$queryRawUnsafe<{ name: string }[]>("select name from _kontor_migrations");
  const applied = new Set(rows.map((r) => r.name));
  const pending = loadMigrations()
    .filter((m) => !applied.has(m.name))
    .map((m) => m.name);
  if (pending.length > 0) {
    throw new CommandError(
      `The running server does not know ${pending.length} migration(s) (${pending.join(", ")}); restart it, and it applies them on start.`,
    );
  }
  return [];
}

/**
 * Listens on `$DATA_DIR/kontor.sock` (owner only) for the CLI's commands, which run on the
 * server's database handle: with the embedded database no other process may open it.
 * The caller holds the database lock, so a socket file left by a dead server is ours to remove.
 */
export async function startControlSocket(
  dataDir: string,
  prisma: PrismaClient,
  signingKeys: SigningKeys,
  revocations: Revocations,
): Promise<ControlSocket> {
  const path = controlSocketPath(dataDir);
  const problem = socketPathProblem(path);
  if (problem) throw new Error(problem);
  rmSync(path, { force: true });

  let closing = false;
  const context: CommandContext = {
    prisma,
    migrate: () => pendingMigrations(prisma),
    signingKeys: () => signingKeys,
    revocations,
  };
  const sockets = new Set<Socket>();
  /** Connections whose request has not arrived yet: shutdown drops them rather than wait. */
  const waiting = new Set<Socket>();
  const running = new Set<Promise<void>>();

  const answer = (socket: Socket, response: ControlResponse) => {
    if (socket.destroyed) return;
    socket.setTimeout(IDLE_MS);
    socket.end(`${JSON.stringify(response)}\n`);
  };

  async function serve(socket: Socket) {
    let line: string;
    waiting.add(socket);
    try {
      line = await readLine(socket, MAX_REQUEST_BYTES);
    } catch (error) {
      if (error instanceof LineTooLongError)
        answer(socket, {
          exit: 1,
          message: `control socket: the request exceeds ${MAX_REQUEST_BYTES} bytes.`,
        });
      else socket.destroy();
      return;
    } finally {
      waiting.delete(socket);
    }
    if (closing) {
      socket.destroy();
      return;
    }
    socket.setTimeout(0);
    const request = parseRequest(line);
    if (!request) {
      answer(socket, { exit: 1, message: "control socket: not a Kontor CLI request." });
      return;
    }
    let name = request.argv[0] ?? "";
    let response: ControlResponse;
    try {
      const command = prepare(request.argv);
      name = command.name;
      response = { exit: 0, ...(await command.run(context)) };
    } catch (error) {
      response = classify(error);
    }
    log("info", "CLI command over the control socket", { command: name, exit: response.exit });
    answer(socket, response);
  }

  // Half-open allowed: a client may end its side after the request and still read the answer.
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // A peer that goes away mid-answer must not take the server down with it.
    socket.on("error", () => socket.destroy());
    socket.setTimeout(IDLE_MS, () => socket.destroy());
    const task = serve(socket).catch(() => void socket.destroy());
    running.add(task);
    void task.finally(() => running.delete(task));
  });

  // bind() happens synchronously inside listen(): the umask makes the socket 0600 from its first
  // moment, and the chmod keeps it so where the umask cannot be set (worker threads).
  let previous: number | undefined;
  try {
    previous = process.umask(0o177);
  } catch {
    previous = undefined;
  }
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
      if (previous !== undefined) process.umask(previous);
      previous = undefined;
    });
    chmodSync(path, 0o600);
  } catch (error) {
    if (previous !== undefined) process.umask(previous);
    server.close();
    throw error;
  }
  server.on("error", (error) => log("warn", "control socket error", { error: error.message }));

  return {
    path,
    close: async () => {
      closing = true;
      server.close();
      for (const socket of waiting) socket.destroy();
      // Commands already running finish on the database that is still open.
      await Promise.allSettled([...running]);
      for (const socket of sockets) socket.destroy();
      rmSync(path, { force: true });
    },
  };
}

/**
 * The server's hook: embedded databases only (PostgreSQL lets the CLI open its own connection).
 * A socket that cannot be made costs the CLI, not the API, so the server starts anyway.
 */
export async function openControlSocket(
  db: Database,
  dataDir: string,
  signingKeys: SigningKeys,
  revocations: Revocations,
): Promise<ControlSocket | undefined> {
  if (db.kind !== "embedded") return undefined;
  try {
    return await startControlSocket(dataDir, db.prisma, signingKeys, revocations);
  } catch (error) {
    log("warn", "no control socket: CLI commands fail while this server runs", {
      error: (error as Error).message,
    });
    return undefined;
  }
}
