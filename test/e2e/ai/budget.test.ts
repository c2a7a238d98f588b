import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import OpenAI from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import { GeneralBudget, reservationOf } from "../../../server/ai/budget.ts";
import { CORS_EXPOSED_HEADERS } from "../../../server/http/cors.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import {
  completion,
  gate,
  type Handler,
  headThenHang,
  startFakeOpenAI,
  stream,
  error as upstreamError,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/**
 * General AI's daily token budget (docs/api/ai.md): `/v1/responses` with ai.responses, through the
 * official `openai` client against the fake provider on loopback. The x-ai-daily-* headers count
 * down; a spent budget is 429 with Retry-After until the next UTC day, before the provider; a burst
 * of concurrent requests passes the budget by at most one reservation; a failed call releases its
 * reservation, a client that leaves is charged it; the coding plan and the budget never touch.
 * Then the Redis store shared by two budgets, and two real server processes sharing one budget.
 */

const DAY = 86_400_000;
const DAILY = ["x-ai-daily-tokens-limit", "x-ai-daily-tokens-remaining", "x-ai-daily-reset"] as const;
const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/** The three headers: the limit, what is left, and the next 00:00 UTC. */
function expectDaily(headers: Headers, limit: number, remaining: number) {
  expect(headers.get("x-ai-daily-tokens-limit")).toBe(String(limit));
  expect(headers.get("x-ai-daily-tokens-remaining")).toBe(String(remaining));
  const reset = Date.parse(headers.get("x-ai-daily-reset") ?? "");
  expect(reset % DAY).toBe(0);
  expect(reset).toBeGreaterThan(Date.now() - 1_000);
  expect(reset - Date.now()).toBeLessThanOrEqual(DAY);
  return reset;
}

/** A 429 of the spent budget: the documented body, Retry-After until the next UTC day, nothing left. */
function expectSpent(refused: { status: number; headers: Headers; json: any }, limit: number) {
  expect(refused.status).toBe(429);
  expect(refused.json.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
  expect(refused.json.error.message).toContain(`${limit} tokens a day is used up`);
  expect(refused.json.error.request_id).toMatch(/^req_/);
  const reset = expectDaily(refused.headers, limit, 0);
  const retryAfter = Number(refused.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(Math.abs(retryAfter - (reset - Date.now()) / 1000)).toBeLessThanOrEqual(5);
}

/** Tokens a body reserves, as the server counts it (the JSON the client sends). */
const reserves = (body: Record<string, unknown>, limit: number) =>
  reservationOf(Buffer.byteLength(JSON.stringify(body)), body.max_output_tokens, limit);

/** Every event of a stream, failing (not hanging) when it does not end in time. */
async function collect<T>(
  source: AsyncIterable<T> & { controller: AbortController },
  timeoutMs = 8_000,
): Promise<T[]> {
  const out: T[] = [];
  const timer = setTimeout(() => source.controller.abort(), timeoutMs);
  try {
    for await (const item of source) out.push(item);
  } finally {
    clearTimeout(timer);
  }
  return out;
}

/** A JSON completion calling the workspace tool (a first round of a tool loop). */
const toolCall = (prompt: number, completionTokens: number): Handler =>
  completion({
    usage: usageOf(prompt, completionTokens),
    extra: {
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: [
              { id: "call_ws", type: "function", function: { name: "workspace", arguments: "{}" } },
            ],
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
    },
  });

e2e(
  "AI general budget",
  (server) => {
    const client = (key: string) => new OpenAI({ apiKey: key, baseURL: server().api, maxRetries: 0 });
    const post = (key: string, body: unknown, path = "/responses", headers: Record<string, string> = {}) =>
      raw(`${server().api}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
    const tenant = (plan: PlanName, scopes = ["ai.responses"]) => server().tenant({ plan, scopes });
    /** What is left, read from a refusal that never reaches the provider (o3 is max's only). */
    const remaining = async (key: string) => {
      const probe = await post(key, { model: "o3", input: "x" });
      expect(probe.json.error.code).toBe("model_not_available");
      return Number(probe.headers.get("x-ai-daily-tokens-remaining"));
    };
    const ask = { model: "gpt-4o-mini", input: "What is in my workspace?" };

    it("every general answer carries the three headers, counting down with the tokens the provider reports, JSON and streams", async () => {
      const free = await tenant("free");
      const limit = PLAN_LIMITS.free.ai_tokens_daily;
      expect(limit).toBe(200_000);

      fake.next(completion({ text: "One.", usage: usageOf(8_000, 2_000) }));
      const { data, response } = await client(free.key).responses.create(ask).withResponse();
      expect(data.output_text).toBe("One.");
      // Settled before the answer left: it already counts.
      expectDaily(response.headers, limit, 190_000);
      expect(response.headers.get("x-codingplan-5h-used-percent")).toBeNull();
      expect(response.headers.get("x-ratelimit-limit")).toBe(String(PLAN_LIMITS.free.ai_requests_per_minute));

      // A stream: its head shows its reservation taken; once it ends, what the provider reported.
      const streamed = { ...ask, stream: true as const, max_output_tokens: 500 };
      const reservation = reserves(streamed, limit);
      expect(reservation).toBe(Math.ceil(Buffer.byteLength(JSON.stringify(streamed)) / 4) + 500);
      fake.next(stream({ deltas: ["Two", " parts."], usage: usageOf(3_000, 1_000) }));
      const { data: events, response: head } = await client(free.key)
        .responses.create(streamed)
        .withResponse();
      expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expectDaily(head.headers, limit, 190_000 - reservation);
      const all: ResponseStreamEvent[] = await collect(events);
      expect(all.at(-1)!.type).toBe("response.completed");
      expect(
        await eventually(
          () => remaining(free.key),
          (left) => left === 186_000,
        ),
      ).toBe(186_000);

      // Refusals say where the day stands too: before the reservation, and after it (released).
      const notInPlan = await post(free.key, { model: "o3", input: "x" });
      expect(notInPlan.status).toBe(400);
      expectDaily(notInPlan.headers, limit, 186_000);
      const badInput = await post(free.key, { model: "gpt-4o-mini", input: 42 });
      expect(badInput.json.error).toMatchObject({ code: "validation_failed", param: "input" });
      expectDaily(badInput.headers, limit, 186_000);

      // A browser page may read them.
      for (const name of DAILY) expect(CORS_EXPOSED_HEADERS.map((h) => h.toLowerCase())).toContain(name);
      const cross = await post(free.key, { model: "o3", input: "x" }, "/responses", {
        origin: "https://elsewhere.example",
      });
      const exposed = (cross.headers.get("access-control-expose-headers") ?? "").toLowerCase();
      for (const name of DAILY) expect(exposed).toContain(name);

      // Each plan its own budget.
      for (const plan of ["plus", "pro", "max"] as const) {
        const other = await tenant(plan);
        fake.next(completion({ usage: usageOf(1, 1) }));
        const answered = await post(other.key, ask);
        expect(answered.status).toBe(200);
        expectDaily(
          answered.headers,
          PLAN_LIMITS[plan].ai_tokens_daily,
          PLAN_LIMITS[plan].ai_tokens_daily - 2,
        );
      }
    });

    it("a spent budget is 429 rate_limit_exceeded with Retry-After until the next UTC day, before the provider; other workspaces are untouched", async () => {
      const free = await tenant("free");
      const neighbour = await tenant("free");
      const limit = PLAN_LIMITS.free.ai_tokens_daily;
      fake.next(completion({ usage: usageOf(150_000, 49_999) }));
      expectDaily((await post(free.key, ask)).headers, limit, 1);
      // One token left: let in, and it may take the day past the budget.
      fake.next(completion({ usage: usageOf(4_000, 1_000) }));
      const last = await post(free.key, ask);
      expect(last.status).toBe(200);
      expectDaily(last.headers, limit, 0);

      const before = fake.requests.length;
      expectSpent(await post(free.key, ask), limit);
      const thrown = await client(free.key)
        .responses.create({ ...ask, stream: true })
        .catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(OpenAI.RateLimitError);
      expect(thrown).toMatchObject({ status: 429, code: "rate_limit_exceeded" });
      expect(
        Number((thrown as InstanceType<typeof OpenAI.RateLimitError>).headers.get("retry-after")),
      ).toBeGreaterThan(60);
      expect(fake.requests.length, "nothing reached the provider").toBe(before);

      fake.next(completion({ usage: usageOf(10, 5) }));
      const other = await post(neighbour.key, ask);
      expect(other.status).toBe(200);
      expectDaily(other.headers, limit, limit - 15);
    });

    it("a burst of concurrent requests passes the budget by at most one reservation", async () => {
      const plus = await tenant("plus");
      const limit = PLAN_LIMITS.plus.ai_tokens_daily;
      const body = { ...ask, max_output_tokens: 299_990 };
      const reservation = reserves(body, limit);
      const admitted = Math.ceil(limit / reservation);
      expect(admitted).toBe(7);
      // The provider holds every answer until the burst is decided, then reports the worst usage the rule allows: the reservation.
      const held = gate();
      fake.setDefault(async (request, res) => {
        await Promise.race([held.promise, request.settled]);
        await completion({ usage: usageOf(reservation - 7, 7) })(request, res);
      });
      try {
        const before = fake.requests.length;
        let refusedSoFar = 0;
        // Each settles to its answer or its error (never an unhandled rejection while the burst is held).
        const burst = Array.from({ length: 20 }, () =>
          client(plus.key)
            .responses.create(body)
            .withResponse()
            .then(
              (answer) => ({ ok: true as const, answer }),
              (error: any) => {
                refusedSoFar++;
                return { ok: false as const, error };
              },
            ),
        );
        await eventually(
          async () => fake.requests.length - before + refusedSoFar,
          (decided) => decided === 20,
        );
        held.open();
        const results = await Promise.all(burst);
        const ok = results.filter((r) => r.ok);
        const refused = results.flatMap((r) => (r.ok ? [] : [r.error]));
        expect(ok).toHaveLength(admitted);
        expect(fake.requests.length - before).toBe(admitted);
        expect(refused).toHaveLength(20 - admitted);
        for (const error of refused) {
          expect(error).toBeInstanceOf(OpenAI.RateLimitError);
          expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded" });
        }
        // Refused while the reservations of running requests filled the budget: retry when they end.
        expect(
          refused.some(
            (e) =>
              e.headers.get("retry-after") === "1" && /reserved by requests still running/.test(e.message),
          ),
        ).toBe(true);

        // The day ends past the budget by less than one reservation, and the next request is refused until tomorrow.
        const spent = admitted * reservation;
        expect(spent).toBeGreaterThan(limit);
        expect(spent).toBeLessThan(limit + reservation);
        expectSpent(await post(plus.key, ask), limit);
      } finally {
        held.open();
        fake.setDefault(completion());
      }
    });

    it("a failed provider call releases its reservation but for the rounds that completed; a client that leaves is charged its reservation", async () => {
      const pro = await tenant("pro", ["ai.responses", "leads.read"]);
      const limit = PLAN_LIMITS.pro.ai_tokens_daily;
      fake.next(upstreamError(500, "The model is overloaded."));
      const failed = await post(pro.key, ask);
      expect(failed.status).toBe(502);
      expect(failed.json.error.code).toBe("upstream_error");
      expectDaily(failed.headers, limit, limit);

      // A tool loop whose second round fails: the first round's 1 200 tokens count, nothing more.
      fake.next(toolCall(1_000, 200));
      fake.next(upstreamError(500, "Gone."));
      const broken = await post(pro.key, ask);
      expect(broken.status).toBe(502);
      expectDaily(broken.headers, limit, limit - 1_200);

      // A stream whose client leaves before the provider said what it cost: charged its reservation.
      const streamed = { ...ask, stream: true as const, max_output_tokens: 20_000 };
      const reservation = reserves(streamed, limit);
      const hold = gate();
      fake.next(
        stream({ deltas: ["never", " finished"], usage: usageOf(5, 5), holdAfter: 2, gate: hold.promise }),
      );
      const abort = new AbortController();
      const streaming = fake.requests.length;
      const events = await client(pro.key).responses.create(streamed, { signal: abort.signal });
      const iterator = events[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      abort.abort();
      expect(await fake.requests[streaming]!.settled, "the server let go of the provider").toBe(true);
      hold.open();

      // A non-streamed request whose client leaves before the answer: charged its reservation too.
      const waiting = fake.requests.length;
      fake.next(headThenHang({ partial: '{"id": "chatcmpl-slow",' }));
      const leaving = new AbortController();
      const pending = fetch(`${server().api}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${pro.key}`, "content-type": "application/json" },
        body: JSON.stringify(ask),
        signal: leaving.signal,
      });
      const upstream = await fake.request(waiting);
      leaving.abort();
      await expect(pending).rejects.toThrow();
      expect(await upstream.settled, "the server let go of the provider").toBe(true);
      const left = limit - 1_200 - reservation - reserves(ask, limit);
      expect(
        await eventually(
          () => remaining(pro.key),
          (value) => value === left,
        ),
      ).toBe(left);
      // Charged, not still reserved: spending exactly what is left makes the next request "used up", not "reserved".
      fake.next(completion({ usage: usageOf(left, 0) }));
      expectDaily((await post(pro.key, ask)).headers, limit, 0);
      expectSpent(await post(pro.key, ask), limit);
    });

    it("coding-plan requests never touch the budget, and general ones never touch the coding plan", async () => {
      const general = await tenant("free");
      const coding = await server().key(general.workspaceId, ["ai.coding"]);
      const limit = PLAN_LIMITS.free.ai_tokens_daily;

      fake.next(completion({ usage: usageOf(15_000, 5_000) }));
      expectDaily((await post(general.key, ask)).headers, limit, 180_000);

      // The coding plan of the same workspace: none of the general tokens, no daily headers.
      fake.next(completion({ usage: usageOf(20_000, 10_000) }));
      const chat = await client(coding.key)
        .chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Code." }] })
        .withResponse();
      expect(chat.response.headers.get("x-codingplan-5h-used-percent")).toBe("0");
      for (const name of DAILY) expect(chat.response.headers.get(name)).toBeNull();
      fake.next(completion({ usage: usageOf(5_000, 5_000) }));
      const codingResponses = await post(coding.key, ask);
      expect(codingResponses.status).toBe(200);
      expect(codingResponses.headers.get("x-codingplan-5h-used-percent")).toBe("15");
      for (const name of DAILY) expect(codingResponses.headers.get(name)).toBeNull();

      // 40 000 coding tokens later, the budget still has its 180 000.
      expect(await remaining(general.key)).toBe(180_000);

      // A spent budget leaves the coding plan working, and the coding plan shows only its own tokens.
      fake.next(completion({ usage: usageOf(180_000, 0) }));
      expectDaily((await post(general.key, ask)).headers, limit, 0);
      expectSpent(await post(general.key, ask), limit);
      fake.next(completion({ usage: usageOf(1, 1) }));
      const stillCoding = await post(
        coding.key,
        { model: "gpt-4o-mini", messages: [{ role: "user", content: "More." }] },
        "/chat/completions",
      );
      expect(stillCoding.status).toBe(200);
      expect(stillCoding.headers.get("x-codingplan-5h-used-percent")).toBe("20");
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-upstream-budget", AI_UPSTREAM_TIMEOUT_MS: "2000" },
);

describe.runIf(stacks().includes("postgres"))("the budget on Redis [postgres]", () => {
  let redis: Redis;
  const namespace = `kontor-test-${randomBytes(6).toString("hex")}:`;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await redis.connect();
  });
  afterAll(async () => {
    const keys = await redis.keys(`${namespace}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("two budgets on one Redis share the day and the reservations; another namespace shares nothing; the keys expire", async () => {
    let now = Date.UTC(2025, 2, 10, 22);
    const clock = () => now;
    const one = new GeneralBudget(redis, namespace, { clock });
    const two = new GeneralBudget(redis, namespace, { clock });
    const elsewhere = new GeneralBudget(redis, `${namespace}other:`, { clock });
    const ws = `ws_${randomBytes(6).toString("hex")}`;

    const a = await one.reserve(ws, "free", "req_a", 150_000);
    expect((await two.state(ws, "free")).reserved).toBe(150_000);
    const b = await two.reserve(ws, "free", "req_b", 60_000);
    expect(b.state).toMatchObject({ used: 0, reserved: 210_000 });
    const full = await one.reserve(ws, "free", "req_c", 1).catch((e: unknown) => e);
    expect(full).toMatchObject({ status: 429, code: "rate_limit_exceeded", headers: { "Retry-After": "1" } });
    await (await elsewhere.reserve(ws, "free", "req_d", 1)).settle(1);

    await a.settle(100_000);
    await b.settle(0);
    expect(await one.state(ws, "free")).toMatchObject({ used: 100_000, reserved: 0 });
    await (await two.reserve(ws, "free", "req_e", 1)).settle(100_000);
    const spent = await one.reserve(ws, "free", "req_f", 1).catch((e: unknown) => e);
    expect(spent).toMatchObject({ status: 429, headers: { "Retry-After": String(2 * 3600) } });
    // A reservation whose process died lapses after 15 minutes.
    now += 60_000;
    await two.reserve(`${ws}x`, "free", "req_g", 200_000);
    now += 15 * 60_000;
    expect(await one.state(`${ws}x`, "free")).toMatchObject({ used: 0, reserved: 0 });

    for (const key of await redis.keys(`${namespace}ai:${ws}:*`)) {
      const ttl = await redis.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(DAY + 3_600_000);
    }
    // The next UTC day starts afresh, on every process.
    now = Date.UTC(2025, 2, 11);
    expect((await two.state(ws, "free")).used).toBe(0);
  });
});

describe.runIf(stacks().includes("postgres"))("one budget across two server processes [postgres]", () => {
  const CAP = 10_000;
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  let key: string;
  const children: ChildServer[] = [];

  beforeAll(async () => {
    scratch = await provisionStack("postgres");
    const env = {
      ...scratch.env,
      KONTOR_ENV: "development",
      AI_UPSTREAM_URL: fake.url,
      AI_UPSTREAM_API_KEY: "sk-two",
      KONTOR_AI_TOKENS_DAILY_CAP: String(CAP),
    };
    key = (await tenantIn(env, "Budget")).key;
    children.push(await startChildServer(env), await startChildServer(env));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop()));
    await scratch?.drop();
  });

  it("reservations taken on either process count on both: a burst split over them passes the (capped) budget by at most one reservation", async () => {
    const body = { model: "gpt-4o-mini", input: "Split burst.", max_output_tokens: 2_990 };
    const reservation = reserves(body, CAP);
    const admitted = Math.ceil(CAP / reservation);
    expect(admitted).toBe(4);
    const held = gate();
    fake.setDefault(async (request, res) => {
      await Promise.race([held.promise, request.settled]);
      await completion({ usage: usageOf(reservation, 0) })(request, res);
    });
    try {
      const before = fake.requests.length;
      let refusedSoFar = 0;
      const burst = Array.from({ length: 10 }, (_, i) =>
        raw(`${children[i % 2]!.api}/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        }).then((res) => {
          if (res.status === 429) refusedSoFar++;
          return res;
        }),
      );
      await eventually(
        async () => fake.requests.length - before + refusedSoFar,
        (decided) => decided === 10,
      );
      held.open();
      const answers = await Promise.all(burst);
      expect(answers.filter((a) => a.status === 200)).toHaveLength(admitted);
      expect(answers.filter((a) => a.status === 429)).toHaveLength(10 - admitted);
      expect(answers.find((a) => a.status === 200)!.headers.get("x-ai-daily-tokens-limit")).toBe(String(CAP));

      // Settled on both: each process refuses the next request until tomorrow.
      for (const child of children) {
        const refused = await raw(`${child.api}/responses`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        expectSpent(refused, CAP);
      }
      expect(admitted * reservation).toBeLessThan(CAP + reservation);
    } finally {
      held.open();
      fake.setDefault(completion());
    }
  });
});
