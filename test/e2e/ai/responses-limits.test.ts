import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import {
  completion,
  type FakeRequest,
  gate,
  headThenHang,
  stream,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import {
  collectEvents as collect,
  responsesApi,
  RESPONSES_SECRET as SECRET,
  scriptedFake,
  textRound,
  toolNames,
  toolRound,
  usageOfResponse,
} from "./support.ts";

/**
 * POST /v1/responses end to end, against the OpenAI-compatible fake provider on loopback and
 * through the official `openai` client: the scopes it needs, the AI rate-limit column, the coding
 * plan (tokens of every round, concurrency, slots given back), Idempotency-Key, the plan's models,
 * and no provider configured.
 */

const { fake, play } = await scriptedFake();

e2e(
  "AI responses: scopes, rate limits and metering",
  (server) => {
    const { client, responsesUrl, post, tenant, since, useSeeded } = responsesApi(server, fake);
    const seeded = useSeeded();

    describe("scopes, rate limits and metering", () => {
      it("a credential with neither ai.responses nor ai.coding is 403 insufficient_scope (ai.responses), before the provider", async () => {
        const key = await server().key(seeded.owner.workspaceId, ["leads.read", "invoices.read"]);
        const before = fake.requests.length;
        const response = await post(key.key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(403);
        expect(response.json.error).toMatchObject({
          type: "permission_error",
          code: "insufficient_scope",
          required_scope: "ai.responses",
        });
        const thrown = await client(key.key)
          .responses.create({ model: "gpt-4o-mini", input: "x" })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.PermissionDeniedError);
        expect(since(before)).toHaveLength(0);
        // Not a general-AI request: it counts in the general column.
        expect(response.headers.get("x-ratelimit-limit")).toBe(String(PLAN_LIMITS.max.requests_per_minute));
      });

      it("general AI counts against the plan's AI column: the 21st request in a minute on free is 429; other routes keep the general limit", async () => {
        const free = await tenant("free", ["ai.responses", "leads.read"]);
        expect(PLAN_LIMITS.free.ai_requests_per_minute).toBe(20);
        expect(PLAN_LIMITS.free.requests_per_minute).toBe(120);
        const before = fake.requests.length;
        for (let i = 1; i <= 20; i++) {
          const response = await post(free.key, { model: "gpt-4o-mini", input: `request ${i}` });
          expect(response.status, `request ${i}`).toBe(200);
          expect(response.headers.get("x-ratelimit-limit")).toBe("20");
          expect(response.headers.get("x-ratelimit-remaining")).toBe(String(20 - i));
          expect(response.headers.get("x-ratelimit-plan")).toBe("free");
          expect(response.headers.get("x-codingplan-5h-used-percent")).toBeNull();
        }
        expect(since(before)).toHaveLength(20);
        const limited = await post(free.key, { model: "gpt-4o-mini", input: "one too many" });
        expect(limited.status).toBe(429);
        expect(limited.json.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
        expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(limited.headers.get("x-ratelimit-limit")).toBe("20");
        expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
        expect(since(before)).toHaveLength(20);
        const thrown = await client(free.key)
          .responses.create({ model: "gpt-4o-mini", input: "again" })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.RateLimitError);

        // The same key on another route: the general column, untouched by the AI requests.
        const leads = await rest(server().api, free.key).get("/leads");
        expect(leads.status).toBe(200);
        expect(leads.headers.get("x-ratelimit-limit")).toBe("120");
        expect(leads.headers.get("x-ratelimit-remaining")).toBe("119");
        expect(since(before)).toHaveLength(20);
      });

      it("a credential with both ai.responses and ai.coding is general AI: the AI column, no coding headers", async () => {
        const both = await tenant("plus", ["ai.responses", "ai.coding"]);
        const response = await post(both.key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(200);
        expect(response.headers.get("x-ratelimit-limit")).toBe("40");
        expect(response.headers.get("x-codingplan-5h-used-percent")).toBeNull();
      });

      it("the AI column is the plan's: plus 40, max 120", async () => {
        for (const plan of ["plus", "max"] as const) {
          const key = await tenant(plan, ["ai.responses"]);
          const response = await post(key.key, { model: "gpt-4o-mini", input: "x" });
          expect(response.status).toBe(200);
          expect(response.headers.get("x-ratelimit-limit")).toBe(
            String(PLAN_LIMITS[plan].ai_requests_per_minute),
          );
          expect(response.headers.get("x-ratelimit-limit")).toBe(plan === "plus" ? "40" : "120");
        }
      });

      it("a credential with ai.coding only is metered by tokens: the x-codingplan-* headers, and the tokens of every round counted", async () => {
        const free = await tenant("free", ["ai.coding"]);
        const limits = PLAN_LIMITS.free;
        const before = fake.requests.length;
        play(
          toolRound([{ id: "call_ws", name: "workspace", args: {} }], usageOf(1_000, 200)),
          textRound("Your workspace.", usageOf(3_000, 300)),
        );
        const { data, response } = await client(free.key)
          .responses.create({ model: "gpt-4o-mini", input: "Which workspace is this?" })
          .withResponse();
        expect(data.output_text).toBe("Your workspace.");
        expect(data.usage).toEqual(usageOfResponse(4_000, 500));
        expect(response.headers.get("x-codingplan-5h-used-percent")).toBe("0");
        expect(response.headers.get("x-codingplan-weekly-used-percent")).toBe("0");
        expect(Date.parse(response.headers.get("x-codingplan-5h-reset")!)).toBeGreaterThan(
          Date.now() - 1_000,
        );
        expect(Date.parse(response.headers.get("x-codingplan-weekly-reset")!)).toBeGreaterThan(
          Date.now() - 1_000,
        );
        // Coding use does not count in the AI column: the general one.
        expect(response.headers.get("x-ratelimit-limit")).toBe(String(limits.requests_per_minute));
        // A coding-only key reads nothing but the workspace summary.
        expect(toolNames(since(before)[0]!)).toEqual(["workspace"]);

        // 4 500 tokens of 200 000 (5 h) and 1 000 000 (week).
        const second = await post(free.key, { model: "gpt-4o-mini", input: "Again?" });
        expect(second.status).toBe(200);
        expect(second.headers.get("x-codingplan-5h-used-percent")).toBe(
          String(Math.round((4_500 / limits.coding_tokens_5h) * 10_000) / 100),
        );
        expect(second.headers.get("x-codingplan-5h-used-percent")).toBe("2.25");
        expect(second.headers.get("x-codingplan-weekly-used-percent")).toBe("0.45");

        // A stream: the headers in its head, and its tokens counted once it has ended (9 + 3 more).
        play(stream({ deltas: ["streamed"], usage: usageOf(5_000, 500) }));
        const { data: streamed, response: head } = await client(free.key)
          .responses.create({ model: "gpt-4o-mini", input: "Stream.", stream: true })
          .withResponse();
        expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(head.headers.get("x-codingplan-5h-used-percent")).toBe(
          String(Math.round((4_512 / limits.coding_tokens_5h) * 10_000) / 100),
        );
        const events = await collect(streamed, () => streamed.controller.abort());
        expect(events.at(-1)!.type).toBe("response.completed");
        const third = await post(free.key, { model: "gpt-4o-mini", input: "After the stream?" });
        expect(third.headers.get("x-codingplan-5h-used-percent")).toBe(
          String(Math.round((10_012 / limits.coding_tokens_5h) * 10_000) / 100),
        );
      });

      it("a coding pool spent is 429 rate_limit_exceeded with the coding headers, before the provider", async () => {
        const free = await tenant("free", ["ai.coding"]);
        play(completion({ text: "big", usage: usageOf(150_000, 50_001) }));
        expect((await post(free.key, { model: "gpt-4o-mini", input: "A lot." })).status).toBe(200);
        const before = fake.requests.length;
        const refused = await post(free.key, { model: "gpt-4o-mini", input: "More." });
        expect(refused.status).toBe(429);
        expect(refused.json.error).toMatchObject({ type: "rate_limit_error", code: "rate_limit_exceeded" });
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(refused.headers.get("x-codingplan-5h-used-percent")).toBe("100");
        expect(since(before)).toHaveLength(0);
      });

      it("every coding answer on /responses carries the coding headers, a refusal included (as on /chat/completions)", async () => {
        const fresh = await tenant("free", ["ai.coding"]);
        // After the slot is taken (a bad input): the headers are there.
        const badInput = await post(fresh.key, { model: "gpt-4o-mini", input: 42 });
        expect(badInput.status).toBe(400);
        expect(badInput.json.error).toMatchObject({ code: "validation_failed", param: "input" });
        expect(badInput.headers.get("x-codingplan-5h-used-percent")).toBe("0");
        // /chat/completions says where the plan stands on every refusal.
        const chat = await raw(`${server().api}/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${fresh.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "o3", messages: [{ role: "user", content: "x" }] }),
        });
        expect(chat.status).toBe(400);
        expect(chat.headers.get("x-codingplan-5h-used-percent")).toBe("0");
        const notInPlan = await post(fresh.key, { model: "o3", input: "x" });
        expect(notInPlan.status).toBe(400);
        expect(notInPlan.json.error.code).toBe("model_not_available");
        expect(
          notInPlan.headers.get("x-codingplan-5h-used-percent"),
          "coding headers on a /responses model_not_available",
        ).toBe("0");
        const notJson = await post(fresh.key, "{ nope");
        expect(notJson.status).toBe(400);
        expect(
          notJson.headers.get("x-codingplan-5h-used-percent"),
          "coding headers on a /responses invalid_json",
        ).toBe("0");
      });

      it("an idempotent replay of a coding answer carries the coding headers", async () => {
        const coding = await tenant("free", ["ai.coding"]);
        const idem = `coding-${Date.now()}-${Math.random()}`;
        const send = (path: string, body: unknown) =>
          raw(`${server().api}${path}`, {
            method: "POST",
            headers: {
              authorization: `Bearer ${coding.key}`,
              "content-type": "application/json",
              "idempotency-key": `${idem}${path}`,
            },
            body: JSON.stringify(body),
          });
        const responsesBody = { model: "gpt-4o-mini", input: "x" };
        expect((await send("/responses", responsesBody)).headers.get("x-codingplan-5h-used-percent")).toBe(
          "0",
        );
        const replayed = await send("/responses", responsesBody);
        expect(replayed.headers.get("idempotent-replay")).toBe("true");
        expect
          .soft(
            replayed.headers.get("x-codingplan-5h-used-percent"),
            "coding headers on a replayed /v1/responses",
          )
          .not.toBeNull();
        // /v1/chat/completions: the document requires the four headers on its 200, a replay included.
        const chatBody = { model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] };
        expect((await send("/chat/completions", chatBody)).status).toBe(200);
        const chatReplay = await send("/chat/completions", chatBody).catch((error: Error) => error);
        expect
          .soft(
            chatReplay instanceof Error ? chatReplay.message : "no OpenAPI mismatch",
            "a replayed /v1/chat/completions fits the document",
          )
          .toBe("no OpenAPI mismatch");
      });

      it("a client leaving a stream aborts the provider's request and gives the coding slot back; meanwhile a second coding request is 429 concurrency_limit_exceeded", async () => {
        const free = await tenant("free", ["ai.coding"]);
        expect(PLAN_LIMITS.free.coding_concurrency).toBe(1);
        const hold = gate();
        const before = fake.requests.length;
        play(stream({ deltas: ["first", " never", " sent"], holdAfter: 2, gate: hold.promise }));
        const abort = new AbortController();
        const created = await client(free.key).responses.create(
          { model: "gpt-4o-mini", input: "Talk.", stream: true },
          { signal: abort.signal },
        );
        const iterator = created[Symbol.asyncIterator]();
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended early");
          if (next.value.type === "response.output_text.delta") break;
        }
        const busy = await post(free.key, { model: "gpt-4o-mini", input: "Me too." });
        expect(busy.status).toBe(429);
        expect(busy.json.error.code).toBe("concurrency_limit_exceeded");
        expect(busy.headers.get("x-codingplan-5h-reset")).not.toBeNull();
        expect(since(before)).toHaveLength(1);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.aborted).toBe(false);
        abort.abort();
        await collect({ [Symbol.asyncIterator]: () => iterator }, () => undefined, 5_000).catch(() => []);
        const seen = await eventually(async () => upstream.aborted, Boolean, 5_000);
        hold.open();
        expect(seen, "the provider saw the request aborted").toBe(true);
        expect(upstream.finished).toBe(false);
        const after = await eventually(
          () => post(free.key, { model: "gpt-4o-mini", input: "Now?" }),
          (response) => response.status !== 429,
          5_000,
        );
        expect(after.status).toBe(200);
      });

      it("a client leaving mid-loop (no stream) aborts the provider's request and gives the coding slot back", async () => {
        const free = await tenant("free", ["ai.coding"]);
        const before = fake.requests.length;
        play(
          toolRound([{ id: "call_ws", name: "workspace", args: {} }], usageOf(10, 1)),
          headThenHang({ partial: '{"id": "chatcmpl-slow", "choices": [' }),
        );
        const abort = new AbortController();
        const pending = fetch(responsesUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${free.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", input: "Slow." }),
          signal: abort.signal,
        });
        const upstream = await fake.request(before + 1);
        abort.abort();
        await expect(pending).rejects.toThrow();
        const seen = await eventually(async () => upstream.aborted, Boolean, 5_000);
        expect(seen, "the provider saw the request aborted").toBe(true);
        const after = await eventually(
          () => post(free.key, { model: "gpt-4o-mini", input: "Now?" }),
          (response) => response.status !== 429,
          5_000,
        );
        expect(after.status).toBe(200);
      });

      it("Idempotency-Key replays a kept answer without asking the provider again; another body is 409", async () => {
        const key = seeded.owner.key;
        const idem = `responses-${Date.now()}-${Math.random()}`;
        const send = (input: string) =>
          raw(responsesUrl(), {
            method: "POST",
            headers: {
              authorization: `Bearer ${key}`,
              "content-type": "application/json",
              "idempotency-key": idem,
            },
            body: JSON.stringify({ model: "gpt-4o-mini", input }),
          });
        const before = fake.requests.length;
        play(textRound("Only once.", usageOf(3, 1)));
        const first = await send("Once?");
        expect(first.status).toBe(200);
        const again = await send("Once?");
        expect(again.status).toBe(200);
        expect(again.headers.get("idempotent-replay")).toBe("true");
        expect(again.json).toEqual(first.json);
        expect(since(before)).toHaveLength(1);
        const other = await send("Something else?");
        expect(other.status).toBe(409);
        expect(other.json.error.code).toBe("idempotency_conflict");
        expect(since(before)).toHaveLength(1);
      });

      it("a model outside the plan is 400 model_not_available (param model), before the provider", async () => {
        const free = await tenant("free", ["ai.responses"]);
        const before = fake.requests.length;
        for (const model of ["gpt-4.1", "o3", "no-such-model"]) {
          const response = await post(free.key, { model, input: "x" });
          expect(response.status, model).toBe(400);
          expect(response.json.error).toMatchObject({
            type: "invalid_request_error",
            code: "model_not_available",
            param: "model",
          });
          expect(response.json.error.message).toContain(model);
        }
        const thrown = await client(free.key)
          .responses.create({ model: "gpt-4.1", input: "x", stream: true })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.BadRequestError);
        expect(thrown).toMatchObject({ code: "model_not_available", param: "model" });
        expect(since(before)).toHaveLength(0);
        // The plan's own model is fine.
        expect((await post(free.key, { model: "gpt-4o-mini", input: "x" })).status).toBe(200);
      });

      describe("without AI_UPSTREAM_URL", () => {
        let bare: TestServer;
        beforeAll(async () => {
          bare = await startTestServer(server().stack);
        });
        afterAll(async () => {
          await bare?.close();
        });

        it("is 503 ai_unavailable with Retry-After; scope and plan are still checked first", async () => {
          const t = await bare.tenant({ plan: "pro" });
          const response = await post(t.key, { model: "gpt-4o-mini", input: "x" }, bare.api);
          expect(response.status).toBe(503);
          expect(response.json.error).toMatchObject({ type: "api_error", code: "ai_unavailable" });
          expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
          const thrown = await client(t.key, bare.api)
            .responses.create({ model: "gpt-4o-mini", input: "x", stream: true })
            .catch((e: unknown) => e);
          expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
          expect(thrown).toMatchObject({ status: 503, code: "ai_unavailable" });
          const coding = await bare.key(t.workspaceId, ["ai.coding"]);
          expect(
            (await post(coding.key, { model: "gpt-4o-mini", input: "x" }, bare.api)).json.error.code,
          ).toBe("ai_unavailable");
          const narrow = await bare.key(t.workspaceId, ["leads.read"]);
          expect((await post(narrow.key, { model: "gpt-4o-mini", input: "x" }, bare.api)).status).toBe(403);
          const free = await bare.tenant({ plan: "free" });
          expect((await post(free.key, { model: "o3", input: "x" }, bare.api)).json.error.code).toBe(
            "model_not_available",
          );
        });
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
