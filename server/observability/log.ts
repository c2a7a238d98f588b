import { type Logger, pino } from "pino";
import { ConfigError } from "../runtime/config.ts";

type Level = "info" | "warn" | "error";

/** KONTOR_LOG → the lowest level written. `silent` predates the levels and keeps error lines. */
const LEVELS: Record<string, Level> = { info: "info", warn: "warn", error: "error", silent: "error" };

export function logLevel(env: NodeJS.ProcessEnv = process.env): Level {
  const raw = env.KONTOR_LOG || "info";
  const level = LEVELS[raw];
  if (!level)
    throw new ConfigError(`KONTOR_LOG must be one of ${Object.keys(LEVELS).join(", ")}; got '${raw}'.`);
  return level;
}

let logger: Logger<never, false> | undefined;

/** Built on first use, so KONTOR_LOG is read after the process (or test) has set it. */
function instance(): Logger<never, false> {
  logger ??= pino(
    {
      level: LEVELS[process.env.KONTOR_LOG || "info"] ?? "info",
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // Not pino.destination(): process.stderr is synchronous for files and pipes on Linux, keeps
    // lines in order with console.error, and can be observed by tests.
    process.stderr,
  );
  return logger;
}

/**
 * One JSON line per event on stderr. A line about a request names it: pass its `request_id`.
 *
 * @example log("error", "unhandled error", { request_id: state.id, ...describeError(error) })
 */
export function log(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  instance()[level](fields, message);
}

/** Whether a line of this level would be written: lets callers skip building it. */
export function willLog(level: Level): boolean {
  return instance().isLevelEnabled(level);
}

export function describeError(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { error: error.message, stack: error.stack } : { error: String(error) };
}
