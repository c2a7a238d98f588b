import { randomBytes } from "node:crypto";
import { ulid } from "ulid";
import { afterAll, describe, expect, it, vi } from "vitest";
import { MAX_TOKENS } from "../../../server/ai/tokens.ts";
import {
  DEFAULT_REQUEST_LOG_OPTIONS,
  type RequestLogRow,
  RequestLogWriter,
  requestLogWriter,
} from "../../../server/observability/request-log.ts";
import { TEXT_LIMITS } from "../../../server/observability/request-log-row.ts";
import { type ChatUsage, completion, startFakeOpenAI, stream } from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { logged } from "../../support/request-logs.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * One bad row must never cost the others: what a request log row holds is clamped to what the
 * table takes (an AI provider's `1e308` tokens above all), and a batch the database refuses is
 * split so that only the rows it refuses alone are lost.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/** A chat completion whose `usage` is `usage`, byte for byte (JSON.stringify cannot write `1e999`). */
const answerWithUsage = (usage: string) =>
  completion({
    raw:
      '{"id":"chatcmpl-clamp","object":"chat.completion","created":1760000000,"model":"gpt-4o-mini",' +
      `"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":${usage}}`,
  });

/** Text of `length` characters that compresses badly (a btree entry of it cannot be made small). */
const noise = (length: number) => randomBytes(length).toString("base64").slice(0, length);

function row(extra: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    id: `req_${ulid()}`,
    workspaceId: null,
    credentialId: null,
    method: "GET",
    route: "/v1/workspace",
    status: 200,
    latencyMs: 3,
    errorCode: null,
    clientIp: "192.0.2.7",
    userAgent: "request-log-integrity-test",
    createdAt: new Date(),
    ...extra,
  };
}

/** A writer of its own (no background flush during the test), closed after `run`. */
async function withWriter(
  server: TestServer,
  options: Partial<typeof DEFAULT_REQUEST_LOG_OPTIONS>,
  run: (writer: RequestLogWriter) => Promise<void>,
) {
  const writer = new RequestLogWriter(server.running.db.prisma, {
    ...DEFAULT_REQUEST_LOG_OPTIONS,
    flushIntervalMs: 3_600_000,
    retentionFirstMs: 3_600_000,
    ...options,
  });
  try {
    await run(writer);
  } finally {
    await writer.close();
  }
}

/** The JSON lines `run` writes to stderr. */
async function stderrLines(run: () => Promise<void>): Promise<Record<string, unknown>[]> {
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  let written: string[];
  try {
    await run();
  } finally {
    written = stderr.mock.calls.map(([chunk]) => String(chunk));
    stderr.mockRestore();
  }
  return written.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

e2e(
  "request log integrity",
  (server) => {
    const post = (key: string, path: string, body: unknown) =>
      raw(`${server().api}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const chat = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi." }] };

    it("logs an AI provider's 1e308, -5, non-number and huge token counts clamped, and the requests after them too", async () => {
      const s = server();
      // Held: the AI rows and the five requests after them go to the database in one batch.
      const resume = requestLogWriter(s.running.db)!.pauseBackgroundFlush();
      const expected = new Map<string, { inputTokens: number; outputTokens: number }>();
      try {
        const cases: [string, number, number][] = [
          ['{"prompt_tokens": 1e308, "completion_tokens": -5, "total_tokens": 1e308}', MAX_TOKENS, 0],
          ['{"prompt_tokens": 1e999, "completion_tokens": "NaN", "total_tokens": -1e999}', MAX_TOKENS, 0],
          [
            '{"prompt_tokens": 3000000000, "completion_tokens": 12.6, "total_tokens": 3000000012.6}',
            MAX_TOKENS,
            13,
          ],
          ['{"prompt_tokens": -1e308, "completion_tokens": 7, "total_tokens": 7}', 0, 7],
        ];
        for (const [usage, inputTokens, outputTokens] of cases) {
          // A workspace each: a clamped count still fills the coding plan's pools.
          const tenant = await s.tenant({ plan: "pro" });
          fake.next(answerWithUsage(usage));
          const res = await post(tenant.key, "/chat/completions", chat);
          expect(res.status, res.text).toBe(200);
          expected.set(res.headers.get("x-request-id")!, { inputTokens, outputTokens });
        }

        // A stream's usage chunk, and the /responses tool loop's sum.
        const streamed = await s.tenant({ plan: "pro" });
        fake.next(
          stream({ deltas: ["Hi"], usage: { prompt_tokens: 1e308, completion_tokens: -5 } as ChatUsage }),
        );
        const res = await post(streamed.key, "/chat/completions", { ...chat, stream: true });
        expect(res.status, res.text).toBe(200);
        expect(res.text).toContain("[DONE]");
        expected.set(res.headers.get("x-request-id")!, { inputTokens: MAX_TOKENS, outputTokens: 0 });

        const general = await s.tenant({ plan: "pro" });
        fake.next(
          answerWithUsage('{"prompt_tokens": 1e308, "completion_tokens": -5, "total_tokens": 1e308}'),
        );
        const responded = await post(general.key, "/responses", { model: "gpt-4o-mini", input: "Hi." });
        expect(responded.status, responded.text).toBe(200);
        expected.set(responded.headers.get("x-request-id")!, { inputTokens: MAX_TOKENS, outputTokens: 0 });

        const plain: string[] = [];
        const api = rest(s.api, general.key);
        for (let i = 0; i < 5; i++) {
          const workspace = await api.get("/workspace");
          expect(workspace.status).toBe(200);
          plain.push(workspace.headers.get("x-request-id")!);
        }

        const rows = await logged(s, [...expected.keys(), ...plain]);
        for (const [id, tokens] of expected)
          expect(rows.get(id), id).toMatchObject({ status: 200, model: "gpt-4o-mini", ...tokens });
        for (const id of plain)
          expect(rows.get(id)).toMatchObject({
            route: "/v1/workspace",
            status: 200,
            model: null,
            inputTokens: null,
          });
        // What the caller is told is the count Kontor metered and logged.
        expect(responded.json.usage).toMatchObject({
          input_tokens: MAX_TOKENS,
          output_tokens: 0,
          total_tokens: MAX_TOKENS,
        });
      } finally {
        resume();
      }
    });

    it("clamps every column of a row to what the table takes", async () => {
      const s = server();
      const prisma = s.running.db.prisma;
      const hostile = row({
        workspaceId: `ws_\u0000${"w".repeat(500)}`,
        credentialId: "key_\uDC00",
        method: "G\u0000ET-AND-THEN-SOME-MORE",
        route: noise(20_000),
        status: Number.NaN,
        latencyMs: 1e308,
        errorCode: "e".repeat(10_000),
        clientIp: "\uD800".repeat(100),
        userAgent: `a\u0000b\uD800c\uDFFFd😀${noise(20_000)}`,
        model: `m${"😀".repeat(400)}`,
        inputTokens: -5,
        outputTokens: Number.POSITIVE_INFINITY,
        createdAt: new Date(Number.NaN),
      });
      const before = Date.now();
      await withWriter(s, {}, async (writer) => {
        writer.push(hostile);
        await writer.flush();
        expect(writer.pending).toBe(0);
      });
      const stored = await prisma.requestLog.findUnique({ where: { id: hostile.id } });
      expect(stored).not.toBeNull();
      expect(stored).toMatchObject({
        credentialId: "key_\uFFFD",
        method: "G\uFFFDET-AND-THEN-SO",
        status: 0,
        latencyMs: MAX_TOKENS,
        inputTokens: 0,
        outputTokens: MAX_TOKENS,
      });
      expect(stored!.workspaceId).toBe(`ws_\uFFFD${"w".repeat(TEXT_LIMITS.workspaceId - 4)}`);
      expect(stored!.route).toBe(hostile.route!.slice(0, TEXT_LIMITS.route));
      expect(stored!.errorCode).toHaveLength(TEXT_LIMITS.errorCode);
      expect(stored!.clientIp).toBe("\uFFFD".repeat(TEXT_LIMITS.clientIp));
      expect(stored!.userAgent!.startsWith("a\uFFFDb\uFFFDc\uFFFDd😀")).toBe(true);
      expect(stored!.userAgent).toHaveLength(TEXT_LIMITS.userAgent);
      // Cut between the halves of a pair: the first half goes too.
      expect(stored!.model).toBe(`m${"😀".repeat((TEXT_LIMITS.model - 2) / 2)}`);
      expect(stored!.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1_000);
      expect(stored!.createdAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    });

    describe("a batch the database refuses", () => {
      it("loses only the row it refuses (a constraint), logged with its id; the others are written in the same flush", async () => {
        const s = server();
        const prisma = s.running.db.prisma;
        await prisma.$executeRawUnsafe(
          "alter table request_logs add constraint kontor_test_refuse check (user_agent is distinct from 'refused-by-test') not valid",
        );
        try {
          const rows = Array.from({ length: 9 }, (_, i) =>
            row({ userAgent: i === 4 ? "refused-by-test" : `ok-${i}` }),
          );
          const refused = rows[4]!;
          await withWriter(s, { maxAttempts: 8 }, async (writer) => {
            for (const r of rows) writer.push(r);
            const lines = await stderrLines(() => writer.flush());
            expect(writer.pending).toBe(0);
            const dropped = lines.filter((line) => line.msg === "request log row dropped");
            expect(dropped).toHaveLength(1);
            expect(dropped[0]).toMatchObject({ level: "error", request_log_id: refused.id });
            expect(lines.find((line) => line.msg === "request log flush failed")).toMatchObject({
              rows: 9,
              written: 8,
              dropped: 1,
            });
          });
          const stored = await prisma.requestLog.findMany({
            where: { id: { in: rows.map((r) => r.id) } },
            select: { id: true },
          });
          expect(stored.map((r) => r.id).sort()).toEqual(
            rows
              .filter((r) => r !== refused)
              .map((r) => r.id)
              .sort(),
          );
        } finally {
          await prisma.$executeRawUnsafe(
            "alter table request_logs drop constraint if exists kontor_test_refuse",
          );
        }
      });

      it("retries a batch failing otherwise (a trigger) whole, and on its last attempt writes all but the row failing alone", async () => {
        const s = server();
        const prisma = s.running.db.prisma;
        await prisma.$executeRawUnsafe(
          "create or replace function kontor_test_refuse_row() returns trigger language plpgsql as $$ begin if new.user_agent = 'refused-by-trigger' then raise exception 'refused by test'; end if; return new; end $$",
        );
        await prisma.$executeRawUnsafe(
          "create trigger kontor_test_refuse_row before insert on request_logs for each row execute function kontor_test_refuse_row()",
        );
        try {
          const rows = Array.from({ length: 6 }, (_, i) =>
            row({ userAgent: i === 1 ? "refused-by-trigger" : `ok-${i}` }),
          );
          const ids = rows.map((r) => r.id);
          await withWriter(s, { maxAttempts: 2 }, async (writer) => {
            for (const r of rows) writer.push(r);
            const first = await stderrLines(() => writer.flush());
            expect(first.find((line) => line.msg === "request log flush failed")).toMatchObject({
              rows: 6,
              written: 0,
              dropped: 0,
            });
            expect(writer.pending).toBe(6);
            expect(await prisma.requestLog.count({ where: { id: { in: ids } } })).toBe(0);

            const last = await stderrLines(() => writer.flush());
            expect(writer.pending).toBe(0);
            expect(
              last
                .filter((line) => line.msg === "request log row dropped")
                .map((line) => line.request_log_id),
            ).toEqual([rows[1]!.id]);
          });
          const stored = await prisma.requestLog.findMany({
            where: { id: { in: ids } },
            select: { id: true },
          });
          expect(stored.map((r) => r.id).sort()).toEqual(ids.filter((id) => id !== rows[1]!.id).sort());
        } finally {
          await prisma.$executeRawUnsafe("drop trigger if exists kontor_test_refuse_row on request_logs");
          await prisma.$executeRawUnsafe("drop function if exists kontor_test_refuse_row()");
        }
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-upstream-secret", AI_UPSTREAM_TIMEOUT_MS: "5000" },
);
