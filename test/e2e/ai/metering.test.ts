import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../../schema/lib/errors.ts";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import { CodingMeter, codingHeaders, windows } from "../../../server/ai/metering.ts";
import { completion, error as upstreamError, gate, headThenHang, startFakeOpenAI, stream, usageOf, type Gate } from "../../support/fake-openai.ts";
import { CLAIM_GRANT_TYPE, decide, granted, ownerOf, registerServiceAuth, tokenClient } from "../../support/agent-flow.ts";
import { raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { clockAt, newRequestId, newWorkspaceId, refusal } from "../../support/meters.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The coding plan: tokens the provider reports, counted per workspace against a 5-hour and a
 * weekly pool (the four x-codingplan-* headers), 429 once a pool is spent or too many requests
 * run at once; end to end on both stacks (Redis on the PostgreSQL one), and CodingMeter itself
 * with an injected clock.
 */

const HOUR = 3_600_000;
const FIVE_HOURS = 5 * HOUR;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const HEADERS = ["x-codingplan-5h-used-percent", "x-codingplan-5h-reset", "x-codingplan-weekly-used-percent", "x-codingplan-weekly-reset"] as const;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/** used / limit as a percentage rounded to 2 decimals, as the headers carry it. */
const percentOf = (used: number, limit: number) => String(Math.min(100, Math.round((used / limit) * 10_000) / 100));

/** The four headers are there; the resets are the next 5-hour boundary and the next Monday 00:00 UTC. */
function expectResets(headers: Headers) {
  for (const name of HEADERS) expect(headers.get(name), name).not.toBeNull();
  const now = Date.now();
  const fiveHour = headers.get("x-codingplan-5h-reset")!;
  const weekly = headers.get("x-codingplan-weekly-reset")!;
  expect(fiveHour).toMatch(ISO);
  expect(weekly).toMatch(ISO);
  const fiveHourAt = Date.parse(fiveHour);
  const weeklyAt = Date.parse(weekly);
  expect(fiveHourAt).toBeGreaterThan(now - 1_000);
  expect(fiveHourAt - now).toBeLessThanOrEqual(FIVE_HOURS);
  expect(fiveHourAt % FIVE_HOURS).toBe(0);
  expect(weeklyAt).toBeGreaterThan(now - 1_000);
  expect(weeklyAt - now).toBeLessThanOrEqual(WEEK);
  const monday = new Date(weeklyAt);
  expect(monday.getUTCDay()).toBe(1);
  expect([monday.getUTCHours(), monday.getUTCMinutes(), monday.getUTCSeconds(), monday.getUTCMilliseconds()]).toEqual([0, 0, 0, 0]);
  return { fiveHourAt, weeklyAt };
}

async function collect<T>(source: AsyncIterable<T> & { controller: AbortController }, timeoutMs = 5_000): Promise<T[]> {
  const out: T[] = [];
  const iterator = source[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()))));
    const next = await Promise.race([iterator.next(), late]).finally(() => clearTimeout(timer));
    if (next === "late") {
      source.controller.abort();
      throw new Error(`the stream did not end within ${timeoutMs} ms; ${out.length} chunks arrived`);
    }
    if (next.done) return out;
    out.push(next.value);
  }
}

e2e(
  "AI coding plan metering",
  (server) => {
    const client = (key: string) => new OpenAI({ apiKey: key, baseURL: server().api, maxRetries: 0 });
    const chatUrl = () => `${server().api}/chat/completions`;
    const simple = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Hi." }] };
    const post = (key: string, body: unknown = simple) =>
      raw(chatUrl(), { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    /** A completion the provider says took `tokens` tokens (prompt and completion split). */
    const spend = async (key: string, tokens: number) => {
      const prompt = Math.ceil(tokens / 2);
      fake.next(completion({ text: "ok", usage: usageOf(prompt, tokens - prompt) }));
      const response = await post(key);
      expect(response.status, response.text).toBe(200);
      return response;
    };
    const tenant = (plan: PlanName) => server().tenant({ plan });

    /** A stream the fake holds open after its first delta until the returned gate opens. */
    async function heldStream(key: string) {
      const hold: Gate = gate();
      fake.next(stream({ deltas: ["held", " open"], holdAfter: 2, gate: hold.promise }));
      // The client asks for usage: nothing is dropped on the way.
      const { data, response } = await client(key)
        .chat.completions.create({ ...simple, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      expect(response.status).toBe(200);
      const iterator = data[Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.done).toBe(false);
      return {
        hold,
        data,
        response,
        /** Releases the rest and reads the stream to its end. */
        async finish() {
          hold.open();
          const rest: ChatCompletionChunk[] = [first.value as ChatCompletionChunk];
          const chunks = await collect({ [Symbol.asyncIterator]: () => iterator, controller: data.controller });
          return [...rest, ...chunks];
        },
      };
    }

    it("carries the four headers: 0 before use, then the tokens the provider reported", async () => {
      const free = await tenant("free");
      const { coding_tokens_5h: fiveHour, coding_tokens_weekly: weekly } = PLAN_LIMITS.free;
      expect([fiveHour, weekly]).toEqual([200_000, 1_000_000]);

      const first = await spend(free.key, 12_345);
      expect(first.headers.get("x-codingplan-5h-used-percent")).toBe("0");
      expect(first.headers.get("x-codingplan-weekly-used-percent")).toBe("0");
      const resets = expectResets(first.headers);

      const second = await spend(free.key, 655);
      expect(second.headers.get("x-codingplan-5h-used-percent")).toBe("6.17");
      expect(second.headers.get("x-codingplan-weekly-used-percent")).toBe("1.23");
      expect(second.headers.get("x-codingplan-5h-used-percent")).toBe(percentOf(12_345, fiveHour));
      expect(second.headers.get("x-codingplan-weekly-used-percent")).toBe(percentOf(12_345, weekly));
      // The same windows (unless the test straddled a boundary, which the reset then says).
      const again = expectResets(second.headers);
      if (again.fiveHourAt === resets.fiveHourAt) expect(second.headers.get("x-codingplan-5h-reset")).toBe(first.headers.get("x-codingplan-5h-reset"));

      // A stream: the headers are in its head, and its usage (asked by the client) is counted too.
      fake.next(stream({ deltas: ["s"], usage: usageOf(6_000, 1_000) }));
      const { data, response } = await client(free.key)
        .chat.completions.create({ ...simple, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
      expect(response.headers.get("x-codingplan-5h-used-percent")).toBe("6.5");
      expect(response.headers.get("x-codingplan-weekly-used-percent")).toBe("1.3");
      expectResets(response.headers);
      const chunks = await collect(data);
      expect(chunks.at(-1)!.usage).toMatchObject({ prompt_tokens: 6_000, completion_tokens: 1_000 });

      const fourth = await spend(free.key, 1);
      expect(fourth.headers.get("x-codingplan-5h-used-percent")).toBe("10");
      expect(fourth.headers.get("x-codingplan-weekly-used-percent")).toBe("2");
    });

    it("counts per workspace, on a plan's own pools, and only what the provider reported", async () => {
      const plus = await tenant("plus");
      const other = await tenant("plus");
      await spend(plus.key, 250_000);
      const after = await spend(plus.key, 1);
      expect(after.headers.get("x-codingplan-5h-used-percent")).toBe(percentOf(250_000, 1_000_000));
      expect(after.headers.get("x-codingplan-weekly-used-percent")).toBe(percentOf(250_000, 5_000_000));
      const untouched = await spend(other.key, 1);
      expect(untouched.headers.get("x-codingplan-5h-used-percent")).toBe("0");

      // A failed request and an answer without usage count nothing, yet carry the headers.
      const max = await tenant("max");
      fake.next(upstreamError(500, "boom"));
      const failed = await post(max.key);
      expect(failed.status).toBe(502);
      expect(failed.headers.get("x-codingplan-5h-used-percent")).toBe("0");
      expectResets(failed.headers);
      fake.next(completion({ usage: null }));
      expect((await post(max.key)).status).toBe(200);
      const last = await spend(max.key, 1);
      expect(last.headers.get("x-codingplan-5h-used-percent")).toBe("0");
      expect(last.headers.get("x-codingplan-weekly-used-percent")).toBe("0");
    });

    it("counts a stream's tokens when the client did not ask for usage", async () => {
      const free = await tenant("free");
      fake.next(stream({ deltas: ["quiet", " stream"], usage: usageOf(30_000, 10_000) }));
      const created = await client(free.key).chat.completions.create({ ...simple, stream: true });
      const chunks = await collect(created);
      expect(chunks.some((chunk) => chunk.usage)).toBe(false);
      const next = await spend(free.key, 1);
      expect(next.headers.get("x-codingplan-5h-used-percent")).toBe("20");
      expect(next.headers.get("x-codingplan-weekly-used-percent")).toBe("4");
    });

    it("refuses with 429 rate_limit_exceeded and Retry-After once the 5-hour pool is spent, before the provider", async () => {
      const free = await tenant("free");
      const neighbour = await tenant("free");
      await spend(free.key, 199_999);
      // Not spent yet (99.9995 % shows as 100): one more is allowed, and may overshoot.
      const last = await spend(free.key, 2);
      expect(last.headers.get("x-codingplan-5h-used-percent")).toBe("100");

      const before = fake.requests.length;
      const refused = await post(free.key);
      expect(refused.status).toBe(429);
      expect(refused.json.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
      expect(refused.json.error.message).toContain("5-hour");
      const { fiveHourAt } = expectResets(refused.headers);
      expect(refused.headers.get("x-codingplan-5h-used-percent")).toBe("100");
      expect(refused.headers.get("x-codingplan-weekly-used-percent")).toBe(percentOf(200_001, 1_000_000));
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThan(0);
      expect(Math.abs(retryAfter - (fiveHourAt - Date.now()) / 1000)).toBeLessThanOrEqual(5);

      const thrown = await client(free.key)
        .chat.completions.create({ ...simple, stream: true })
        .catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(OpenAI.RateLimitError);
      expect(thrown).toMatchObject({ status: 429, code: "rate_limit_exceeded" });
      expect(fake.requests.length, "nothing reached the provider").toBe(before);

      // Another workspace on the same plan, and the catalog, are not affected.
      expect((await spend(neighbour.key, 1)).headers.get("x-codingplan-5h-used-percent")).toBe("0");
      expect((await raw(`${server().api}/models`, { headers: { authorization: `Bearer ${free.key}` } })).status).toBe(200);
    });

    it("refuses once the weekly pool is spent, with Retry-After to Monday", async () => {
      const free = await tenant("free");
      await spend(free.key, 1_000_000);
      const before = fake.requests.length;
      const refused = await post(free.key);
      expect(refused.status).toBe(429);
      expect(refused.json.error.code).toBe("rate_limit_exceeded");
      expect(refused.json.error.message).toContain("weekly");
      const { weeklyAt } = expectResets(refused.headers);
      expect(refused.headers.get("x-codingplan-weekly-used-percent")).toBe("100");
      expect(Math.abs(Number(refused.headers.get("retry-after")) - (weeklyAt - Date.now()) / 1000)).toBeLessThanOrEqual(5);
      expect(fake.requests.length).toBe(before);
    });

    it("runs one coding request at once on free: a second is 429 concurrency_limit_exceeded until the first ends", async () => {
      const free = await tenant("free");
      const first = await heldStream(free.key);
      expectResets(first.response.headers);

      const before = fake.requests.length;
      const second = await post(free.key);
      expect(second.status).toBe(429);
      expect(second.json.error).toMatchObject({ type: "rate_limit_error", code: "concurrency_limit_exceeded" });
      expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
      expectResets(second.headers);
      const thrown = await client(free.key)
        .chat.completions.create({ ...simple, stream: true })
        .catch((e: unknown) => e);
      expect(thrown).toBeInstanceOf(OpenAI.RateLimitError);
      expect(thrown).toMatchObject({ status: 429, code: "concurrency_limit_exceeded" });
      expect(fake.requests.length, "nothing reached the provider").toBe(before);

      const chunks = await first.finish();
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("held open");
      expect((await spend(free.key, 1)).status).toBe(200);
      // One at a time again: a request that has ended holds nothing.
      expect((await spend(free.key, 1)).status).toBe(200);
    });

    it("runs two at once on plus", async () => {
      const plus = await tenant("plus");
      const a = await heldStream(plus.key);
      const b = await heldStream(plus.key);
      const before = fake.requests.length;
      const third = await post(plus.key);
      expect(third.status).toBe(429);
      expect(third.json.error.code).toBe("concurrency_limit_exceeded");
      expect(third.json.error.message).toContain("2 coding requests");
      expect(fake.requests.length).toBe(before);
      await a.finish();
      expect((await spend(plus.key, 1)).status).toBe(200);
      const c = await heldStream(plus.key);
      expect((await post(plus.key)).status).toBe(429);
      await Promise.all([b.finish(), c.finish()]);
      expect((await spend(plus.key, 1)).status).toBe(200);
    });

    it("gives the slot back when the provider cuts a stream off, counting nothing", async () => {
      const free = await tenant("free");
      fake.next(stream({ deltas: ["cut", " off"], usage: usageOf(50_000, 50_000), dropAfter: 2 }));
      const abort = new AbortController();
      const created = await client(free.key).chat.completions.create({ ...simple, stream: true, stream_options: { include_usage: true } }, { signal: abort.signal });
      const iterator = created[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      const status = await eventually(async () => (await post(free.key)).status, (value) => value === 200, 5_000);
      abort.abort();
      expect(status, "a new request once the provider cut the stream").toBe(200);
      // Only the default completion that got through (12 tokens) counts, not the cut stream's usage.
      expect((await spend(free.key, 1)).headers.get("x-codingplan-5h-used-percent")).toBe(percentOf(12, 200_000));
    });

    it("gives the slot back when a streaming client goes away", async () => {
      const free = await tenant("free");
      const abort = new AbortController();
      const hold = gate();
      fake.next(stream({ deltas: ["left", " behind"], holdAfter: 2, gate: hold.promise }));
      const created = await client(free.key).chat.completions.create({ ...simple, stream: true, stream_options: { include_usage: true } }, { signal: abort.signal });
      const iterator = created[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      expect((await post(free.key)).status).toBe(429);
      abort.abort();
      // The fake's default handler answers whatever gets through.
      const status = await eventually(async () => (await post(free.key)).status, (value) => value === 200, 5_000);
      hold.open();
      expect(status, "a new request once the client left").toBe(200);
    });

    it("gives the slot back when a client leaves before a (non-streamed) answer is complete", async () => {
      const free = await tenant("free");
      const before = fake.requests.length;
      fake.next(headThenHang({ partial: '{"id": "chatcmpl-slow",' }));
      const abort = new AbortController();
      const pending = fetch(chatUrl(), {
        method: "POST",
        headers: { authorization: `Bearer ${free.key}`, "content-type": "application/json" },
        body: JSON.stringify(simple),
        signal: abort.signal,
      });
      await fake.request(before);
      abort.abort();
      await expect(pending).rejects.toThrow();
      const status = await eventually(async () => (await post(free.key)).status, (value) => value === 200, 5_000);
      expect(status, "a new request once the client left").toBe(200);
    });

    it("meters an agent token like a key: the same workspace pool, the same headers and the same 429", async () => {
      const free = await tenant("free");
      await server().running.db.prisma.workspace.update({ where: { id: free.workspaceId }, data: { agentAuthEnabled: true } });
      const owner = await ownerOf(server(), free.workspaceId);
      const agent = await registerServiceAuth(server(), owner.email, { scope: "ai.coding" });
      expect(await decide(server(), agent.claim, owner.userId, { workspaceId: free.workspaceId })).toMatchObject({ outcome: "approved" });
      const token = granted(await tokenClient(server().url)(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token })).access_token;
      expect(token).toMatch(/^ktr_agt_/);

      await spend(free.key, 100_000);
      const asAgent = await spend(token, 99_999);
      expect(asAgent.headers.get("x-codingplan-5h-used-percent"), "the key's tokens count for the agent").toBe("50");
      const asKey = await spend(free.key, 1);
      expect(asKey.headers.get("x-codingplan-5h-used-percent"), "and the agent's for the key").toBe("100");
      const before = fake.requests.length;
      for (const credential of [token, free.key]) {
        const refused = await post(credential);
        expect(refused.status).toBe(429);
        expect(refused.json.error.code).toBe("rate_limit_exceeded");
      }
      expect(fake.requests.length).toBe(before);
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-upstream-secret", AI_UPSTREAM_TIMEOUT_MS: "1500" },
);

describe("CodingMeter with an injected clock", () => {
  /** Monday 2025-01-06 00:00 UTC. */
  const MONDAY = Date.UTC(2025, 0, 6);
  /** The first 5-hour boundary of that week (windows run from the epoch, not from Monday). */
  const FIRST_WINDOW = Math.ceil(MONDAY / FIVE_HOURS) * FIVE_HOURS;
  const workspace = newWorkspaceId;
  const request = newRequestId;

  it("windows(): fixed 5-hour windows from the epoch, weeks from Monday 00:00 UTC", () => {
    expect(windows(0).fiveHour).toEqual({ index: 0, resetsAt: new Date(FIVE_HOURS) });
    // 1970-01-01 was a Thursday: the first weekly reset is Monday the 5th.
    expect(windows(0).weekly.resetsAt.toISOString()).toBe("1970-01-05T00:00:00.000Z");

    // A 5-hour boundary belongs to the window it opens.
    const boundary = FIRST_WINDOW;
    expect(windows(boundary - 1).fiveHour.resetsAt.getTime()).toBe(boundary);
    expect(windows(boundary).fiveHour.resetsAt.getTime()).toBe(boundary + FIVE_HOURS);
    expect(windows(boundary).fiveHour.index).toBe(windows(boundary - 1).fiveHour.index + 1);

    // Monday 00:00 opens a week; the instant before belongs to the week before.
    expect(windows(MONDAY - 1).weekly.resetsAt.getTime()).toBe(MONDAY);
    expect(windows(MONDAY).weekly.resetsAt.toISOString()).toBe("2025-01-13T00:00:00.000Z");
    expect(windows(MONDAY + WEEK - 1).weekly.resetsAt.toISOString()).toBe("2025-01-13T00:00:00.000Z");
    expect(windows(MONDAY).weekly.index).toBe(windows(MONDAY - 1).weekly.index + 1);
    expect(windows(MONDAY + WEEK - 1).weekly.index).toBe(windows(MONDAY).weekly.index);

    for (let t = MONDAY - 3 * DAY; t < MONDAY + 10 * DAY; t += 97 * 60_000 + 13) {
      const w = windows(t);
      const untilFive = w.fiveHour.resetsAt.getTime() - t;
      const untilWeek = w.weekly.resetsAt.getTime() - t;
      expect(untilFive).toBeGreaterThan(0);
      expect(untilFive).toBeLessThanOrEqual(FIVE_HOURS);
      expect(w.fiveHour.resetsAt.getTime() % FIVE_HOURS).toBe(0);
      expect(untilWeek).toBeGreaterThan(0);
      expect(untilWeek).toBeLessThanOrEqual(WEEK);
      expect(w.weekly.resetsAt.getUTCDay()).toBe(1);
      expect(w.weekly.resetsAt.getTime() % DAY).toBe(0);
    }
  });

  it("codingHeaders(): percentages rounded to 2 decimals and capped at 100, resets in ISO 8601", () => {
    const resetsAt = new Date(FIRST_WINDOW);
    const headers = (used: number) =>
      codingHeaders({ fiveHour: { used, limit: 200_000, resetsAt }, weekly: { used, limit: 1_000_000, resetsAt: new Date(MONDAY + WEEK) } });
    expect(headers(0)).toEqual({
      "x-codingplan-5h-used-percent": "0",
      "x-codingplan-5h-reset": resetsAt.toISOString(),
      "x-codingplan-weekly-used-percent": "0",
      "x-codingplan-weekly-reset": "2025-01-13T00:00:00.000Z",
    });
    expect(headers(12_345)["x-codingplan-5h-used-percent"]).toBe("6.17");
    expect(headers(12_345)["x-codingplan-weekly-used-percent"]).toBe("1.23");
    expect(headers(450_000)["x-codingplan-5h-used-percent"]).toBe("100");
    expect(headers(450_000)["x-codingplan-weekly-used-percent"]).toBe("45");
  });

  it("the 5-hour and the weekly pools reset independently", async () => {
    const clock = clockAt(FIRST_WINDOW + 60_000);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    await meter.record(ws, 150_000);
    await meter.record(ws, 60_000);
    let state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([210_000, 210_000]);
    expect(state.fiveHour.resetsAt.getTime()).toBe(FIRST_WINDOW + FIVE_HOURS);

    const spent = await refusal(meter.begin(ws, "free", request()));
    expect([spent.status, spent.code]).toEqual([429, "rate_limit_exceeded"]);
    expect(spent.message).toContain("5-hour");
    expect(spent.headers["Retry-After"]).toBe(String((FIVE_HOURS - 60_000) / 1000));

    // One millisecond before the boundary: still spent. At it: the 5-hour pool is free, the weekly one still counts.
    clock.set(FIRST_WINDOW + FIVE_HOURS - 1);
    expect((await refusal(meter.begin(ws, "free", request()))).headers["Retry-After"]).toBe("1");
    clock.set(FIRST_WINDOW + FIVE_HOURS);
    state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([0, 210_000]);
    const { end, state: began } = await meter.begin(ws, "free", request());
    expect(codingHeaders(began)["x-codingplan-weekly-used-percent"]).toBe("21");
    await end();
    await meter.record(ws, 1_000);
    state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([1_000, 211_000]);

    // Another workspace has pools of its own.
    expect((await meter.state(workspace(), "free")).weekly.used).toBe(0);
  });

  it("a spent weekly pool refuses in a fresh 5-hour window until Monday", async () => {
    const clock = clockAt(FIRST_WINDOW + HOUR);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    // Five 5-hour windows of 200k each spend the week's million.
    for (let i = 0; i < 5; i++) {
      expect((await meter.state(ws, "free")).fiveHour.used).toBe(0);
      await meter.record(ws, 200_000);
      expect((await refusal(meter.begin(ws, "free", request()))).message).toContain(i < 4 ? "5-hour" : "weekly");
      clock.advance(FIVE_HOURS);
    }
    const state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([0, 1_000_000]);
    const weekly = await refusal(meter.begin(ws, "free", request()));
    expect(weekly.code).toBe("rate_limit_exceeded");
    expect(weekly.message).toContain("weekly");
    expect(Number(weekly.headers["Retry-After"])).toBe(Math.ceil((MONDAY + WEEK - clock.now()) / 1000));
    expect(weekly.headers["x-codingplan-weekly-used-percent"]).toBe("100");
    expect(weekly.headers["x-codingplan-5h-used-percent"]).toBe("0");

    clock.set(MONDAY + WEEK);
    const fresh = await meter.state(ws, "free");
    expect([fresh.fiveHour.used, fresh.weekly.used]).toEqual([0, 0]);
    await (await meter.begin(ws, "free", request())).end();
  });

  it("concurrency slots: the plan's number at once, given back once, a dead holder's lease lapses", async () => {
    const clock = clockAt(FIRST_WINDOW);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    const a = await meter.begin(ws, "free", request());
    const busy = await refusal(meter.begin(ws, "free", request()));
    expect([busy.status, busy.code, busy.headers["Retry-After"]]).toEqual([429, "concurrency_limit_exceeded", "1"]);
    // Other workspaces have their own slots.
    await (await meter.begin(workspace(), "free", request())).end();

    await a.end();
    const b = await meter.begin(ws, "free", request());
    // Ending a twice does not give back b's slot.
    await a.end();
    expect((await refusal(meter.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");

    // b never ends (its process died): its lease lapses after 15 minutes.
    clock.advance(15 * 60_000 - 1);
    expect((await refusal(meter.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
    clock.advance(1);
    const c = await meter.begin(ws, "free", request());
    await c.end();
    await b.end();

    const running = [];
    for (let i = 0; i < PLAN_LIMITS.max.coding_concurrency; i++) running.push(await meter.begin(ws, "max", request()));
    expect((await refusal(meter.begin(ws, "max", request()))).message).toContain("8 coding requests");
    await Promise.all(running.map((slot) => slot.end()));
  });

  describe.skipIf(!stacks().includes("postgres"))("on Redis", () => {
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

    it("two meters on one Redis share the pools and the slots; another namespace shares nothing", async () => {
      const clock = clockAt(FIRST_WINDOW + HOUR);
      const one = new CodingMeter(redis, namespace, clock.now);
      const two = new CodingMeter(redis, namespace, clock.now);
      const elsewhere = new CodingMeter(redis, `${namespace}other:`, clock.now);
      const ws = workspace();

      await one.record(ws, 150_000);
      await two.record(ws, 50_000);
      for (const meter of [one, two]) {
        const state = await meter.state(ws, "free");
        expect([state.fiveHour.used, state.weekly.used]).toEqual([200_000, 200_000]);
      }
      expect((await elsewhere.state(ws, "free")).fiveHour.used).toBe(0);
      expect((await refusal(two.begin(ws, "free", request()))).code).toBe("rate_limit_exceeded");

      // The next 5-hour window: the weekly count carries over, on both.
      clock.advance(FIVE_HOURS);
      expect((await two.state(ws, "free")).weekly.used).toBe(200_000);
      expect((await one.state(ws, "free")).fiveHour.used).toBe(0);

      const slot = await one.begin(ws, "free", request());
      expect((await refusal(two.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
      await (await elsewhere.begin(ws, "free", request())).end();
      await slot.end();
      const next = await two.begin(ws, "free", request());
      expect((await refusal(one.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
      // A holder that never ends lapses after 15 minutes, for every process.
      clock.advance(15 * 60_000);
      await (await one.begin(ws, "free", request())).end();
      await next.end();

      // The counters expire on their own, an hour after their window.
      const ttls = await Promise.all((await redis.keys(`${namespace}coding:${ws}:*`)).map(async (key) => [key, await redis.pttl(key)] as const));
      expect(ttls.length).toBeGreaterThan(0);
      for (const [key, ttl] of ttls) {
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(WEEK + HOUR);
      }
    });
  });
});
