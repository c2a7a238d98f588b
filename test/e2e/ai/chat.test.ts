import OpenAI from "openai";
import type { ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PlanName } from "../../../schema/lib/plans.ts";
import { freePort } from "../../support/child-server.ts";
import {
  completion,
  completionBody,
  error as upstreamError,
  garbage,
  gate,
  hang,
  headThenDrop,
  headThenHang,
  startFakeOpenAI,
  stream,
  usageOf,
  type FakeRequest,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The AI routes against an OpenAI-compatible fake provider on loopback, through the official
 * `openai` client: the model catalog by plan, chat completions passed through (the checked JSON
 * serialised again upstream, answers untouched, streams event by event), client aborts reaching
 * the provider, scopes, and every way the provider can fail, without its key ever showing.
 */

const SECRET = "sk-upstream-secret";
const fake = await startFakeOpenAI();
afterAll(() => fake.close());

const CATALOG: Record<PlanName, string[]> = {
  free: ["gpt-4o-mini"],
  plus: ["gpt-4o-mini", "gpt-4.1-mini"],
  pro: ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1"],
  max: ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1", "o3"],
};

/** A 1×1 PNG as a data: URL. */
const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Every chunk of an async iterable, failing (not hanging) when it does not end in time. */
async function collect<T>(source: AsyncIterable<T>, options: { into?: T[]; timeoutMs?: number; onTimeout?: () => void } = {}): Promise<T[]> {
  const out = options.into ?? [];
  const iterator = source[Symbol.asyncIterator]();
  const deadline = Date.now() + (options.timeoutMs ?? 5_000);
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()))));
    const next = await Promise.race([iterator.next(), late]).finally(() => clearTimeout(timer));
    if (next === "late") {
      options.onTimeout?.();
      throw new Error(`the stream did not end within ${options.timeoutMs ?? 5_000} ms; ${out.length} chunks arrived: ${JSON.stringify(out).slice(0, 800)}`);
    }
    if (next.done) return out;
    out.push(next.value);
  }
}

/** A JSON text as Kontor forwards it: parsed (the last of duplicate keys wins), then serialised again. */
const reserialised = (text: string) => JSON.stringify(JSON.parse(text));

const textOf = (chunks: ChatCompletionChunk[]) => chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("");

/** The response shows nothing of the provider's key: neither body nor any header. */
function expectNoSecret(response: { text: string; headers: Headers }) {
  expect(response.text).not.toContain(SECRET);
  expect(response.text).not.toContain("upstream-secret");
  for (const [name, value] of response.headers) expect(`${name}: ${value}`).not.toContain("upstream-secret");
}

e2e(
  "AI chat completions",
  (server) => {
    /** The bodies the client put on the wire, in order. */
    const sent: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      if (typeof init?.body === "string") sent.push(init.body);
      return fetch(input, init);
    };
    const client = (key: string, base = server().api) => new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0, fetch: recordingFetch });

    const chatUrl = () => `${server().api}/chat/completions`;
    const post = (key: string, body: unknown, url = chatUrl()) =>
      raw(url, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });

    /** The requests the fake received after `before` of them. */
    const since = (before: number) => fake.requests.slice(before);

    const simple = (model = "gpt-4o-mini"): ChatCompletionCreateParamsNonStreaming => ({ model, messages: [{ role: "user", content: "Say hello." }] });

    /** A workspace of its own: a request one test leaves running holds none of another test's coding slots. */
    const fresh = (plan: PlanName = "pro") => server().tenant({ plan });

    let pro: Tenant;
    beforeAll(async () => {
      pro = await server().tenant({ plan: "pro" });
    });

    describe("models", () => {
      it("GET /v1/models lists exactly the plan's models, in OpenAI's shape", async () => {
        for (const plan of ["free", "plus", "pro", "max"] as const) {
          const tenant = await server().tenant({ plan });
          const listed = await raw(`${server().api}/models`, { headers: { authorization: `Bearer ${tenant.key}` } });
          expect(listed.status, plan).toBe(200);
          expect(listed.json.object).toBe("list");
          expect(listed.json.data.map((m: { id: string }) => m.id), plan).toEqual(CATALOG[plan]);
          for (const model of listed.json.data) {
            expect(Object.keys(model).sort()).toEqual(["created", "id", "object", "owned_by"]);
            expect(model).toMatchObject({ object: "model", owned_by: "openai" });
            expect(Number.isSafeInteger(model.created)).toBe(true);
          }
          // The same through the official client.
          const page = await client(tenant.key).models.list();
          expect(page.data.map((m) => m.id)).toEqual(CATALOG[plan]);
        }
      });

      it("GET /v1/models/{id} returns one model of the plan; others are 400 model_not_available", async () => {
        const model = await client(pro.key).models.retrieve("gpt-4.1");
        expect(model).toEqual({ id: "gpt-4.1", object: "model", created: 1744316542, owned_by: "openai" });

        const free = await server().tenant({ plan: "free" });
        for (const id of ["gpt-4.1", "o3", "no-such-model"]) {
          const refused = await raw(`${server().api}/models/${id}`, { headers: { authorization: `Bearer ${free.key}` } });
          expect(refused.status, id).toBe(400);
          expect(refused.json.error).toMatchObject({ type: "invalid_request_error", code: "model_not_available", param: "model" });
          expect(refused.json.error.request_id).toBe(refused.headers.get("x-request-id"));
        }
        const thrown = await client(free.key)
          .models.retrieve("o3")
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.BadRequestError);
        expect(thrown).toMatchObject({ status: 400, code: "model_not_available", param: "model" });
      });

      it("needs a valid credential but no particular scope", async () => {
        const narrow = await server().tenant({ plan: "plus", scopes: ["leads.read"] });
        const page = await client(narrow.key).models.list();
        expect(page.data.map((m) => m.id)).toEqual(CATALOG.plus);
        expect((await client(narrow.key).models.retrieve("gpt-4.1-mini")).id).toBe("gpt-4.1-mini");

        const anonymous = await raw(`${server().api}/models`);
        expect(anonymous.status).toBe(401);
        const wrong = await raw(`${server().api}/models`, { headers: { authorization: "Bearer ktr_live_not_a_key" } });
        expect(wrong.status).toBe(401);
      });
    });

    describe("chat completions", () => {
      it("answers through the official client with the provider's completion, untouched", async () => {
        const before = fake.requests.length;
        const answer = completionBody({ text: "Hello from the fake.", usage: usageOf(11, 5) });
        fake.next(completion({ raw: JSON.stringify(answer) }));
        const { data, response } = await client(pro.key).chat.completions.create(simple()).withResponse();
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^application\/json/);
        expect(data).toEqual(answer);
        expect(data.choices[0]!.message.content).toBe("Hello from the fake.");

        const [upstream] = since(before) as [FakeRequest];
        expect(since(before)).toHaveLength(1);
        expect(upstream.method).toBe("POST");
        expect(upstream.path).toBe("/v1/chat/completions");
        expect(upstream.headers["content-type"]).toMatch(/^application\/json/);
        expect(upstream.headers.authorization).toBe(`Bearer ${SECRET}`);
        // The caller's own key stays with Kontor.
        expect(JSON.stringify(upstream.headers)).not.toContain(pro.key);
        expect(upstream.body).not.toContain(pro.key);
        expect(upstream.json).toEqual(simple());
      });

      it("passes tools, tool_choice, response_format, an image part and unknown fields on, as the JSON it checked", async () => {
        const body = {
          model: "gpt-4.1",
          messages: [
            { role: "system", content: "You answer in JSON. Ünïcødé ✓ \u2028 \"quoted\" \\ back" },
            {
              role: "user",
              content: [
                { type: "text", text: "What is in this image, and what is the weather in Oslo?" },
                { type: "image_url", image_url: { url: PNG, detail: "low" } },
              ],
            },
            { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
            { role: "tool", tool_call_id: "call_1", content: '{"temp_c": -3.5}' },
          ],
          tools: [
            {
              type: "function",
              function: {
                name: "get_weather",
                description: "The weather in a city.",
                parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false },
                strict: true,
              },
            },
          ],
          tool_choice: { type: "function", function: { name: "get_weather" } },
          response_format: {
            type: "json_schema",
            json_schema: {
              name: "answer",
              strict: true,
              schema: { type: "object", properties: { image: { type: "string" }, temp_c: { type: "number" } }, required: ["image", "temp_c"], additionalProperties: false },
            },
          },
          temperature: 0.25,
          top_p: 1,
          seed: 42,
          max_completion_tokens: 300,
          parallel_tool_calls: false,
          logit_bias: { "50256": -100 },
          metadata: { ticket: "T-1" },
          user: "user-7",
          x_vendor_extension: { nested: [1, "two", null, true, { deep: 1.5e-7 }] },
        };
        const before = fake.requests.length;
        const sentBefore = sent.length;
        fake.next(completion({ text: '{"image":"a pixel","temp_c":-3.5}' }));
        const data = await client(pro.key).chat.completions.create(body as unknown as ChatCompletionCreateParamsNonStreaming);
        expect(data.choices[0]!.message.content).toBe('{"image":"a pixel","temp_c":-3.5}');

        const [upstream] = since(before) as [FakeRequest];
        expect(sent.length).toBe(sentBefore + 1);
        // The JSON the client sent, parsed, checked and serialised again: no message added, none changed.
        expect(upstream.body).toBe(reserialised(sent.at(-1)!));
        expect(upstream.json).toEqual(body);
        expect(upstream.json.messages).toEqual(body.messages);
        expect(upstream.json.messages).toHaveLength(4);
        expect(upstream.json.messages[1].content[1].image_url.url).toBe(PNG);
      });

      it("passes a hand-written JSON body on with the same content, serialised again rather than byte for byte", async () => {
        const text = '{ "messages" : [ {"content":"caf\\u00e9 \\ud83d\\ude00","role":"user"} ],\n  "model":"gpt-4o-mini", "temperature": 1.50, "stop": ["\\n\\n"], "n": 1 }';
        const before = fake.requests.length;
        fake.next(completion({ text: "ok" }));
        const response = await post(pro.key, text);
        expect(response.status).toBe(200);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.body).toBe(reserialised(text));
        expect(upstream.body).toBe('{"messages":[{"content":"café 😀","role":"user"}],"model":"gpt-4o-mini","temperature":1.5,"stop":["\\n\\n"],"n":1}');
        expect(upstream.json).toEqual(JSON.parse(text));
        expect(upstream.json.messages[0].content).toBe("café 😀");
      });

      it("returns the provider's answer byte for byte, usage and unknown fields included", async () => {
        const answer =
          '{\n  "id": "chatcmpl-raw",\n  "object": "chat.completion",\n  "created": 1760000000,\n  "model": "gpt-4o-mini-2024-07-18",\n' +
          '  "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": null, "annotations": [],\n' +
          '    "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\":\\"Z\\u00fcrich\\"}"}}]},\n' +
          '    "logprobs": null, "finish_reason": "tool_calls"}],\n' +
          '  "usage": {"prompt_tokens": 812, "completion_tokens": 17, "total_tokens": 829, "prompt_tokens_details": {"cached_tokens": 512, "audio_tokens": 0},\n' +
          '    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}},\n' +
          '  "service_tier": "default", "system_fingerprint": "fp_x", "x_provider_field": {"kept": true}\n}';
        fake.next(completion({ raw: answer }));
        const response = await post(pro.key, simple());
        expect(response.status).toBe(200);
        expect(response.text).toBe(answer);
        expect(response.headers.get("content-type")).toMatch(/^application\/json/);
        // The provider's own headers stay behind.
        expect(response.headers.get("openai-processing-ms")).toBeNull();

        fake.next(completion({ raw: answer }));
        const data = await client(pro.key).chat.completions.create(simple());
        expect(data.usage).toEqual(JSON.parse(answer).usage);
        expect(data.choices[0]!.message.tool_calls).toEqual(JSON.parse(answer).choices[0].message.tool_calls);
      });

      it("sends the provider the JSON it checked: duplicate model and stream keys arrive once, as checked and metered", async () => {
        const tenant = await fresh();
        // JSON.parse keeps the last of duplicate keys; a provider keeping the first would read o3
        // (not on the pro plan) and a stream.
        const text = '{"model":"o3","messages":[{"role":"user","content":"Hi"}],"model":"gpt-4o-mini","stream":true,"stream":false}';
        const before = fake.requests.length;
        fake.next(completion({ text: "ok", usage: usageOf(7, 2) }));
        const response = await post(tenant.key, text);
        expect(response.status, response.text).toBe(200);
        const [upstream] = since(before) as [FakeRequest];
        expect(since(before)).toHaveLength(1);
        // Exactly one of each key: the raw bytes equal their own parse serialised again.
        expect(upstream.body).toBe(reserialised(upstream.body));
        expect(upstream.body).toBe('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"stream":false}');
        expect(upstream.body.match(/"model":/g)).toHaveLength(1);
        expect(upstream.body.match(/"stream":/g)).toHaveLength(1);
        expect(upstream.headers.accept).toBe("application/json");
        expect(response.json.choices[0].message.content).toBe("ok");
        // The model the plan allowed is the one metered and logged.
        const id = response.headers.get("x-request-id")!;
        const logs = await eventually(
          async () => (await rest(server().api, tenant.key).get(`/request-logs?key_id=${tenant.keyId}&limit=20`)).body,
          (body) => body.data?.some((row: { request_id: string }) => row.request_id === id),
        );
        const row = logs.data.find((r: { request_id: string }) => r.request_id === id);
        expect(row).toMatchObject({ route: "/v1/chat/completions", status: 200, model: "gpt-4o-mini", input_tokens: 7, output_tokens: 2 });

        // The other way round, the last model is the one checked: o3 is refused before the provider.
        const refused = await post(tenant.key, '{"model":"gpt-4o-mini","model":"o3","messages":[{"role":"user","content":"Hi"}]}');
        expect(refused.status).toBe(400);
        expect(refused.json.error).toMatchObject({ code: "model_not_available", param: "model" });
        expect(since(before)).toHaveLength(1);
      });

      it("a stream asked for by the last of duplicate keys is sent once, with the usage Kontor adds", async () => {
        const tenant = await fresh();
        const text = '{"stream":false,"model":"gpt-4o-mini","messages":[{"role":"user","content":"Count."}],"stream":true}';
        const before = fake.requests.length;
        fake.next(stream({ deltas: ["a", "b"] }));
        const response = await post(tenant.key, text);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(response.text.trim().endsWith("data: [DONE]")).toBe(true);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.body).toBe(reserialised(upstream.body));
        expect(upstream.body).toBe(JSON.stringify({ ...JSON.parse(text), stream_options: { include_usage: true } }));
        expect(upstream.body.match(/"stream":/g)).toHaveLength(1);
        expect(upstream.json.stream).toBe(true);
        expect(upstream.headers.accept).toBe("text/event-stream");
      });

      it("refuses a model outside the plan with 400 model_not_available (param model), before the provider", async () => {
        const free = await server().tenant({ plan: "free" });
        const before = fake.requests.length;
        for (const model of ["gpt-4.1-mini", "gpt-4.1", "o3", "gpt-5-unknown"]) {
          const thrown = await client(free.key)
            .chat.completions.create(simple(model))
            .catch((e: unknown) => e);
          expect(thrown, model).toBeInstanceOf(OpenAI.BadRequestError);
          expect(thrown, model).toMatchObject({ status: 400, code: "model_not_available", param: "model", type: "invalid_request_error" });
        }
        const refused = await post(free.key, { ...simple("o3"), stream: true });
        expect(refused.status).toBe(400);
        expect(refused.json.error).toMatchObject({ code: "model_not_available", param: "model" });
        expect(refused.json.error.message).toContain("o3");
        // No model at all: the same parameter, named.
        const missing = await post(free.key, { messages: simple().messages });
        expect(missing.status).toBe(400);
        expect(missing.json.error).toMatchObject({ code: "validation_failed", param: "model" });
        expect(since(before)).toHaveLength(0);
      });

      it("needs the ai.coding scope: 403 insufficient_scope otherwise, before the provider", async () => {
        const before = fake.requests.length;
        for (const scopes of [["leads.read"], ["ai.responses"], []]) {
          const tenant = await server().tenant({ plan: "max", scopes });
          const response = await post(tenant.key, simple());
          expect(response.status, scopes.join()).toBe(403);
          expect(response.json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "ai.coding" });
          const thrown = await client(tenant.key)
            .chat.completions.create({ ...simple(), stream: true })
            .catch((e: unknown) => e);
          expect(thrown).toBeInstanceOf(OpenAI.PermissionDeniedError);
        }
        const coding = await server().tenant({ plan: "free", scopes: ["ai.coding"] });
        fake.next(completion({ text: "scoped" }));
        expect((await client(coding.key).chat.completions.create(simple())).choices[0]!.message.content).toBe("scoped");
        expect(since(before)).toHaveLength(1);

        const anonymous = await post("", simple());
        expect(anonymous.status).toBe(401);
      });

      it("refuses what is not a JSON object, and other methods", async () => {
        const before = fake.requests.length;
        const notJson = await raw(chatUrl(), { method: "POST", headers: { authorization: `Bearer ${pro.key}`, "content-type": "text/plain" }, body: "hello" });
        expect(notJson.status).toBe(415);
        const broken = await post(pro.key, '{"model": "gpt-4o-mini",');
        expect(broken.status).toBe(400);
        expect(broken.json.error.code).toBe("invalid_json");
        const array = await post(pro.key, "[]");
        expect(array.status).toBe(400);
        const get = await raw(chatUrl(), { headers: { authorization: `Bearer ${pro.key}` } });
        expect(get.status).toBe(405);
        expect(get.headers.get("allow")).toBe("POST");
        expect(since(before)).toHaveLength(0);
      });
    });

    describe("streams", () => {
      const streamBody = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: "Count." }], stream: true as const };

      it("passes events on as they come: the first delta arrives while the provider still holds the rest", async () => {
        const pro = await fresh();
        const hold = gate();
        const deltas = ["Hel", "lo, ", "wor", "ld", "!"];
        const usage = usageOf(21, 5);
        const before = fake.requests.length;
        fake.next(stream({ deltas, usage, holdAfter: 2, gate: hold.promise }));
        const body = { ...streamBody, stream_options: { include_usage: true } };
        const { data, response } = await client(pro.key).chat.completions.create(body).withResponse();
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);

        const chunks: ChatCompletionChunk[] = [];
        const iterator = data[Symbol.asyncIterator]();
        while (!chunks.some((chunk) => chunk.choices[0]?.delta?.content)) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended before its first delta");
          chunks.push(next.value);
        }
        // The first delta is here, and the provider has not sent (nor finished) the rest.
        expect(textOf(chunks)).toBe("Hel");
        expect(hold.opened).toBe(false);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.finished).toBe(false);

        hold.open();
        await collect({ [Symbol.asyncIterator]: () => iterator }, { into: chunks, onTimeout: () => data.controller.abort() });
        expect(textOf(chunks)).toBe(deltas.join(""));
        expect(chunks.every((chunk) => chunk.object === "chat.completion.chunk")).toBe(true);
        expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
        expect(chunks.at(-1)).toMatchObject({ choices: [], usage });
        // What the client sent, serialised again (it asked for usage itself: nothing added).
        expect(upstream.body).toBe(reserialised(sent.at(-1)!));
        expect(upstream.json).toEqual(body);
        expect(upstream.headers.authorization).toBe(`Bearer ${SECRET}`);
        await eventually(async () => upstream.finished, Boolean);
        expect(upstream.finished).toBe(true);
      });

      it("ends with the [DONE] line, each event as the provider wrote it", async () => {
        const pro = await fresh();
        fake.next(stream({ deltas: ["a", "b"] }));
        const response = await fetch(chatUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${pro.key}`, "content-type": "application/json" },
          body: JSON.stringify({ ...streamBody, stream_options: { include_usage: true } }),
          signal: AbortSignal.timeout(8_000),
        });
        expect(response.status).toBe(200);
        const text = await response.text();
        const events = text.split("\n\n").filter(Boolean);
        expect(events.at(-1)).toBe("data: [DONE]");
        expect(events.every((event) => event.startsWith("data: "))).toBe(true);
        const chunks = events.slice(0, -1).map((event) => JSON.parse(event.slice(6)));
        expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("")).toBe("ab");
        expect(chunks.at(-1)).toMatchObject({ choices: [], usage: usageOf(9, 3) });
      });

      it("gives the usage chunk to a client that asks for it, with the provider's numbers", async () => {
        const pro = await fresh();
        const before = fake.requests.length;
        const usage = { ...usageOf(120, 45), prompt_tokens_details: { cached_tokens: 64 } };
        fake.next(stream({ deltas: ["x", "y", "z"], usage, nullUsage: true }));
        const body = { ...streamBody, stream_options: { include_usage: true } };
        const created = await client(pro.key).chat.completions.create(body);
        const chunks = await collect(created, { onTimeout: () => created.controller.abort() });
        expect(textOf(chunks)).toBe("xyz");
        const last = chunks.at(-1)!;
        expect(last.choices).toEqual([]);
        expect(last.usage).toEqual(usage);
        // The chunks before it carry OpenAI's `usage: null`, as sent.
        expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.body).toBe(reserialised(sent.at(-1)!));
      });

      it("keeps the usage chunk from a client that said include_usage: false, yet asks the provider for it", async () => {
        const pro = await fresh();
        const before = fake.requests.length;
        fake.next(stream({ deltas: ["no", " usage"], nullUsage: true }));
        const body = { ...streamBody, stream_options: { include_usage: false } };
        const created = await client(pro.key).chat.completions.create(body);
        const chunks = await collect(created, { onTimeout: () => created.controller.abort() });
        expect(textOf(chunks)).toBe("no usage");
        expect(chunks.every((chunk) => chunk.choices.length === 1)).toBe(true);
        expect(chunks.some((chunk) => chunk.usage)).toBe(false);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json).toEqual({ ...body, stream_options: { include_usage: true } });
      });

      it("reassembles events a read splits, at a provider's real pace", async () => {
        const pro = await fresh();
        const deltas = ["split ", "across ", "reads"];
        fake.next(stream({ deltas, splitEvents: true, gapMs: 15 }));
        const created = await client(pro.key).chat.completions.create({ ...streamBody, stream_options: { include_usage: true } });
        const chunks = await collect(created, { onTimeout: () => created.controller.abort() });
        expect(textOf(chunks)).toBe(deltas.join(""));
        expect(chunks.at(-1)!.usage).toEqual(usageOf(9, 3));
      });

      it("gives a client that did not ask for usage no usage chunk, though the provider was asked (events at a real pace)", async () => {
        const pro = await fresh();
        const deltas = ["one ", "event ", "per ", "read"];
        const before = fake.requests.length;
        fake.next(stream({ deltas, gapMs: 15 }));
        const created = await client(pro.key).chat.completions.create(streamBody);
        const chunks = await collect(created, { onTimeout: () => created.controller.abort() });
        expect(textOf(chunks)).toBe(deltas.join(""));
        expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
        expect(chunks.every((chunk) => chunk.choices.length === 1 && !chunk.usage)).toBe(true);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json).toEqual({ ...streamBody, stream_options: { include_usage: true } });
      });

      it("aborts the provider's stream when the client goes away", async () => {
        const pro = await fresh();
        const hold = gate();
        const before = fake.requests.length;
        fake.next(stream({ deltas: ["first", "never", "sent"], holdAfter: 2, gate: hold.promise }));
        const abort = new AbortController();
        const created = await client(pro.key).chat.completions.create(streamBody, { signal: abort.signal });
        const iterator = created[Symbol.asyncIterator]();
        let first = "";
        while (!first) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended early");
          first = next.value.choices[0]?.delta?.content ?? "";
        }
        expect(first).toBe("first");
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.aborted).toBe(false);
        abort.abort();
        // The client stops there (the official client ends an aborted stream quietly).
        await collect({ [Symbol.asyncIterator]: () => iterator }).catch(() => []);
        const seen = await eventually(async () => upstream.aborted, Boolean, 5_000);
        hold.open();
        expect(seen, "the provider saw the request aborted").toBe(true);
        expect(upstream.finished).toBe(false);
      });

      it("aborts the provider's request when the client leaves before a (non-streamed) answer is complete", async () => {
        const pro = await fresh();
        const before = fake.requests.length;
        fake.next(headThenHang({ partial: '{"id": "chatcmpl-slow", "choices": [' }));
        const abort = new AbortController();
        const pending = fetch(chatUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${pro.key}`, "content-type": "application/json" },
          body: JSON.stringify(simple()),
          signal: abort.signal,
        });
        const upstream = await fake.request(before);
        abort.abort();
        await expect(pending).rejects.toThrow();
        // The provider's head has arrived, so its time-out no longer applies: only the client's leaving can end it.
        const seen = await eventually(async () => upstream.aborted, Boolean, 5_000);
        expect(seen, "the provider saw the request aborted").toBe(true);
      });
    });

    describe("when the provider fails", () => {
      it("a provider error is 502 upstream_error with its short message, not its key", async () => {
        const pro = await fresh();
        fake.next(upstreamError(500, "The server had an error while processing your request.", { type: "server_error" }));
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expect(response.json.error.message).toContain("The server had an error while processing your request.");
        expectNoSecret(response);

        fake.next(upstreamError(400, "Invalid value for 'temperature'.", { param: "temperature", code: "invalid_value" }));
        const refused = await post(pro.key, { ...simple(), temperature: 9 });
        expect(refused.status).toBe(502);
        expect(refused.json.error.code).toBe("upstream_error");
        expect(refused.json.error.message).toContain("Invalid value for 'temperature'.");

        fake.next(upstreamError(500, "boom"));
        const thrown = await client(pro.key)
          .chat.completions.create(simple())
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 502, code: "upstream_error" });
      });

      it("a provider error naming the key does not pass the key on", async () => {
        const pro = await fresh();
        fake.next(upstreamError(401, `Incorrect API key provided: ${SECRET}. You can find your API key at https://platform.openai.com/account/api-keys.`, { code: "invalid_api_key" }));
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        fake.next(upstreamError(429, `Rate limit reached for key ${SECRET}`));
        const limited = await post(pro.key, simple());
        expect(limited.status).toBe(502);
        expectNoSecret(limited);

        fake.next(garbage(`<html>proxy error for Authorization: Bearer ${SECRET}</html>`, { status: 503 }));
        const proxy = await post(pro.key, { ...simple(), stream: true });
        expect(proxy.status).toBe(502);
        expectNoSecret(proxy);
      });

      it("an answer that is not JSON is 502 upstream_error", async () => {
        const pro = await fresh();
        fake.next(garbage("<html><body>Bad gateway</body></html>"));
        const html = await post(pro.key, simple());
        expect(html.status).toBe(502);
        expect(html.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(html);

        fake.next(garbage('{"id": "chatcmpl-truncated", "choi', { contentType: "application/json" }));
        const truncated = await post(pro.key, simple());
        expect(truncated.status).toBe(502);
        expect(truncated.json.error.code).toBe("upstream_error");
      });

      it("a provider that cuts the connection mid-answer is 502 upstream_error", async () => {
        const pro = await fresh();
        fake.next(headThenDrop());
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(response);
      });

      it("a stream the provider cuts off does not end cleanly for the client", async () => {
        const pro = await fresh();
        fake.next(stream({ deltas: ["cut", " off", " here"], dropAfter: 3 }));
        const created = await client(pro.key).chat.completions.create({ model: "gpt-4o-mini", messages: simple().messages, stream: true });
        const chunks: ChatCompletionChunk[] = [];
        const outcome = await collect(created, { into: chunks, onTimeout: () => created.controller.abort() }).then(
          () => "ended",
          (e: unknown) => String(e),
        );
        // The deltas before the cut arrived; then the client learns the stream broke (no finish_reason, no [DONE]).
        expect(textOf(chunks)).toBe("cut off");
        expect(outcome).not.toBe("ended");
        expect(outcome).not.toContain("did not end within");
      });

      it("no head within AI_UPSTREAM_TIMEOUT_MS is 504 upstream_timeout, and the provider's request is dropped", async () => {
        const pro = await fresh();
        const before = fake.requests.length;
        fake.next(hang());
        const started = Date.now();
        const response = await post(pro.key, simple());
        const elapsed = Date.now() - started;
        expect(response.status).toBe(504);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
        expect(elapsed).toBeGreaterThanOrEqual(1_400);
        expect(elapsed).toBeLessThan(8_000);
        expectNoSecret(response);
        const [upstream] = since(before) as [FakeRequest];
        expect(await eventually(async () => upstream.aborted, Boolean, 5_000)).toBe(true);

        fake.next(hang());
        const thrown = await client(pro.key)
          .chat.completions.create({ ...simple(), stream: true })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 504, code: "upstream_timeout" });
      });
    });

    describe("without a reachable provider", () => {
      let bare: TestServer;
      let refused: TestServer;
      beforeAll(async () => {
        const port = await freePort();
        [bare, refused] = await Promise.all([
          startTestServer(server().stack),
          startTestServer(server().stack, { AI_UPSTREAM_URL: `http://127.0.0.1:${port}/v1`, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" }),
        ]);
      });
      afterAll(async () => {
        await Promise.all([bare?.close(), refused?.close()]);
      });

      it("no AI_UPSTREAM_URL: 503 ai_unavailable with Retry-After; the catalog is still listed", async () => {
        const tenant = await bare.tenant({ plan: "pro" });
        const response = await post(tenant.key, simple(), `${bare.api}/chat/completions`);
        expect(response.status).toBe(503);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "ai_unavailable" });
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        const thrown = await client(tenant.key, bare.api)
          .chat.completions.create({ ...simple(), stream: true })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 503, code: "ai_unavailable" });
        // The scope and the plan are still checked first.
        const narrow = await bare.tenant({ plan: "pro", scopes: ["leads.read"] });
        expect((await post(narrow.key, simple(), `${bare.api}/chat/completions`)).status).toBe(403);
        expect((await post(tenant.key, simple("o3"), `${bare.api}/chat/completions`)).status).toBe(400);
        expect((await client(tenant.key, bare.api).models.list()).data.map((m) => m.id)).toEqual(CATALOG.pro);
      });

      it("a refused connection is 502 upstream_error, without the key", async () => {
        const tenant = await refused.tenant({ plan: "pro" });
        const response = await post(tenant.key, simple(), `${refused.api}/chat/completions`);
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(response);
        const streamed = await post(tenant.key, { ...simple(), stream: true }, `${refused.api}/chat/completions`);
        expect(streamed.status).toBe(502);
        expectNoSecret(streamed);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
