import { requestState } from "./request-state.ts";

type Level = "info" | "warn" | "error";

/** One JSON line per event on stderr, tagged with the request id when there is one. */
export function log(level: Level, message: string, fields: Record<string, unknown> = {}): void {
  if (process.env.KONTOR_LOG === "silent" && level !== "error") return;
  const line = { time: new Date().toISOString(), level, message, request_id: requestState()?.id, ...fields };
  process.stderr.write(`${JSON.stringify(line)}\n`);
}

export function describeError(error: unknown): Record<string, unknown> {
  return error instanceof Error ? { error: error.message, stack: error.stack } : { error: String(error) };
}
