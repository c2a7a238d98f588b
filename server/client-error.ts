import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
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
  writeRefusal(socket, status, reason, message, "malformed HTTP request refused", { code: error.code });
}

/**
 * A CONNECT request (Node hands it over as a bare socket, and closes it unanswered without a
 * listener) asks for a tunnel: this server is not a proxy, and says so in the API's error shape.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  writeRefusal(socket, 400, "Bad Request", "This server is not a proxy: CONNECT is not served.", "CONNECT request refused", {});
}

function writeRefusal(socket: Duplex, status: number, reason: string, message: string, event: string, fields: Record<string, unknown>): void {
  const id = newId("request");
  const body = JSON.stringify({ error: { type: "invalid_request_error", code: "bad_request", message, request_id: id } });
  log("warn", event, { request_id: id, ...fields, status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
}
