/** Early limits per request: body limits known before a byte is read, and slow clients; per address: early-limits-addresses.test.ts. */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { BODY_LIMITS } from "../../../server/policies/body-limits.ts";
import { e2e } from "../../support/suite.ts";
import { apiError, ENV, HEADERS_MS, IDLE_MS, nextAddress, Raw, TICK_MS } from "./support.ts";

/**
 * How late past its timer a cut may come on a loaded machine (a full run took 1.3 s past it once).
 * What is proven is that the timer cut it: without it the request would wait for Node's hour.
 */
const LOADED_SLACK_MS = 1_500;

e2e(
  "early limits: requests",
  (server) => {
    const url = () => server().url;

    describe("body limits, known before a byte is read", () => {
      const CASES = [
        {
          path: "/oauth2/token",
          limit: BODY_LIMITS.protocol,
          type: "application/x-www-form-urlencoded",
          shape: "oauth",
        },
        { path: "/agent/identity", limit: BODY_LIMITS.protocol, type: "application/json", shape: "oauth" },
        {
          path: "/dashboard/api/sign-in",
          limit: BODY_LIMITS.protocol,
          type: "application/json",
          shape: "rest",
        },
        { path: "/v1/responses", limit: BODY_LIMITS.ai, type: "application/json", shape: "rest" },
        { path: "/v1/chat/completions", limit: BODY_LIMITS.ai, type: "application/json", shape: "rest" },
        { path: "/v1/leads", limit: BODY_LIMITS.api, type: "application/json", shape: "rest" },
        { path: "/graphql", limit: BODY_LIMITS.api, type: "application/json", shape: "graphql" },
      ] as const;

      it.each(CASES)(
        "$path: a declared Content-Length over $limit bytes is 413 at once, with or without a key",
        async ({ path, limit, type, shape }) => {
          const tenant = await server().tenant();
          const from = nextAddress();
          for (const key of [undefined, tenant.key]) {
            const raw = await Raw.open(url(), from);
            await raw.head("POST", path, {
              "Content-Type": type,
              "Content-Length": limit + 1,
              ...(key && { Authorization: `Bearer ${key}` }),
            });
            // Not a byte of the body is sent: a server that waited for it would answer 408 once the
            // body idled (IDLE_MS), never 413. (How soon is the machine's: a loaded one took 1.6 s.)
            const answer = await raw.answer(5_000);
            raw.end();
            expect(answer?.status, `${path}: ${JSON.stringify(answer?.body)}`).toBe(413);
            console.log(
              `[${server().stack}] ${path} declaring ${limit + 1} bytes ${key ? "with" : "without"} a key: 413 after ${answer!.at.toFixed(1)} ms, 0 body bytes sent`,
            );
            const requestId = answer!.headers["x-request-id"];
            expect(requestId).toMatch(/^req_/);
            if (shape === "oauth")
              expect(answer!.body).toMatchObject({
                error: "payload_too_large",
                error_description: expect.stringContaining(String(limit)),
                request_id: requestId,
              });
            if (shape === "rest")
              expect(apiError(answer)).toMatchObject({
                type: "invalid_request_error",
                code: "payload_too_large",
                request_id: requestId,
              });
            if (shape === "graphql")
              expect(answer!.body.errors[0].extensions).toMatchObject({
                code: "payload_too_large",
                request_id: requestId,
              });
          }
        },
      );

      it("a chunked body is counted as it arrives and refused as soon as it passes its route's limit", async () => {
        const tenant = await server().tenant();
        const from = nextAddress();
        for (const { path, limit, key } of [
          { path: "/oauth2/token", limit: BODY_LIMITS.protocol, key: undefined },
          { path: "/v1/responses", limit: BODY_LIMITS.ai, key: tenant.key },
        ]) {
          const raw = await Raw.open(url(), from);
          await raw.head("POST", path, {
            "Content-Type":
              path === "/oauth2/token" ? "application/x-www-form-urlencoded" : "application/json",
            "Transfer-Encoding": "chunked",
            ...(key && { Authorization: `Bearer ${key}` }),
          });
          const chunk = Buffer.alloc(16 * 1024, "a");
          for (let sent = 0; sent < limit; sent += chunk.length)
            await raw.write(
              Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]),
            );
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
        const answer = await raw.request(
          "POST",
          "/oauth2/token",
          { "Content-Type": "application/x-www-form-urlencoded" },
          body,
        );
        raw.end();
        expect(answer.status).toBe(400);
        expect(answer.body.error).not.toBe("payload_too_large");
      });
    });

    describe("slow clients", () => {
      it("a body that sends nothing for the idle timeout gets 408 request_timeout, and its connection is closed", async () => {
        const tenant = await server().tenant();
        const before = await server().running.db.prisma.lead.count({
          where: { workspaceId: tenant.workspaceId },
        });
        const raw = await Raw.open(url(), nextAddress());
        await raw.head("POST", "/v1/leads", {
          Authorization: `Bearer ${tenant.key}`,
          "Content-Type": "application/json",
          "Content-Length": 100,
        });
        const sentAt = performance.now() - raw.openedAt;
        await raw.write('{"first_name":');
        const answer = await raw.answer(IDLE_MS * 5);
        const closed = await raw.closed(5_000);
        expect(answer?.status, JSON.stringify(answer?.body)).toBe(408);
        const waited = answer!.at - sentAt;
        expect(waited).toBeGreaterThanOrEqual(IDLE_MS - 50);
        expect(waited).toBeLessThan(IDLE_MS + 2 * TICK_MS + LOADED_SLACK_MS);
        expect(answer!.headers.connection).toBe("close");
        expect(apiError(answer)).toMatchObject({
          type: "invalid_request_error",
          code: "request_timeout",
          request_id: answer!.headers["x-request-id"],
        });
        expect(closed, "the server closed the connection").toBeDefined();
        // Nothing was written; the request log holds what the client got.
        expect(
          await server().running.db.prisma.lead.count({ where: { workspaceId: tenant.workspaceId } }),
        ).toBe(before);
        await flushRequestLogs(server().running.db);
        const row = await server().running.db.prisma.requestLog.findUnique({
          where: { id: answer!.headers["x-request-id"] },
        });
        expect(row).toMatchObject({ status: 408, errorCode: "request_timeout", route: "/v1/leads" });
        console.log(
          `[${server().stack}] stalled body: 408 after ${Math.round(waited)} ms of silence (idle timeout ${IDLE_MS} ms), closed at ${Math.round(closed!)} ms`,
        );
      });

      it("a body that keeps trickling is not idle, however long it takes", async () => {
        const tenant = await server().tenant();
        const raw = await Raw.open(url(), nextAddress());
        const body = Buffer.from('{"first_name":"Slow but steady"}');
        await raw.head("POST", "/v1/leads", {
          Authorization: `Bearer ${tenant.key}`,
          "Content-Type": "application/json",
          "Content-Length": body.length,
        });
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
        await raw.head("POST", `/v1/buckets/${bucket.body.id}/objects?file_name=stalled.bin`, {
          ...auth,
          "Content-Type": "application/octet-stream",
          "Content-Length": 1_000_000,
        });
        await raw.write(randomBytes(64 * 1024));
        const sentAt = performance.now() - raw.openedAt;
        const answer = await raw.answer(IDLE_MS * 5);
        const closed = await raw.closed(5_000);
        expect(answer?.status, JSON.stringify(answer?.body)).toBe(408);
        expect(apiError(answer)).toMatchObject({ code: "request_timeout" });
        expect(answer!.at - sentAt).toBeLessThan(IDLE_MS + 2 * TICK_MS + LOADED_SLACK_MS);
        expect(closed).toBeDefined();

        // The route learns of the cut, cleans up and ends: its log row says what the client got.
        const prisma = server().running.db.prisma;
        const logged = async () => {
          await flushRequestLogs(server().running.db);
          return prisma.requestLog.findUnique({ where: { id: answer!.headers["x-request-id"] } });
        };
        await expect
          .poll(logged, { timeout: 5_000 })
          .toMatchObject({ status: 408, errorCode: "request_timeout" });
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
          expect(answer!.at).toBeLessThan(HEADERS_MS + 2 * TICK_MS + LOADED_SLACK_MS);
          expect(answer!.headers.connection).toBe("close");
          expect(apiError(answer)).toMatchObject({
            type: "invalid_request_error",
            code: "request_timeout",
            request_id: answer!.headers["x-request-id"],
          });
          expect(await raw.closed(5_000)).toBeDefined();
          console.log(
            `[${server().stack}] ${raw === slow ? "half-sent headers" : "nothing sent"}: 408 at ${Math.round(answer!.at)} ms (headers timeout ${HEADERS_MS} ms)`,
          );
        }
      });
    });
  },
  ENV,
);
