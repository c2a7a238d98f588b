/** Early limits per address (connections, requests, an unauthenticated flood), and in a server process; per request: early-limits-requests.test.ts. */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../../schema/lib/api-key-secret.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";
import {
  ADDRESS_LIMIT,
  apiError,
  CONNECTIONS,
  ENV,
  HEADERS_MS,
  IDLE_MS,
  nextAddress,
  Raw,
} from "./support.ts";

/**
 * Database statements run on behalf of requests (made inside a request's async context, which this
 * test tracks itself: the server's request listeners run inside `inRequest`), counted at the
 * drivers both stacks use: pg's Client#query on PostgreSQL, PGlite's query, exec and transaction on
 * the embedded stack. Background work (the webhook poller, sweeps) runs outside any request and is
 * counted apart.
 */
const statements = { request: 0, background: 0 };
const inRequest = new AsyncLocalStorage<true>();
function countStatements(http: Server): () => void {
  const listeners = http.listeners("request") as ((...args: unknown[]) => void)[];
  const wrapped = listeners.map(
    (listener) =>
      (...args: unknown[]) =>
        inRequest.run(true, () => listener(...args)),
  );
  http.removeAllListeners("request");
  for (const listener of wrapped) http.on("request", listener);
  const patched: [object, string, unknown][] = [];
  const patch = (owner: Record<string, any>, name: string) => {
    const original = owner[name] as (...args: unknown[]) => unknown;
    patched.push([owner, name, original]);
    owner[name] = function (this: unknown, ...args: unknown[]) {
      if (inRequest.getStore()) statements.request++;
      else statements.background++;
      return original.apply(this, args);
    };
  };
  patch(pg.Client.prototype as any, "query");
  for (const name of ["query", "exec", "transaction"]) patch(PGlite.prototype as any, name);
  return () => {
    for (const [owner, name, original] of patched) (owner as Record<string, unknown>)[name] = original;
    http.removeAllListeners("request");
    for (const listener of listeners) http.on("request", listener);
  };
}

e2e(
  "early limits: addresses",
  (server) => {
    const url = () => server().url;

    it(`one address holds at most ${CONNECTIONS} connections: one more gets 429 and is closed, other addresses are not affected`, async () => {
      const from = nextAddress();
      const held = await Promise.all(Array.from({ length: CONNECTIONS }, () => Raw.open(url(), from)));
      // Each of them is served (and kept alive).
      for (const raw of held) expect((await raw.request("GET", "/health")).status).toBe(200);

      const tenant = await server().tenant();
      const extra = await Raw.open(url(), from);
      const refused = await extra.request(
        "POST",
        "/v1/leads",
        { Authorization: `Bearer ${tenant.key}` },
        '{"first_name":"Refused"}',
      );
      const closedAt = await extra.closed(2_000);
      expect(refused.status).toBe(429);
      expect(apiError(refused)).toMatchObject({
        type: "rate_limit_error",
        code: "concurrency_limit_exceeded",
        request_id: refused.headers["x-request-id"],
      });
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.headers.connection).toBe("close");
      expect(closedAt, "the extra connection is closed").toBeDefined();
      // A connection that sends nothing is closed after a second, unanswered. (This suite's headers
      // timeout is a second too, so a loaded machine may see Node's 408 for the headers that never
      // came close it first: either way nothing is served on it.)
      const silent = await Raw.open(url(), from);
      const silentClosed = await silent.closed(3_000);
      expect(silentClosed).toBeGreaterThan(900);
      if (silent.unread() > 0)
        expect(silent.unreadText()).toMatch(/^HTTP\/1\.1 408 .*"code":"request_timeout"/s);
      console.log(
        `[${server().stack}] connection ${CONNECTIONS + 1} of one address: 429 at ${Math.round(refused.at)} ms, closed at ${Math.round(closedAt!)} ms; a silent one closed at ${Math.round(silentClosed!)} ms`,
      );

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
      for (let i = 0; i < ADDRESS_LIMIT; i++)
        expect((await raw.request("GET", "/v1/workspace", auth)).status).toBe(200);
      await raw.head("POST", "/v1/leads", {
        ...auth,
        "Content-Type": "application/json",
        "Content-Length": 1_000,
      });
      const answer = await raw.answer(2_000);
      expect(answer?.status, JSON.stringify(answer?.body)).toBe(429);
      expect(apiError(answer)).toMatchObject({
        type: "rate_limit_error",
        code: "rate_limit_exceeded",
        request_id: answer!.headers["x-request-id"],
      });
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
      const restore = countStatements(server().running.server);
      try {
        const from = nextAddress();
        const raw = await Raw.open(url(), from);
        // Well-formed, so each is looked up (a malformed one is refused without).
        const badToken = () => ({ Authorization: `Bearer ${generateApiKey()}` });
        const count = () => ({ ...statements });

        // Under the limit, a bad token costs a lookup: the counter sees it.
        const start = count();
        for (let i = 0; i < ADDRESS_LIMIT; i++)
          expect((await raw.request("GET", "/v1/workspace", badToken())).status).toBe(401);
        const underLimit = statements.request - start.request;
        expect(underLimit).toBeGreaterThanOrEqual(ADDRESS_LIMIT);

        // Past it: bad tokens, no token, a session cookie, the agent protocol and the account API.
        const FLOOD = 200;
        const sends = [
          () => raw.request("GET", "/v1/workspace", badToken()),
          () => raw.request("GET", "/v1/workspace"),
          () =>
            raw.request("GET", "/v1/workspace", {
              Cookie: `kontor_session=${randomBytes(24).toString("base64url")}`,
            }),
          () =>
            raw.request("POST", "/graphql", badToken(), JSON.stringify({ query: "{ workspace { id } }" })),
          () =>
            raw.request(
              "POST",
              "/agent/identity",
              {},
              JSON.stringify({ type: "anonymous", agent_name: "flood" }),
            ),
          () =>
            raw.request(
              "POST",
              "/oauth2/token",
              { "Content-Type": "application/x-www-form-urlencoded" },
              "grant_type=client_credentials",
            ),
          () =>
            raw.request(
              "POST",
              "/dashboard/api/sign-in",
              {},
              JSON.stringify({ email: "flood@example.com", password: "x".repeat(12) }),
            ),
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
        const during = {
          request: statements.request - before.request,
          background: statements.background - before.background,
        };
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
    await stalled.head("POST", "/oauth2/token", {
      "Content-Type": "application/x-www-form-urlencoded",
      "Content-Length": 100,
    });
    await stalled.write("grant_type=");
    const held = await Promise.all(Array.from({ length: CONNECTIONS - 2 }, () => Raw.open(child.url, from)));
    for (const raw of held) expect((await raw.request("GET", "/health")).status).toBe(200);
    const extra = await Raw.open(child.url, from);
    expect(apiError(await extra.request("GET", "/v1/workspace"))).toMatchObject({
      code: "concurrency_limit_exceeded",
    });
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
