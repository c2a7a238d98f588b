import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../../schema/lib/api-key-secret.ts";
import { BODY_LIMITS } from "../../../server/policies/body-limits.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { requestState } from "../../../server/http/request-state.ts";
import { startChildServer, type ChildServer } from "../../support/child-server.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/** Small enough to reach in a test, each test from a loopback address of its own (127.0.0.N), so none shares a bucket. */
const ADDRESS_LIMIT = 30;
const CONNECTIONS = 4;
const HEADERS_MS = 1_000;
const IDLE_MS = 1_000;
/** server/policies/early-limits.ts looks every quarter of the shorter timeout. */
const TICK_MS = 250;
const ENV = {
  KONTOR_ADDRESS_REQUESTS_PER_MINUTE: String(ADDRESS_LIMIT),
  KONTOR_CONNECTIONS_PER_ADDRESS: String(CONNECTIONS),
  KONTOR_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
  KONTOR_BODY_IDLE_TIMEOUT_MS: String(IDLE_MS),
};

let lastAddress = 10;
/** A loopback address no other test of this file sends from. */
const nextAddress = () => `127.0.0.${++lastAddress}`;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Milliseconds from the connection's opening to the answer's last byte. */
  at: number;
}

/** An HTTP/1.1 connection written and read by hand (node:net), from `from`. */
class Raw {
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
    return new Promise((resolve) => (this.socket.write(bytes) ? resolve() : this.socket.once("drain", resolve)));
  }

  /** Writes a request head (Host added); `headers` in order. */
  head(method: string, path: string, headers: Record<string, string | number> = {}): Promise<void> {
    const lines = Object.entries({ Host: "localhost", ...headers }).map(([name, value]) => `${name}: ${value}\r\n`);
    return this.write(`${method} ${path} HTTP/1.1\r\n${lines.join("")}\r\n`);
  }

  /** Sends a whole request with a JSON (or given) body and waits for its answer. */
  async request(method: string, path: string, headers: Record<string, string | number> = {}, body?: string): Promise<Answer> {
    const bytes = body === undefined ? undefined : Buffer.from(body);
    await this.head(method, path, { ...headers, ...(bytes && { "Content-Type": headers["Content-Type"] ?? "application/json", "Content-Length": bytes.length }) });
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

  private take(): Answer | null {
    const end = this.data.indexOf("\r\n\r\n");
    if (end < 0) return null;
    const [statusLine, ...lines] = this.data.subarray(0, end).toString("latin1").split("\r\n");
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
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
    return { status: Number(statusLine!.split(" ")[1]), headers, body: json, at: performance.now() - this.openedAt };
  }

  end(): void {
    this.socket.destroy();
  }
}

/**
 * Database statements run on behalf of requests (made inside a request's async context), counted
 * at the drivers both stacks use: pg's Client#query on PostgreSQL, PGlite's query, exec and
 * transaction on the embedded stack. Background work (the webhook poller, sweeps) runs outside
 * any request and is counted apart.
 */
const statements = { request: 0, background: 0 };
function countStatements(): () => void {
  const patched: [object, string, unknown][] = [];
  const patch = (owner: Record<string, any>, name: string) => {
    const original = owner[name] as (...args: unknown[]) => unknown;
    patched.push([owner, name, original]);
    owner[name] = function (this: unknown, ...args: unknown[]) {
      if (requestState()) statements.request++;
      else statements.background++;
      return original.apply(this, args);
    };
  };
  patch(pg.Client.prototype as any, "query");
  for (const name of ["query", "exec", "transaction"]) patch(PGlite.prototype as any, name);
  return () => {
    for (const [owner, name, original] of patched) (owner as Record<string, unknown>)[name] = original;
  };
}

const apiError = (answer: Answer | null) => answer?.body?.error;

e2e(
  "early limits",
  (server) => {
    const url = () => server().url;

    describe("body limits, known before a byte is read", () => {
      const CASES = [
        { path: "/oauth2/token", limit: BODY_LIMITS.protocol, type: "application/x-www-form-urlencoded", shape: "oauth" },
        { path: "/agent/identity", limit: BODY_LIMITS.protocol, type: "application/json", shape: "oauth" },
        { path: "/dashboard/api/sign-in", limit: BODY_LIMITS.protocol, type: "application/json", shape: "rest" },
        { path: "/v1/responses", limit: BODY_LIMITS.ai, type: "application/json", shape: "rest" },
        { path: "/v1/chat/completions", limit: BODY_LIMITS.ai, type: "application/json", shape: "rest" },
        { path: "/v1/leads", limit: BODY_LIMITS.api, type: "application/json", shape: "rest" },
        { path: "/graphql", limit: BODY_LIMITS.api, type: "application/json", shape: "graphql" },
      ] as const;

      it.each(CASES)("$path: a declared Content-Length over $limit bytes is 413 at once, with or without a key", async ({ path, limit, type, shape }) => {
        const tenant = await server().tenant();
        const from = nextAddress();
        for (const key of [undefined, tenant.key]) {
          const raw = await Raw.open(url(), from);
          await raw.head("POST", path, { "Content-Type": type, "Content-Length": limit + 1, ...(key && { Authorization: `Bearer ${key}` }) });
          // Not a byte of the body is sent: the answer cannot have waited for it.
          const answer = await raw.answer(5_000);
          raw.end();
          expect(answer?.status, `${path}: ${JSON.stringify(answer?.body)}`).toBe(413);
          expect(answer!.at).toBeLessThan(1_000);
          console.log(`[${server().stack}] ${path} declaring ${limit + 1} bytes ${key ? "with" : "without"} a key: 413 after ${answer!.at.toFixed(1)} ms, 0 body bytes sent`);
          const requestId = answer!.headers["x-request-id"];
          expect(requestId).toMatch(/^req_/);
          if (shape === "oauth") expect(answer!.body).toMatchObject({ error: "payload_too_large", error_description: expect.stringContaining(String(limit)), request_id: requestId });
          if (shape === "rest") expect(apiError(answer)).toMatchObject({ type: "invalid_request_error", code: "payload_too_large", request_id: requestId });
          if (shape === "graphql") expect(answer!.body.errors[0].extensions).toMatchObject({ code: "payload_too_large", request_id: requestId });
        }
      });

      it("a chunked body is counted as it arrives and refused as soon as it passes its route's limit", async () => {
        const tenant = await server().tenant();
        const from = nextAddress();
        for (const { path, limit, key } of [
          { path: "/oauth2/token", limit: BODY_LIMITS.protocol, key: undefined },
          { path: "/v1/responses", limit: BODY_LIMITS.ai, key: tenant.key },
        ]) {
          const raw = await Raw.open(url(), from);
          await raw.head("POST", path, {
            "Content-Type": path === "/oauth2/token" ? "application/x-www-form-urlencoded" : "application/json",
            "Transfer-Encoding": "chunked",
            ...(key && { Authorization: `Bearer ${key}` }),
          });
          const chunk = Buffer.alloc(16 * 1024, "a");
          for (let sent = 0; sent < limit; sent += chunk.length) await raw.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]));
          // At the limit: nothing to refuse yet.
          expect(await raw.answer(300), path).toBeNull();
          // One byte more, and no end of the body: the refusal cannot have waited for the rest.
          await raw.write("1\r\na\r\n");
          const answer = await raw.answer(5_000);
          raw.end();
          expect(answer?.status, path).toBe(413);
          expect(JSON.stringify(answer!.body)).toContain("payload_too_large");
        }
      });

      it("a body just at a 64 KiB route's limit is read, and refused only for what it says", async () => {
        const from = nextAddress();
        const raw = await Raw.open(url(), from);
        const body = `grant_type=nope&pad=${"a".repeat(BODY_LIMITS.protocol - "grant_type=nope&pad=".length)}`;
        const answer = await raw.request("POST", "/oauth2/token", { "Content-Type": "application/x-www-form-urlencoded" }, body);
        raw.end();
        expect(answer.status).toBe(400);
        expect(answer.body.error).not.toBe("payload_too_large");
      });
    });

    describe("slow clients", () => {
      it("a body that sends nothing for the idle timeout gets 408 request_timeout, and its connection is closed", async () => {
        const tenant = await server().tenant();
        const before = await server().running.db.prisma.lead.count({ where: { workspaceId: tenant.workspaceId } });
        const raw = await Raw.open(url(), nextAddress());
        await raw.head("POST", "/v1/leads", { Authorization: `Bearer ${tenant.key}`, "Content-Type": "application/json", "Content-Length": 100 });
        const sentAt = performance.now() - raw.openedAt;
        await raw.write('{"first_name":');
        const answer = await raw.answer(IDLE_MS * 5);
        const closed = await raw.closed(5_000);
        expect(answer?.status, JSON.stringify(answer?.body)).toBe(408);
        const waited = answer!.at - sentAt;
        expect(waited).toBeGreaterThanOrEqual(IDLE_MS - 50);
        expect(waited).toBeLessThan(IDLE_MS + 2 * TICK_MS + 500);
        expect(answer!.headers.connection).toBe("close");
        expect(apiError(answer)).toMatchObject({ type: "invalid_request_error", code: "request_timeout", request_id: answer!.headers["x-request-id"] });
        expect(closed, "the server closed the connection").toBeDefined();
        // Nothing was written; the request log holds what the client got.
        expect(await server().running.db.prisma.lead.count({ where: { workspaceId: tenant.workspaceId } })).toBe(before);
        await flushRequestLogs(server().running.db);
        const row = await server().running.db.prisma.requestLog.findUnique({ where: { id: answer!.headers["x-request-id"] } });
        expect(row).toMatchObject({ status: 408, errorCode: "request_timeout", route: "/v1/leads" });
        console.log(`[${server().stack}] stalled body: 408 after ${Math.round(waited)} ms of silence (idle timeout ${IDLE_MS} ms), closed at ${Math.round(closed!)} ms`);
      });

      it("a body that keeps trickling is not idle, however long it takes", async () => {
        const tenant = await server().tenant();
        const raw = await Raw.open(url(), nextAddress());
        const body = Buffer.from('{"first_name":"Slow but steady"}');
        await raw.head("POST", "/v1/leads", { Authorization: `Bearer ${tenant.key}`, "Content-Type": "application/json", "Content-Length": body.length });
        // Three times the idle timeout in all, never silent for half of it.
        const pieces = 6;
        const step = Math.ceil(body.length / pieces);
        for (let i = 0; i < pieces; i++) {
          await raw.write(body.subarray(i * step, (i + 1) * step));
          if (i < pieces - 1) await new Promise((r) => setTimeout(r, IDLE_MS / 2));
        }
        const answer = await raw.answer(5_000);
        raw.end();
        expect(answer?.status, JSON.stringify(answer?.body)).toBe(201);
        expect(answer!.body.first_name).toBe("Slow but steady");
      });

      it("a raw upload that stalls is cut the same way, and stores nothing", async () => {
        const tenant = await server().tenant();
        const auth = { Authorization: `Bearer ${tenant.key}` };
        const from = nextAddress();
        const setup = await Raw.open(url(), from);
        const bucket = await setup.request("POST", "/v1/buckets", auth, JSON.stringify({ name: "stalls" }));
        setup.end();
        expect(bucket.status, JSON.stringify(bucket.body)).toBe(201);

        const raw = await Raw.open(url(), from);
        await raw.head("POST", `/v1/buckets/${bucket.body.id}/objects?file_name=stalled.bin`, { ...auth, "Content-Type": "application/octet-stream", "Content-Length": 1_000_000 });
        await raw.write(randomBytes(64 * 1024));
        const sentAt = performance.now() - raw.openedAt;
        const answer = await raw.answer(IDLE_MS * 5);
        const closed = await raw.closed(5_000);
        expect(answer?.status, JSON.stringify(answer?.body)).toBe(408);
        expect(apiError(answer)).toMatchObject({ code: "request_timeout" });
        expect(answer!.at - sentAt).toBeLessThan(IDLE_MS + 2 * TICK_MS + 500);
        expect(closed).toBeDefined();

        // The route learns of the cut, cleans up and ends: its log row says what the client got.
        const prisma = server().running.db.prisma;
        const logged = async () => {
          await flushRequestLogs(server().running.db);
          return prisma.requestLog.findUnique({ where: { id: answer!.headers["x-request-id"] } });
        };
        await expect.poll(logged, { timeout: 5_000 }).toMatchObject({ status: 408, errorCode: "request_timeout" });
        expect(await prisma.storedObject.count({ where: { workspaceId: tenant.workspaceId } })).toBe(0);
      });

      it("headers that take longer than the headers timeout get 408 request_timeout, and the connection is closed", async () => {
        const from = nextAddress();
        const slow = await Raw.open(url(), from);
        await slow.write("GET /v1/workspace HTTP/1.1\r\nHost: localhost\r\n");
        const silent = await Raw.open(url(), from);
        for (const raw of [slow, silent]) {
          const answer = await raw.answer(HEADERS_MS * 5);
          expect(answer?.status).toBe(408);
          expect(answer!.at).toBeGreaterThanOrEqual(HEADERS_MS - 50);
          expect(answer!.at).toBeLessThan(HEADERS_MS + 2 * TICK_MS + 500);
          expect(answer!.headers.connection).toBe("close");
          expect(apiError(answer)).toMatchObject({ type: "invalid_request_error", code: "request_timeout", request_id: answer!.headers["x-request-id"] });
          expect(await raw.closed(5_000)).toBeDefined();
          console.log(`[${server().stack}] ${raw === slow ? "half-sent headers" : "nothing sent"}: 408 at ${Math.round(answer!.at)} ms (headers timeout ${HEADERS_MS} ms)`);
        }
      });
    });

    it(`one address holds at most ${CONNECTIONS} connections: one more gets 429 and is closed, other addresses are not affected`, async () => {
      const from = nextAddress();
      const held = await Promise.all(Array.from({ length: CONNECTIONS }, () => Raw.open(url(), from)));
      // Each of them is served (and kept alive).
      for (const raw of held) expect((await raw.request("GET", "/health")).status).toBe(200);

      const tenant = await server().tenant();
      const extra = await Raw.open(url(), from);
      const refused = await extra.request("POST", "/v1/leads", { Authorization: `Bearer ${tenant.key}` }, '{"first_name":"Refused"}');
      const closedAt = await extra.closed(2_000);
      expect(refused.status).toBe(429);
      expect(apiError(refused)).toMatchObject({ type: "rate_limit_error", code: "concurrency_limit_exceeded", request_id: refused.headers["x-request-id"] });
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.headers.connection).toBe("close");
      expect(closedAt, "the extra connection is closed").toBeDefined();
      // A connection that sends nothing is closed after a second, unanswered.
      const silent = await Raw.open(url(), from);
      const silentClosed = await silent.closed(3_000);
      expect(silentClosed).toBeGreaterThan(900);
      expect(silent.unread()).toBe(0);
      console.log(`[${server().stack}] connection ${CONNECTIONS + 1} of one address: 429 at ${Math.round(refused.at)} ms, closed at ${Math.round(closedAt!)} ms; a silent one closed at ${Math.round(silentClosed!)} ms`);

      const other = await Raw.open(url(), nextAddress());
      expect((await other.request("GET", "/health")).status).toBe(200);
      other.end();

      // Once one closes, the address may open another.
      held.pop()!.end();
      await expect
        .poll(async () => {
          const again = await Raw.open(url(), from);
          const answer = await again.request("GET", "/health").catch(() => null);
          again.end();
          return answer?.status;
        })
        .toBe(200);
      for (const raw of held) raw.end();
    });

    it("past the per-address limit, 429 comes at once, before the credential is looked up or the body read", async () => {
      const tenant = await server().tenant();
      const raw = await Raw.open(url(), nextAddress());
      const auth = { Authorization: `Bearer ${tenant.key}` };
      // A key's own limit (pro: 600 a minute) is far off; the address's is not.
      for (let i = 0; i < ADDRESS_LIMIT; i++) expect((await raw.request("GET", "/v1/workspace", auth)).status).toBe(200);
      await raw.head("POST", "/v1/leads", { ...auth, "Content-Type": "application/json", "Content-Length": 1_000 });
      const answer = await raw.answer(2_000);
      expect(answer?.status, JSON.stringify(answer?.body)).toBe(429);
      expect(apiError(answer)).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded", request_id: answer!.headers["x-request-id"] });
      const retryAfter = Number(answer!.headers["retry-after"]);
      expect(retryAfter >= 1 && retryAfter <= 60).toBe(true);
      expect(answer!.headers["x-ratelimit-plan"]).toBeUndefined();
      raw.end();

      // The liveness check is never counted.
      const health = await Raw.open(url(), nextAddress());
      expect((await health.request("GET", "/health")).status).toBe(200);
      health.end();
    });

    it("an unauthenticated flood past the per-address limit never reaches the database", async () => {
      const restore = countStatements();
      try {
        const from = nextAddress();
        const raw = await Raw.open(url(), from);
        // Well-formed, so each is looked up (a malformed one is refused without).
        const badToken = () => ({ Authorization: `Bearer ${generateApiKey()}` });
        const count = () => ({ ...statements });

        // Under the limit, a bad token costs a lookup: the counter sees it.
        const start = count();
        for (let i = 0; i < ADDRESS_LIMIT; i++) expect((await raw.request("GET", "/v1/workspace", badToken())).status).toBe(401);
        const underLimit = statements.request - start.request;
        expect(underLimit).toBeGreaterThanOrEqual(ADDRESS_LIMIT);

        // Past it: bad tokens, no token, a session cookie, the agent protocol and the account API.
        const FLOOD = 200;
        const sends = [
          () => raw.request("GET", "/v1/workspace", badToken()),
          () => raw.request("GET", "/v1/workspace"),
          () => raw.request("GET", "/v1/workspace", { Cookie: `kontor_session=${randomBytes(24).toString("base64url")}` }),
          () => raw.request("POST", "/graphql", badToken(), JSON.stringify({ query: "{ workspace { id } }" })),
          () => raw.request("POST", "/agent/identity", {}, JSON.stringify({ type: "anonymous", agent_name: "flood" })),
          () => raw.request("POST", "/oauth2/token", { "Content-Type": "application/x-www-form-urlencoded" }, "grant_type=client_credentials"),
          () => raw.request("POST", "/dashboard/api/sign-in", {}, JSON.stringify({ email: "flood@example.com", password: "x".repeat(12) })),
        ];
        const before = count();
        const startedAt = performance.now();
        const ids: string[] = [];
        for (let i = 0; i < FLOOD; i++) {
          const answer = await sends[i % sends.length]!();
          expect(answer.status, JSON.stringify(answer.body)).toBe(429);
          ids.push(answer.headers["x-request-id"]!);
        }
        const elapsed = performance.now() - startedAt;
        const during = { request: statements.request - before.request, background: statements.background - before.background };
        raw.end();
        expect(during.request).toBe(0);

        // Nor is any of them written later, as a request log row.
        await flushRequestLogs(server().running.db);
        expect(await server().running.db.prisma.requestLog.count({ where: { id: { in: ids } } })).toBe(0);
        console.log(
          `[${server().stack}] ${ADDRESS_LIMIT} bad tokens under the limit: ${underLimit} statements; ` +
            `${FLOOD} requests past it in ${Math.round(elapsed)} ms: ${during.request} statements for them ` +
            `(${during.background} by background work meanwhile), 0 request log rows`,
        );
      } finally {
        restore();
      }
    });
  },
  ENV,
);

/** `npm start` in a child process reads the same settings and holds them. */
describe.each(stacks())("early limits in a server process [%s]", (stack) => {
  let child: ChildServer;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const scratch = await provisionStack(stack);
    drop = scratch.drop;
    child = await startChildServer({ ...scratch.env, ...ENV, KONTOR_ENV: "development" });
  });

  afterAll(async () => {
    await child?.stop();
    await drop?.();
  });

  it("slow headers get 408, a stalled body 408, and one connection over the cap 429", async () => {
    const from = nextAddress();
    const slow = await Raw.open(child.url, from);
    await slow.write("GET /health HTTP/1.1\r\n");
    const stalled = await Raw.open(child.url, from);
    await stalled.head("POST", "/oauth2/token", { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": 100 });
    await stalled.write("grant_type=");
    const held = await Promise.all(Array.from({ length: CONNECTIONS - 2 }, () => Raw.open(child.url, from)));
    for (const raw of held) expect((await raw.request("GET", "/health")).status).toBe(200);
    const extra = await Raw.open(child.url, from);
    expect(apiError(await extra.request("GET", "/v1/workspace"))).toMatchObject({ code: "concurrency_limit_exceeded" });
    expect(await extra.closed(2_000)).toBeDefined();

    const [headers, body] = await Promise.all([slow.answer(HEADERS_MS * 5), stalled.answer(IDLE_MS * 5)]);
    expect(headers?.status).toBe(408);
    expect(apiError(headers)).toMatchObject({ code: "request_timeout" });
    expect(body?.status).toBe(408);
    // The agent protocol answers in its own (RFC 6749) shape.
    expect(body!.body).toMatchObject({ error: "request_timeout", request_id: body!.headers["x-request-id"] });
    for (const raw of [slow, stalled, ...held]) raw.end();
  });
});
