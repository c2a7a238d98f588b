import type { Server, ServerResponse } from "node:http";
import type { Config } from "./config.ts";

/**
 * The graceful drain of one HTTP server (a rolling deploy, a container stop). Node 20's
 * `server.close()` stops accepting and closes the keep-alive connections idle at that moment, but
 * it leaves a request in flight to answer with `Connection: keep-alive` and then keeps its
 * connection open until `keepAliveTimeout`, and it never closes a connection that was opened but
 * has not sent a request yet: `close()`'s callback could wait for those for ever. So the requests
 * are counted here, from the `request` event until their response's `close`, and while draining:
 *
 * - a response whose head is not written yet (a request in flight, or one that arrives on a
 *   connection the client had already opened) says `Connection: close`, and Node closes its
 *   connection once it is sent;
 * - a response whose head had left before the drain began (a stream, a download) cannot say so:
 *   its connection is closed as soon as it is idle, once the response has ended;
 * - when no request is left, every remaining connection (idle, or without a request yet) is closed;
 * - at the bound, every connection is closed, requests in flight or not.
 */

export type DrainOutcome = "drained" | "timed_out";

export interface DrainResult {
  outcome: DrainOutcome;
  /** Requests still in flight when the bound cut them off (0 when drained). */
  cut: number;
  durationMs: number;
}

/** setTimeout's longest delay: a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * How long the steps after the drain (the webhook deliveries in flight, each bounded by
 * KONTOR_WEBHOOK_TIMEOUT_MS, then Redis and the database) may take before the process exits
 * anyway. A delivery cut off this way is sent again once its lease expires (server/webhooks/store.ts).
 */
export function closeBoundMs(config: Pick<Config, "webhooks">): number {
  return config.webhooks.timeoutMs + 5_000;
}

/** The longest a server process takes to stop after SIGTERM: the drain's bound, then the closing steps'. */
export function shutdownBoundMs(config: Pick<Config, "shutdownTimeoutMs" | "webhooks">): number {
  return config.shutdownTimeoutMs + closeBoundMs(config);
}

export class RequestTracker {
  private readonly inFlight = new Set<ServerResponse>();
  private draining: Promise<DrainResult> | undefined;
  /** Called when a request settles during the drain. */
  private settled: (() => void) | undefined;

  constructor(private readonly server: Server) {
    // Before the app's own listener, so the header is set before anything is written.
    server.prependListener("request", (_req, res) => this.track(res));
  }

  /** Requests arrived and not yet answered in full (or cut off). */
  get size(): number {
    return this.inFlight.size;
  }

  private track(res: ServerResponse): void {
    this.inFlight.add(res);
    if (this.draining) lastOnItsConnection(res);
    res.once("close", () => {
      this.inFlight.delete(res);
      this.settled?.();
    });
  }

  /**
   * Stops accepting connections and waits for the requests in flight, at most `timeoutMs`; then
   * closes every connection left and resolves once the server has closed. A second call gets the
   * first one's result.
   */
  drain(timeoutMs: number): Promise<DrainResult> {
    this.draining ??= this.run(timeoutMs);
    return this.draining;
  }

  private async run(timeoutMs: number): Promise<DrainResult> {
    const started = performance.now();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    // Node 20's close() already does this; said here so the drain does not depend on it.
    this.server.closeIdleConnections();
    for (const res of this.inFlight) lastOnItsConnection(res);

    let timer: NodeJS.Timeout | undefined;
    const outcome = await new Promise<DrainOutcome>((resolve) => {
      const check = () => {
        if (this.inFlight.size === 0) return resolve("drained");
        // A response that ended on a kept-alive connection leaves it idle: closed now, not after keepAliveTimeout.
        setImmediate(() => this.server.closeIdleConnections());
      };
      this.settled = check;
      timer = setTimeout(() => resolve("timed_out"), Math.min(Math.max(0, timeoutMs), MAX_TIMER_MS));
      check();
    });
    clearTimeout(timer);
    this.settled = undefined;
    const cut = this.inFlight.size;
    // Connections without a request in flight (opened and silent, or idle) and, at the bound, the rest.
    this.server.closeAllConnections();
    await closed;
    return { outcome, cut, durationMs: Math.round(performance.now() - started) };
  }
}

/** The response closes its connection once sent, when its head has not left yet. */
function lastOnItsConnection(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader("Connection", "close");
}
