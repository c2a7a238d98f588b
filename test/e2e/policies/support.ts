/**
 * Helpers shared by the policies suites:
 *   - idempotent requests (idempotency.test.ts, idempotency-stores.test.ts);
 *   - the early limits' settings and a hand-written HTTP/1.1 connection (early-limits-requests.test.ts,
 *     early-limits-addresses.test.ts).
 */
import { randomUUID } from "node:crypto";
import { connect, type Socket } from "node:net";
import { call } from "../../support/http.ts";

// ---------------------------------------------------------------------------------------------
// Idempotency.

export const newKey = () => `key-${randomUUID()}`;

export const isReplay = (res: { headers: Headers }) => res.headers.get("idempotent-replay") === "true";

/** A POST over REST (`base` is `/v1` of a server) with an Idempotency-Key. */
export function idempotentPost(
  base: string,
  apiKey: string,
  path: string,
  body: unknown,
  idempotencyKey: string,
) {
  return call("POST", base + path, { key: apiKey, body, headers: { "Idempotency-Key": idempotencyKey } });
}

// ---------------------------------------------------------------------------------------------
// Early limits.

/** Small enough to reach in a test, each test from a loopback address of its own (127.0.0.N), so none shares a bucket. */
export const ADDRESS_LIMIT = 30;
export const CONNECTIONS = 4;
export const HEADERS_MS = 1_000;
export const IDLE_MS = 1_000;
/** server/policies/early-limits.ts looks every quarter of the shorter timeout. */
export const TICK_MS = 250;
export const ENV = {
  KONTOR_ADDRESS_REQUESTS_PER_MINUTE: String(ADDRESS_LIMIT),
  KONTOR_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS),
  KONTOR_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
  KONTOR_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
};

let lastAddress = 10;
/** A loopback address no other test of this test file (its own process) sends from. */
export const nextAddress = () => `127.0.0.${++lastAddress}`;

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Milliseconds from the connection's opening to the answer's last byte. */
  at: number;
}

/** An HTTP/1.1 connection written and read by hand (node:net), from `from`. */
export class Raw {
  private data = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  readonly openedAt = performance.now();
  /** Milliseconds from opening to the server's close (FIN or reset), once it has closed. */
  closedAfter: number | undefined;

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
      this.wake?.();
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      this.closedAfter = performance.now() - this.openedAt;
      this.wake?.();
    });
  }

  static open(url: string, from: string): Promise<Raw> {
    const port = Number(new URL(url).port);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port, localAddress: from });
      socket.setNoDelay(true);
      socket.once("connect", () => resolve(new Raw(socket)));
      socket.once("error", reject);
    });
  }

  write(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve) =>
      this.socket.write(bytes) ? resolve() : this.socket.once("drain", resolve),
    );
  }

  /** Writes a request head (Host added); `headers` in order. */
  head(method: string, path: string, headers: Record<string, string | number> = {}): Promise<void> {
    const lines = Object.entries({ Host: "localhost", ...headers }).map(
      ([name, value]) => `${name}: ${value}\r\n`,
    );
    return this.write(`${method} ${path} HTTP/1.1\r\n${lines.join("")}\r\n`);
  }

  /** Sends a whole request with a JSON (or given) body and waits for its answer. */
  async request(
    method: string,
    path: string,
    headers: Record<string, string | number> = {},
    body?: string,
  ): Promise<Answer> {
    const bytes = body === undefined ? undefined : Buffer.from(body);
    await this.head(method, path, {
      ...headers,
      ...(bytes && {
        "Content-Type": headers["Content-Type"] ?? "application/json",
        "Content-Length": bytes.length,
      }),
    });
    if (bytes) await this.write(bytes);
    const answer = await this.answer();
    if (!answer) throw new Error(`no answer to ${method} ${path}`);
    return answer;
  }

  private until(test: () => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (test()) return done(true);
        if (this.closedAfter !== undefined) return done(test());
      };
      const timer = setTimeout(() => done(test()), timeoutMs);
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve(value);
      };
      this.wake = check;
      check();
    });
  }

  /** The next whole answer on the connection; null when it closed (or `timeoutMs` passed) first. */
  async answer(timeoutMs = 10_000): Promise<Answer | null> {
    let parsed: Answer | null = null;
    await this.until(() => (parsed = this.take()) !== null, timeoutMs);
    return parsed;
  }

  /** Waits for the server to close the connection; its time from opening, or undefined when it stayed open. */
  async closed(timeoutMs = 10_000): Promise<number | undefined> {
    await this.until(() => this.closedAfter !== undefined, timeoutMs);
    return this.closedAfter;
  }

  /** Bytes the server sent that no answer took. */
  unread(): number {
    return this.data.length;
  }

  /** The bytes the server sent that no answer took, as text. */
  unreadText(): string {
    return this.data.toString("utf8");
  }

  private take(): Answer | null {
    const end = this.data.indexOf("\r\n\r\n");
    if (end < 0) return null;
    const [statusLine, ...lines] = this.data.subarray(0, end).toString("latin1").split("\r\n");
    const headers = Object.fromEntries(
      lines.map((line) => [
        line.slice(0, line.indexOf(":")).toLowerCase(),
        line.slice(line.indexOf(":") + 1).trim(),
      ]),
    );
    let rest = this.data.subarray(end + 4);
    let body: Buffer;
    if (headers["transfer-encoding"] === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const line = rest.indexOf("\r\n");
        if (line < 0) return null;
        const size = parseInt(rest.subarray(0, line).toString(), 16);
        if (rest.length < line + 2 + size + 2) return null;
        parts.push(rest.subarray(line + 2, line + 2 + size));
        rest = rest.subarray(line + 2 + size + 2);
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (rest.length < length) return null;
      body = rest.subarray(0, length);
      rest = rest.subarray(length);
    }
    this.data = rest;
    const text = body.toString("utf8");
    let json: unknown = text;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      // not JSON
    }
    return {
      status: Number(statusLine!.split(" ")[1]),
      headers,
      body: json,
      at: performance.now() - this.openedAt,
    };
  }

  end(): void {
    this.socket.destroy();
  }
}

export const apiError = (answer: Answer | null) => answer?.body?.error;
