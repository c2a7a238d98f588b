import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterAll, expect, it } from "vitest";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import {
  CLAIM_GRANT_TYPE,
  decide,
  granted,
  ownerOf,
  registerServiceAuth,
  tokenClient,
} from "../../support/agent-flow.ts";
import {
  completion,
  type Gate,
  gate,
  headThenHang,
  startFakeOpenAI,
  stream,
  error as upstreamError,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import { collectChunks, FIVE_HOURS, WEEK } from "./support.ts";

/**
 * The coding plan: tokens the provider reports, counted per workspace against a 5-hour and a
 * weekly pool (the four x-codingplan-* headers), 429 once a pool is spent or too many requests
 * run at once; end to end on both stacks (Redis on the PostgreSQL one). CodingMeter itself, with
 * an injected clock, is in coding-meter.test.ts.
 */

const HEADERS = [
  "x-codingplan-5h-used-percent",
  "x-codingplan-5h-reset",
  "x-codingplan-weekly-used-percent",
  "x-codingplan-weekly-reset",
] as const;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/** used / limit as a percentage rounded to 2 decimals, as the headers carry it. */
const percentOf = (used: number, limit: number) =>
  String(Math.min(100, Math.round((used / limit) * 10_000) / 100));

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
  expect([
    monday.getUTCHours(),
    monday.getUTCMinutes(),
    monday.getUTCSeconds(),
    monday.getUTCMilliseconds(),
  ]).toEqual([0, 0, 0, 0]);
  return { fiveHourAt, weeklyAt };
}

/** Every chunk of a stream, aborting it and failing (not hanging) when it does not end within 5 s. */
const collect = <T>(source: AsyncIterable<T> & { controller: AbortController }) =>
  collectChunks(source, { onTimeout: () => source.controller.abort() });

e2e(
  "AI coding plan metering",
  (server) => {
    const client = (key: string) => new OpenAI({ apiKey: key, baseURL: server().api, maxRetries: 0 });
    const chatUrl = () => `${server().api}/chat/completions`;
    const simple = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Hi." }] };
    const post = (key: string, body: unknown = simple) =>
      raw(chatUrl(), {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
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
          const chunks = await collect({
            [Symbol.asyncIterator]: () => iterator,
            controller: data.controller,
          });
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
      if (again.fiveHourAt === resets.fiveHourAt)
        expect(second.headers.get("x-codingplan-5h-reset")).toBe(first.headers.get("x-codingplan-5h-reset"));

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
      expect(
        (await raw(`${server().api}/models`, { headers: { authorization: `Bearer ${free.key}` } })).status,
      ).toBe(200);
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
      expect(
        Math.abs(Number(refused.headers.get("retry-after")) - (weeklyAt - Date.now()) / 1000),
      ).toBeLessThanOrEqual(5);
      expect(fake.requests.length).toBe(before);
    });

    it("runs one coding request at once on free: a second is 429 concurrency_limit_exceeded until the first ends", async () => {
      const free = await tenant("free");
      const first = await heldStream(free.key);
      expectResets(first.response.headers);

      const before = fake.requests.length;
      const second = await post(free.key);
      expect(second.status).toBe(429);
      expect(second.json.error).toMatchObject({
        type: "rate_limit_error",
        code: "concurrency_limit_exceeded",
      });
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
      const created = await client(free.key).chat.completions.create(
        { ...simple, stream: true, stream_options: { include_usage: true } },
        { signal: abort.signal },
      );
      const iterator = created[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      const status = await eventually(
        async () => (await post(free.key)).status,
        (value) => value === 200,
        5_000,
      );
      abort.abort();
      expect(status, "a new request once the provider cut the stream").toBe(200);
      // Only the default completion that got through (12 tokens) counts, not the cut stream's usage.
      expect((await spend(free.key, 1)).headers.get("x-codingplan-5h-used-percent")).toBe(
        percentOf(12, 200_000),
      );
    });

    it("gives the slot back when a streaming client goes away", async () => {
      const free = await tenant("free");
      const abort = new AbortController();
      const hold = gate();
      fake.next(stream({ deltas: ["left", " behind"], holdAfter: 2, gate: hold.promise }));
      const created = await client(free.key).chat.completions.create(
        { ...simple, stream: true, stream_options: { include_usage: true } },
        { signal: abort.signal },
      );
      const iterator = created[Symbol.asyncIterator]();
      expect((await iterator.next()).done).toBe(false);
      expect((await post(free.key)).status).toBe(429);
      abort.abort();
      // The fake's default handler answers whatever gets through.
      const status = await eventually(
        async () => (await post(free.key)).status,
        (value) => value === 200,
        5_000,
      );
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
      const status = await eventually(
        async () => (await post(free.key)).status,
        (value) => value === 200,
        5_000,
      );
      expect(status, "a new request once the client left").toBe(200);
    });

    it("meters an agent token like a key: the same workspace pool, the same headers and the same 429", async () => {
      const free = await tenant("free");
      await server().running.db.prisma.workspace.update({
        where: { id: free.workspaceId },
        data: { agentAuthEnabled: true },
      });
      const owner = await ownerOf(server(), free.workspaceId);
      const agent = await registerServiceAuth(server(), owner.email, { scope: "ai.coding" });
      expect(
        await decide(server(), agent.claim, owner.userId, { workspaceId: free.workspaceId }),
      ).toMatchObject({ outcome: "approved" });
      const token = granted(
        await tokenClient(server().url)(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }),
      ).access_token;
      expect(token).toMatch(/^ktr_agt_/);

      await spend(free.key, 100_000);
      const asAgent = await spend(token, 99_999);
      expect(
        asAgent.headers.get("x-codingplan-5h-used-percent"),
        "the key's tokens count for the agent",
      ).toBe("50");
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
