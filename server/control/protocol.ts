import { join } from "node:path";
import type { Output } from "./commands.ts";
import type { Failure } from "./errors.ts";

/**
 * The control socket speaks one exchange per connection: the CLI writes one JSON line
 * `{"v":1,"argv":[…]}`, the server answers one JSON line and closes.
 */
export const PROTOCOL_VERSION = 1;
/** A request above this is refused unread; the CLI refuses such arguments before sending. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Listings can be long; an answer above this is treated as a broken server. */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

export const controlSocketPath = (dataDir: string) => join(dataDir, "kontor.sock");

/** sun_path holds 108 bytes with its NUL; Node silently truncates a longer path, so refuse it. */
const MAX_SOCKET_PATH_BYTES = 107;

export function socketPathProblem(path: string): string | null {
  const bytes = Buffer.byteLength(path);
  return bytes > MAX_SOCKET_PATH_BYTES
    ? `${path} is ${bytes} bytes, longer than a Unix socket path may be (${MAX_SOCKET_PATH_BYTES}); use a shorter DATA_DIR`
    : null;
}

export interface ControlRequest {
  v: number;
  argv: string[];
}

export type ControlResponse = ({ exit: 0 } & Output) | Failure;

export function parseRequest(line: string): ControlRequest | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const { v, argv } = value as Record<string, unknown>;
  if (v !== PROTOCOL_VERSION || !Array.isArray(argv) || !argv.every((a) => typeof a === "string"))
    return null;
  return { v, argv };
}

export function parseResponse(line: string): ControlResponse | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const r = value as Record<string, unknown>;
  if (r.exit === 0 && typeof r.json === "object" && r.json !== null && typeof r.text === "string") {
    return { exit: 0, json: r.json, text: r.text };
  }
  if ((r.exit === 1 || r.exit === 2) && typeof r.message === "string")
    return { exit: r.exit, message: r.message };
  return null;
}

/**
 * Collects bytes up to the first newline, refusing more than `max`. Resolves with the line
 * (without the newline), or with what arrived when the peer ended without one.
 */
export function readLine(stream: NodeJS.ReadableStream, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      const newline = chunk.indexOf(0x0a);
      const part = newline === -1 ? chunk : chunk.subarray(0, newline);
      size += part.length;
      if (size > max) {
        cleanup();
        reject(new LineTooLongError(max));
        return;
      }
      chunks.push(part);
      if (newline !== -1) {
        cleanup();
        resolve(Buffer.concat(chunks).toString("utf8"));
      }
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    // destroyed without an end or an error (a timeout, a shutdown): settle all the same
    const onClose = () => onError(new Error("the connection closed"));
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
  });
}

export class LineTooLongError extends Error {
  constructor(max: number) {
    super(`the message exceeds ${max} bytes`);
  }
}
