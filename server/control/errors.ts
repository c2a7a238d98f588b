import { WorkspaceInputError } from "../accounts/workspaces.ts";
import { DatabaseLockedError } from "../db/lock.ts";
import { MigrationError } from "../db/migrate.ts";
import { ConfigError } from "../runtime/config.ts";

/** Bad arguments: the message is followed by the usage, and the exit code is 2. */
export class UsageError extends Error {}

/** A failure the CLI explains in one line (unknown workspace, database unreachable…): exit 1. */
export class CommandError extends Error {}

export interface Failure {
  exit: 1 | 2;
  message: string;
}

const isParseArgsError = (error: unknown) =>
  error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");

/** Collapses a message onto one line and bounds it: Prisma and driver errors span many lines. */
export function oneLine(message: string, max = 500): string {
  const line = message.replace(/\s*\n\s*/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Any error a command can throw, as the CLI reports it: the same on either side of the socket. */
export function classify(error: unknown): Failure {
  if (error instanceof UsageError || isParseArgsError(error))
    return { exit: 2, message: (error as Error).message };
  // An e-mail or password that createWorkspace refuses is an invalid flag value.
  if (error instanceof WorkspaceInputError) return { exit: 2, message: error.message };
  if (
    error instanceof CommandError ||
    error instanceof ConfigError ||
    error instanceof DatabaseLockedError ||
    error instanceof MigrationError
  ) {
    return { exit: 1, message: oneLine(error.message) };
  }
  return { exit: 1, message: oneLine(`unexpected error: ${errorText(error)}`) };
}

/** A driver error's message, or its code when the message is empty (an AggregateError of connection attempts). */
export function errorText(error: unknown): string {
  if (error instanceof AggregateError && !error.message) {
    const first = error.errors[0] as NodeJS.ErrnoException | undefined;
    return first?.message || first?.code || "connection failed";
  }
  if (error instanceof Error) return error.message || (error as NodeJS.ErrnoException).code || error.name;
  return String(error);
}
