import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { newId } from "../../schema/lib/ids.ts";
import { log } from "../observability/log.ts";

/** Node's errors of a request it refused itself: status, reason phrase, the API's error code, message. */
const STATUS: Record<string, [number, string, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    "Request Header Fields Too Large",
    "bad_request",
    "The request headers are too large.",
  ],
  // headersTimeout (docs/api/limits.md#traffic-policies: 15 s for the request line and headers), or requestTimeout (an hour for all of it).
  ERR_HTTP_REQUEST_TIMEOUT: [
    408,
    "Request Timeout",
    "request_timeout",
    "The request did not arrive in time: the connection is closed.",
  ],
};

/** After a refusal, the connection is closed at the latest this much later (a client that never closes its side). */
const CLOSE_GRACE_MS = 2_000;

/**
 * A request Node's HTTP parser refuses (malformed, headers too large, too slow) never reaches the
 * API; it still gets the API's error shape and a request id, instead of Node's bare status line.
 * When an answer has already begun on the connection, nothing more can be said on it: it is cut.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  const answering = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    ?.headersSent;
  if (!socket.writable || answering || error.code === "ECONNRESET") return void socket.destroy();
  const [status, reason, code, message] = STATUS[error.code ?? ""] ?? [
    400,
    "Bad Request",
    "bad_request",
    "The request is not valid HTTP.",
  ];
  writeRefusal(socket, status, reason, code, message, "malformed HTTP request refused", { code: error.code });
}

/**
 * A CONNECT request (Node hands it over as a bare socket, and closes it unanswered without a
 * listener) asks for a tunnel: this server is not a proxy, and says so in the API's error shape.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  writeRefusal(
    socket,
    400,
    "Bad Request",
    "bad_request",
    "This server is not a proxy: CONNECT is not served.",
    "CONNECT request refused",
    {},
  );
}

function writeRefusal(
  socket: Duplex,
  status: number,
  reason: string,
  code: string,
  message: string,
  event: string,
  fields: Record<string, unknown>,
): void {
  const id = newId("request");
  const body = JSON.stringify({ error: { type: "invalid_request_error", code, message, request_id: id } });
  log("warn", event, { request_id: id, ...fields, status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
}
