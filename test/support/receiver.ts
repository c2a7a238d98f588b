import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import { expect } from "vitest";

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent (signatures are over these bytes). */
  body: string;
  json: any;
  at: number;
}

export interface Answer {
  status: number;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

/**
 * A real HTTP receiver on loopback. Every request is recorded; `answer` decides the response
 * (default 200). Each test uses its own path (`receiver.url("/a")`) to keep its requests apart.
 */
export interface Receiver {
  base: string;
  url(path: string): string;
  received: Received[];
  on(path: string): Received[];
  answer: (request: Received) => Answer;
  /** Waits (bounded) until `count` requests reached `path`; returns them. */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {
        // not JSON
      }
      const request: Received = { path: req.url ?? "", headers: req.headers, body, json, at: Date.now() };
      received.push(request);
      const answer = receiver.answer(request);
      const reply = () => {
        res.writeHead(answer.status, { "content-type": "text/plain" });
        res.end(answer.body ?? "ok");
      };
      if (answer.delayMs) setTimeout(reply, answer.delayMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const on = (path: string) => received.filter((request) => request.path === path);
  const receiver: Receiver = {
    base,
    url: (path) => base + path,
    received,
    on,
    answer: () => ({ status: 200 }),
    async waitFor(path, count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (on(path).length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(on(path).length, `requests received on ${path}`).toBeGreaterThanOrEqual(count);
      return on(path);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}

/** Polls `read` until `done` holds (bounded), then returns the last value. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}

/**
 * How a receiver can give up on a request whose body is still arriving:
 * - `answer-then-close`: answers 413 at once (a keep-alive response), half-closes, and closes with
 *   the rest of the body unread, so the sender's next write fails with EPIPE;
 * - `answer-then-reset`: answers 400 at once and resets the connection;
 * - `reset-mid-body`: resets without answering once some of the body has arrived.
 */
export type HangUp = "answer-then-close" | "answer-then-reset" | "reset-mid-body";

export interface RudeReceiver {
  url(path: string): string;
  /** TCP connections accepted. */
  readonly connections: number;
  /** Bytes read from all connections. */
  readonly bytesRead: number;
  /** Connections this receiver has closed. */
  readonly hungUp: number;
  close(): Promise<void>;
}

const EARLY_ANSWERS: Record<Exclude<HangUp, "reset-mid-body">, string> = {
  "answer-then-close":
    "HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nbody too large",
  "answer-then-reset":
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nbad request",
};

/** A raw TCP receiver on loopback that treats every connection as `mode` says. */
export async function startRudeReceiver(mode: HangUp): Promise<RudeReceiver> {
  let connections = 0;
  let bytesRead = 0;
  let hungUp = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {}); // the sender's side of a reset
    let done = false;
    let head = "";
    socket.on("data", (chunk: Buffer) => {
      bytesRead += chunk.length;
      if (done) return;
      if (mode === "reset-mid-body") {
        // Body bytes have arrived once the header block has ended before this chunk's last byte.
        head += chunk.toString("latin1");
        const end = head.indexOf("\r\n\r\n");
        if (end === -1 || end + 4 >= head.length) return;
        done = true;
        hungUp++;
        socket.resetAndDestroy();
        return;
      }
      done = true;
      socket.pause(); // what is not read yet stays unread: closing then sends a reset
      socket.write(EARLY_ANSWERS[mode]);
      hungUp++;
      if (mode === "answer-then-reset") socket.resetAndDestroy();
      else socket.end(() => socket.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    get connections() {
      return connections;
    },
    get bytesRead() {
      return bytesRead;
    },
    get hungUp() {
      return hungUp;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
