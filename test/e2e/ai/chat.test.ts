import OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  completion,
  completionBody,
  type FakeRequest,
  startFakeOpenAI,
  stream,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { CATALOG, chatApi, PNG, reserialised, CHAT_SECRET as SECRET } from "./support.ts";

/**
 * The AI routes against an OpenAI-compatible fake provider on loopback, through the official
 * `openai` client: the model catalog by plan, and chat completions passed through (the checked JSON
 * serialised again upstream, answers untouched), with the scope and the plan they need. Streams are
 * in chat-streams.test.ts; the provider's failures, without its key ever showing, in
 * chat-failures.test.ts.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

e2e(
  "AI chat completions: models and requests",
  (server) => {
    const { sent, client, chatUrl, post, since, simple, fresh } = chatApi(server, fake);

    let pro: Tenant;
    beforeAll(async () => {
      pro = await server().tenant({ plan: "pro" });
    });

    describe("models", () => {
      it("GET /v1/models lists exactly the plan's models, in OpenAI's shape", async () => {
        for (const plan of ["free", "plus", "pro", "max"] as const) {
          const tenant = await server().tenant({ plan });
          const listed = await raw(`${server().api}/models`, {
            headers: { authorization: `Bearer ${tenant.key}` },
          });
          expect(listed.status, plan).toBe(200);
          expect(listed.json.object).toBe("list");
          expect(
            listed.json.data.map((m: { id: string }) => m.id),
            plan,
          ).toEqual(CATALOG[plan]);
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
          const refused = await raw(`${server().api}/models/${id}`, {
            headers: { authorization: `Bearer ${free.key}` },
          });
          expect(refused.status, id).toBe(400);
          expect(refused.json.error).toMatchObject({
            type: "invalid_request_error",
            code: "model_not_available",
            param: "model",
          });
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
        const wrong = await raw(`${server().api}/models`, {
          headers: { authorization: "Bearer ktr_live_not_a_key" },
        });
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
            { role: "system", content: 'You answer in JSON. Ünïcødé ✓ \u2028 "quoted" \\ back' },
            {
              role: "user",
              content: [
                { type: "text", text: "What is in this image, and what is the weather in Oslo?" },
                { type: "image_url", image_url: { url: PNG, detail: "low" } },
              ],
            },
            {
              role: "assistant",
              content: null,
              tool_calls: [
                {
                  id: "call_1",
                  type: "function",
                  function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
                },
              ],
            },
            { role: "tool", tool_call_id: "call_1", content: '{"temp_c": -3.5}' },
          ],
          tools: [
            {
              type: "function",
              function: {
                name: "get_weather",
                description: "The weather in a city.",
                parameters: {
                  type: "object",
                  properties: { city: { type: "string" } },
                  required: ["city"],
                  additionalProperties: false,
                },
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
              schema: {
                type: "object",
                properties: { image: { type: "string" }, temp_c: { type: "number" } },
                required: ["image", "temp_c"],
                additionalProperties: false,
              },
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
        const data = await client(pro.key).chat.completions.create(
          body as unknown as ChatCompletionCreateParamsNonStreaming,
        );
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
        const text =
          '{ "messages" : [ {"content":"caf\\u00e9 \\ud83d\\ude00","role":"user"} ],\n  "model":"gpt-4o-mini", "temperature": 1.50, "stop": ["\\n\\n"], "n": 1 }';
        const before = fake.requests.length;
        fake.next(completion({ text: "ok" }));
        const response = await post(pro.key, text);
        expect(response.status).toBe(200);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.body).toBe(reserialised(text));
        expect(upstream.body).toBe(
          '{"messages":[{"content":"café 😀","role":"user"}],"model":"gpt-4o-mini","temperature":1.5,"stop":["\\n\\n"],"n":1}',
        );
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
        const text =
          '{"model":"o3","messages":[{"role":"user","content":"Hi"}],"model":"gpt-4o-mini","stream":true,"stream":false}';
        const before = fake.requests.length;
        fake.next(completion({ text: "ok", usage: usageOf(7, 2) }));
        const response = await post(tenant.key, text);
        expect(response.status, response.text).toBe(200);
        const [upstream] = since(before) as [FakeRequest];
        expect(since(before)).toHaveLength(1);
        // Exactly one of each key: the raw bytes equal their own parse serialised again.
        expect(upstream.body).toBe(reserialised(upstream.body));
        expect(upstream.body).toBe(
          '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}],"stream":false}',
        );
        expect(upstream.body.match(/"model":/g)).toHaveLength(1);
        expect(upstream.body.match(/"stream":/g)).toHaveLength(1);
        expect(upstream.headers.accept).toBe("application/json");
        expect(response.json.choices[0].message.content).toBe("ok");
        // The model the plan allowed is the one metered and logged.
        const id = response.headers.get("x-request-id")!;
        const logs = await eventually(
          async () =>
            (await rest(server().api, tenant.key).get(`/request-logs?key_id=${tenant.keyId}&limit=20`)).body,
          (body) => body.data?.some((row: { request_id: string }) => row.request_id === id),
        );
        const row = logs.data.find((r: { request_id: string }) => r.request_id === id);
        expect(row).toMatchObject({
          route: "/v1/chat/completions",
          status: 200,
          model: "gpt-4o-mini",
          input_tokens: 7,
          output_tokens: 2,
        });

        // The other way round, the last model is the one checked: o3 is refused before the provider.
        const refused = await post(
          tenant.key,
          '{"model":"gpt-4o-mini","model":"o3","messages":[{"role":"user","content":"Hi"}]}',
        );
        expect(refused.status).toBe(400);
        expect(refused.json.error).toMatchObject({ code: "model_not_available", param: "model" });
        expect(since(before)).toHaveLength(1);
      });

      it("a stream asked for by the last of duplicate keys is sent once, with the usage Kontor adds", async () => {
        const tenant = await fresh();
        const text =
          '{"stream":false,"model":"gpt-4o-mini","messages":[{"role":"user","content":"Count."}],"stream":true}';
        const before = fake.requests.length;
        fake.next(stream({ deltas: ["a", "b"] }));
        const response = await post(tenant.key, text);
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(response.text.trim().endsWith("data: [DONE]")).toBe(true);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.body).toBe(reserialised(upstream.body));
        expect(upstream.body).toBe(
          JSON.stringify({ ...JSON.parse(text), stream_options: { include_usage: true } }),
        );
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
          expect(thrown, model).toMatchObject({
            status: 400,
            code: "model_not_available",
            param: "model",
            type: "invalid_request_error",
          });
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
          expect(response.json.error).toMatchObject({
            type: "permission_error",
            code: "insufficient_scope",
            required_scope: "ai.coding",
          });
          const thrown = await client(tenant.key)
            .chat.completions.create({ ...simple(), stream: true })
            .catch((e: unknown) => e);
          expect(thrown).toBeInstanceOf(OpenAI.PermissionDeniedError);
        }
        const coding = await server().tenant({ plan: "free", scopes: ["ai.coding"] });
        fake.next(completion({ text: "scoped" }));
        expect((await client(coding.key).chat.completions.create(simple())).choices[0]!.message.content).toBe(
          "scoped",
        );
        expect(since(before)).toHaveLength(1);

        const anonymous = await post("", simple());
        expect(anonymous.status).toBe(401);
      });

      it("refuses what is not a JSON object, and other methods", async () => {
        const before = fake.requests.length;
        const notJson = await raw(chatUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${pro.key}`, "content-type": "text/plain" },
          body: "hello",
        });
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
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
