import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "../../schema/lib/errors.ts";
import { isTrustedProxy, normalizeAddress } from "../http/client-address.ts";
import { errorResponse } from "../http/error-response.ts";
import type { RequestState } from "../http/request-state.ts";
import { log } from "../observability/log.ts";
import type { Config, EarlyLimits } from "../runtime/config.ts";

/** How long a refused connection may take to send the request its 429 answers; then it is closed unanswered. */
const REFUSED_GRACE_MS = 1_000;
/** After a 408 has been written, the connection is closed at the latest this much later (a client that reads nothing). */
const CLOSE_GRACE_MS = 2_000;

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** 408 `request_timeout` (docs/api/conventions-and-errors.md#errors): the connection is closed after it. */
export const requestTimedOut = (message: string) =>
  new ApiError(408, "invalid_request_error", "request_timeout", message);

const bodyTimedOut = (idleMs: number) =>
  requestTimedOut(`The request body sent nothing for ${seconds(idleMs)}: the connection is closed.`);

const tooManyConnections = (cap: number) =>
  new ApiError(
    429,
    "rate_limit_error",
    "concurrency_limit_exceeded",
    `This address holds ${cap} open connections already, the most it may: this one is closed. Reuse the open ones (keep-alive), or retry after 1 second.`,
    { headers: { "Retry-After": "1" } },
  );

/** How often connections are looked at: often enough that a timeout fires within a quarter of itself (at most 1 s late). */
export const checkIntervalMs = (limits: Pick<EarlyLimits, "headersTimeoutMs" | "bodyIdleTimeoutMs">) =>
  Math.max(10, Math.min(1_000, Math.floor(Math.min(limits.headersTimeoutMs, limits.bodyIdleTimeoutMs) / 4)));

function pathnameOf(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? "/", "http://localhost").pathname;
  } catch {
    return "/";
  }
}

/** Writes an error of the API (errorResponse's shape for the path, X-Request-Id) and lets Node close the connection after it. */
async function answer(res: ServerResponse, response: Response, requestId: string): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string | number> = {};
  for (const [name, value] of response.headers)
    if (name !== "connection" && name !== "content-length") headers[name] = value;
  res.writeHead(response.status, {
    ...headers,
    "Content-Length": body.length,
    "X-Request-Id": requestId,
    Connection: "close",
  });
  res.end(body);
}

/** Requests whose body went idle: server/http/request-body.ts answers them 408 in the request log too. */
const timedOut = new WeakSet<IncomingMessage>();

/** Whether the body of `req` was cut for sending nothing for the idle timeout. */
export const bodyTimedOutFor = (req: IncomingMessage | undefined) => req !== undefined && timedOut.has(req);

interface Watched {
  req: IncomingMessage;
  /** The socket's bytes read when last seen. */
  bytes: number;
  /** When bytes last came in (or the server last held the socket back): performance.now(). */
  since: number;
  idle: () => void;
}

const hasBody = (req: IncomingMessage) =>
  req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;

/**
 * docs/api/limits.md#traffic-policies, before anything else:
 *
 * - one client address (the socket's peer; a proxy KONTOR_TRUST_PROXY names is not counted, as its
 *   connections carry many clients) holds at most `connectionsPerAddress` connections in this
 *   process: the first request on one more is answered 429 `concurrency_limit_exceeded` with
 *   `Retry-After: 1` and `Connection: close`, before anything else runs, and the connection closed
 *   (after a second, unanswered, when no request comes). An HTTP client that queued requests on
 *   that connection sends them again on another, where a reset would fail them all at once. A
 *   warning is logged when an address starts being refused;
 * - a request body that sends nothing for `bodyIdleTimeoutMs` (raw uploads included) is answered
 *   408 `request_timeout` with `Connection: close` (or, when its answer has begun, cut), and its
 *   connection closed. Time the server itself holds the body back (it reads slower than the client
 *   sends) is not idle: only a socket Node is reading from counts.
 *
 * The headers' timeout is Node's own (`headersTimeout`, answered by server/http/client-error.ts).
 */
export class EarlyLimitsGuard {
  private readonly open = new Map<string, number>();
  /** Addresses at their cap that were refused a connection (logged once, until they drop below it). */
  private readonly refusing = new Set<string>();
  private readonly refused = new WeakSet<Socket>();
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly config: Pick<Config, "early" | "trustProxy">) {}

  /** The `connection` listener: counts the socket against its address, or marks it refused. */
  readonly connection = (socket: Socket): void => {
    const peer = socket.remoteAddress;
    if (!peer) return;
    const address = normalizeAddress(peer);
    if (isTrustedProxy(address, this.config)) return;
    const count = this.open.get(address) ?? 0;
    const cap = this.config.early.connectionsPerAddress;
    if (count >= cap) {
      this.refused.add(socket);
      const timer = setTimeout(() => socket.destroy(), REFUSED_GRACE_MS).unref();
      socket.once("close", () => clearTimeout(timer));
      if (!this.refusing.has(address)) {
        this.refusing.add(address);
        log("warn", "connections refused", { client_ip: address, open: count, cap });
      }
      return;
    }
    this.open.set(address, count + 1);
    socket.once("close", () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
      if (left < cap) this.refusing.delete(address);
    });
  };

  /**
   * Called first for every request, with its new state: answers 429 (and returns true) on a
   * refused connection; otherwise watches its body, if it has one still to come.
   */
  admit(req: IncomingMessage, res: ServerResponse, state: RequestState): boolean {
    if (this.refused.has(req.socket)) {
      const response = errorResponse(
        tooManyConnections(this.config.early.connectionsPerAddress),
        pathnameOf(req),
        state,
      );
      void answer(res, response, state.id);
      return true;
    }
    if (!req.complete && hasBody(req)) this.watch(req, res, state);
    return false;
  }

  private watch(req: IncomingMessage, res: ServerResponse, state: RequestState): void {
    const idleMs = this.config.early.bodyIdleTimeoutMs;
    // Noted on the request's state, so its request log row carries the error.
    const render = () => errorResponse(bodyTimedOut(idleMs), pathnameOf(req), state);
    const idle = () => {
      timedOut.add(req);
      const socket = req.socket;
      // Whoever reads the body (the buffering, a raw upload's route) learns of the cut once the
      // connection has closed: Node, which answered, no longer ends the request with it.
      socket.once("close", () => {
        req.on("error", () => {});
        req.destroy(new Error("The request body sent nothing for too long."));
      });
      if (res.headersSent) return void socket.destroy();
      setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
      void answer(res, render(), state.id);
    };
    this.watched.add({ req, bytes: req.socket.bytesRead, since: performance.now(), idle });
    this.timer ??= setInterval(() => this.check(), checkIntervalMs(this.config.early)).unref();
  }

  private check(): void {
    const now = performance.now();
    for (const entry of this.watched) {
      const { req } = entry;
      const socket = req.socket;
      if (req.complete || req.destroyed || !socket || socket.destroyed) {
        this.watched.delete(entry);
        continue;
      }
      // A paused socket is the server holding the body back (backpressure), not the client idling.
      if (socket.bytesRead !== entry.bytes || socket.isPaused()) {
        entry.bytes = socket.bytesRead;
        entry.since = now;
        continue;
      }
      if (now - entry.since < this.config.early.bodyIdleTimeoutMs) continue;
      this.watched.delete(entry);
      entry.idle();
    }
    if (this.watched.size === 0) this.stop();
  }

  /** Stops looking at bodies (the server is closing). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
