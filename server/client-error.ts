import type { Socket } from "node:net";
import { newId } from "../schema/lib/ids.ts";
import { log } from "./log.ts";

const STATUS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large", "The request headers are too large."],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", "The request did not arrive in time."],
};

/**
 * A request Node's HTTP parser refuses (malformed, headers too large, too slow) never reaches the
 * API; it still gets the API's error shape and a request id, instead of Node's bare status line.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable || error.code === "ECONNRESET") return void socket.destroy();
  const [status, reason, message] = STATUS[error.code ?? ""] ?? [400, "Bad Request", "The request is not valid HTTP."];
  const id = newId("request");
  const body = JSON.stringify({ error: { type: "invalid_request_error", code: "bad_request", message, request_id: id } });
  log("warn", "malformed HTTP request refused", { request_id: id, code: error.code, status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
}
