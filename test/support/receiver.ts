import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
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
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}
