import { describe, expect, it, vi } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { openDatabase } from "../../../server/db/open.ts";
import {
  deleteExpiredRequestLogs,
  flushRequestLogs,
  requestLogWriter,
} from "../../../server/observability/request-log.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { startServer } from "../../../server/runtime/server.ts";
import { ISO } from "../../support/assertions.ts";
import { raw, rest } from "../../support/http.ts";
import { logged } from "../../support/request-logs.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { allPages, DAY_MS, idOf, MISSING_LEAD, oldRow } from "./support.ts";

const UA = "kontor-request-log-test/1.0";

e2e("request logs: writing and retention", (server) => {
  const { tenant, api } = useWorkspace(server);

  describe("writing", () => {
    it("an error body's request_id finds its log row, with the route template, status, error code, latency, key, IP and user agent", async () => {
      const res = await api.get(`/leads/${MISSING_LEAD}`, { "user-agent": UA });
      expect(res.status).toBe(404);
      const requestId = res.body.error.request_id;
      expect(requestId).toBe(idOf(res));
      await logged(server(), [requestId]);

      const list = await api.get(`/request-logs?key_id=${tenant.keyId}&status=404`);
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      expect(list.body.object).toBe("list");
      const row = list.body.data.find((r: any) => r.request_id === requestId);
      expect(row, "the log row of the failed request").toBeDefined();
      expect(row).toEqual({
        object: "request_log",
        request_id: requestId,
        key_id: tenant.keyId,
        method: "GET",
        route: "/v1/leads/{id}",
        status: 404,
        latency_ms: expect.any(Number),
        error_code: "not_found",
        client_ip: expect.stringMatching(/^(127\.0\.0\.1|::1)$/),
        user_agent: UA,
        model: null,
        input_tokens: null,
        output_tokens: null,
        tool: null,
        created_at: expect.stringMatching(ISO),
      });
      expect(Number.isInteger(row.latency_ms) && row.latency_ms >= 0).toBe(true);
      expect(JSON.stringify(row)).not.toContain(MISSING_LEAD);
      // created_at is when the request arrived: within the last minute.
      expect(Math.abs(Date.now() - Date.parse(row.created_at))).toBeLessThan(60_000);
    });

    it("logs a successful request with no error code", async () => {
      const res = await api.post("/leads", { first_name: "Logged" });
      expect(res.status).toBe(201);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))).toMatchObject({
        workspaceId: tenant.workspaceId,
        credentialId: tenant.keyId,
        method: "POST",
        route: "/v1/leads",
        status: 201,
        errorCode: null,
      });
    });

    it("stores a user agent with quotes, braces, commas, backslashes and non-ASCII exactly", async () => {
      const agent = `weird "agent", {braced} \\ back\\slash NULL - ünïcode`;
      const res = await api.get("/workspace", { "user-agent": agent });
      expect(res.status).toBe(200);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))!.userAgent).toBe(agent);
    });

    it("logs GraphQL requests with the route /graphql, and a field error's code", async () => {
      const ok = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tenant.key}`,
          "content-type": "application/json",
          "user-agent": UA,
        },
        body: JSON.stringify({ query: "{ workspace { id } }" }),
      });
      expect(ok.status).toBe(200);
      expect(ok.json.data.workspace.id).toBe(tenant.workspaceId);
      const failed = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: `{ lead(id: "${MISSING_LEAD}") { id } }` }),
      });
      expect(failed.json.errors[0].extensions.code).toBe("not_found");
      const failedId = failed.json.errors[0].extensions.request_id;
      expect(failedId).toBe(idOf(failed));

      const rows = await logged(server(), [idOf(ok), failedId]);
      expect(rows.get(idOf(ok))).toMatchObject({
        workspaceId: tenant.workspaceId,
        credentialId: tenant.keyId,
        method: "POST",
        route: "/graphql",
        status: 200,
        errorCode: null,
        userAgent: UA,
      });
      expect(rows.get(failedId)).toMatchObject({
        route: "/graphql",
        status: 200,
        errorCode: "not_found",
        credentialId: tenant.keyId,
      });
    });

    it("logs unauthenticated 401s without a workspace or key, under the route template", async () => {
      const none = await raw(`${server().api}/leads/${MISSING_LEAD}`, { headers: { "user-agent": UA } });
      expect(none.status).toBe(401);
      const bad = await raw(`${server().api}/leads`, { headers: { authorization: "Bearer ktr_live_nope" } });
      expect(bad.status).toBe(401);
      const noneId = none.json.error.request_id as string;
      const badId = bad.json.error.request_id as string;
      expect(noneId).toBe(idOf(none));

      const rows = await logged(server(), [noneId, badId]);
      expect(rows.get(noneId)).toMatchObject({
        workspaceId: null,
        credentialId: null,
        method: "GET",
        route: "/v1/leads/{id}",
        status: 401,
        errorCode: "unauthenticated",
        userAgent: UA,
      });
      expect(rows.get(noneId)!.clientIp).toMatch(/^(127\.0\.0\.1|::1)$/);
      expect(rows.get(badId)).toMatchObject({
        workspaceId: null,
        credentialId: null,
        route: "/v1/leads",
        status: 401,
        errorCode: "invalid_token",
      });

      // No workspace's API shows them.
      const listed = await allPages(api, "status=401");
      expect(listed.map((r) => r.request_id)).not.toContain(noneId);
      expect(listed.map((r) => r.request_id)).not.toContain(badId);
    });

    it("logs a path no route matches with route null, never the raw path", async () => {
      const res = await api.get("/no-such-thing/123");
      expect(res.status).toBe(404);
      const rows = await logged(server(), [idOf(res)]);
      expect(rows.get(idOf(res))).toMatchObject({
        route: null,
        status: 404,
        errorCode: "not_found",
        workspaceId: tenant.workspaceId,
      });
    });

    it("a failing database is logged, does not break requests, and the rows are written once it recovers", async () => {
      const s = server();
      const prisma = s.running.db.prisma;
      const writer = requestLogWriter(s.running.db)!;
      expect(writer).toBeDefined();
      const resume = writer.pauseBackgroundFlush();
      await prisma.$executeRawUnsafe(
        "create or replace function kontor_test_break_logs() returns trigger language plpgsql as $$ begin raise exception 'logs unavailable'; end $$",
      );
      await prisma.$executeRawUnsafe(
        "create trigger kontor_test_break_logs before insert on request_logs for each row execute function kontor_test_break_logs()",
      );
      try {
        const res = await api.get("/workspace");
        expect(res.status).toBe(200);
        const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
        let written: string[];
        try {
          await flushRequestLogs(s.running.db); // fails: logged, not thrown
        } finally {
          written = stderr.mock.calls.map(([chunk]) => String(chunk));
          stderr.mockRestore();
        }
        const lines = written.filter((line) => line.includes("request log flush failed"));
        expect(lines).toHaveLength(1);
        expect(JSON.parse(lines[0]!)).toMatchObject({
          level: "error",
          msg: "request log flush failed",
          rows: 1,
          dropped: 0,
        });
        expect(await prisma.requestLog.count({ where: { id: idOf(res) } })).toBe(0);
        expect(writer.pending).toBeGreaterThanOrEqual(1);
        const again = await api.get("/workspace");
        expect(again.status).toBe(200);
        await prisma.$executeRawUnsafe("drop trigger kontor_test_break_logs on request_logs");
        await logged(s, [idOf(res), idOf(again)]);
      } finally {
        await prisma.$executeRawUnsafe("drop trigger if exists kontor_test_break_logs on request_logs");
        await prisma.$executeRawUnsafe("drop function if exists kontor_test_break_logs()");
        resume();
      }
    });
  });

  describe("retention", () => {
    it("deletes rows older than 30 days and keeps younger ones", async () => {
      const prisma = server().running.db.prisma;
      const expired = oldRow(tenant.workspaceId, new Date(Date.now() - 31 * DAY_MS));
      const expiredAnonymous = oldRow(null, new Date(Date.now() - 45 * DAY_MS));
      const kept = oldRow(tenant.workspaceId, new Date(Date.now() - 29 * DAY_MS));
      await prisma.requestLog.createMany({ data: [expired, expiredAnonymous, kept] });
      expect(
        await prisma.requestLog.count({ where: { id: { in: [expired.id, expiredAnonymous.id, kept.id] } } }),
      ).toBe(3);

      const deleted = await deleteExpiredRequestLogs(prisma);
      expect(deleted).toBeGreaterThanOrEqual(2);
      const left = await prisma.requestLog.findMany({
        where: { id: { in: [expired.id, expiredAnonymous.id, kept.id] } },
      });
      expect(left.map((r) => r.id)).toEqual([kept.id]);
      expect(
        await prisma.requestLog.count({ where: { createdAt: { lt: new Date(Date.now() - 30 * DAY_MS) } } }),
      ).toBe(0);
    });
  });
});

describe("request logs: flush on close", () => {
  for (const stack of stacks()) {
    it(`writes buffered rows when the server closes, and they are there after reopening [${stack}]`, async () => {
      const scratch = await provisionStack(stack);
      const config = loadConfig({
        PORT: "0",
        KONTOR_ENV: "development",
        KONTOR_LOG: "silent",
        ...scratch.env,
      });
      try {
        const running = await startServer(config, { publicUrlFromPort: true });
        const ws = await createWorkspace(running.db.prisma, {
          name: "Flush",
          plan: "pro",
          ownerEmail: "flush@example.com",
          ownerPassword: "correct horse battery staple",
        });
        const key = await createApiKey(running.db.prisma, {
          workspaceId: ws.workspace_id,
          scopes: [...SCOPES],
        });
        // Hold the background flush so the rows are certainly still in memory at close.
        requestLogWriter(running.db)!.pauseBackgroundFlush();
        const api = rest(`${running.url}/v1`, key.key);
        const ids: string[] = [];
        for (let i = 0; i < 5; i++)
          ids.push(idOf(await api.get(i % 2 ? "/leads" : `/leads/${MISSING_LEAD}`)));
        expect(requestLogWriter(running.db)!.pending).toBeGreaterThanOrEqual(5);
        expect(await running.db.prisma.requestLog.count({ where: { id: { in: ids } } })).toBe(0);
        await running.close();

        const reopened = await openDatabase(config);
        try {
          const rows = await reopened.prisma.requestLog.findMany({
            where: { id: { in: ids } },
            orderBy: { id: "asc" },
          });
          expect(rows.map((r) => r.id)).toEqual([...ids].sort());
          expect(rows.every((r) => r.workspaceId === ws.workspace_id && r.credentialId === key.id)).toBe(
            true,
          );
          expect(rows.filter((r) => r.status === 404 && r.route === "/v1/leads/{id}")).toHaveLength(3);
        } finally {
          await reopened.close();
        }
      } finally {
        await scratch.drop();
      }
    }, 120_000); // a fresh embedded database takes a while to create
  }
});
