import OpenAI from "openai";
import type { Response as OpenAIResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import {
  completion,
  type FakeRequest,
  gate,
  stream,
  error as upstreamError,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import {
  collectEvents as collect,
  DEFAULT_TEXT,
  PNG,
  parseSse,
  responsesApi,
  RESPONSES_SECRET as SECRET,
  scriptedFake,
  textRound,
  toolRound,
  usageOfResponse,
} from "./support.ts";

/**
 * POST /v1/responses end to end, against the OpenAI-compatible fake provider on loopback and
 * through the official `openai` client: the request forms and their validation, the Responses
 * event stream (paced by the fake's gate), and the request log's model and tokens.
 */

const { fake, play } = await scriptedFake();

/** The event types of a plain streamed answer with `deltas` text deltas. */
const streamedTypes = (deltas: number, end = "response.completed") => [
  "response.created",
  "response.in_progress",
  "response.output_item.added",
  "response.content_part.added",
  ...Array.from({ length: deltas }, () => "response.output_text.delta"),
  "response.output_text.done",
  "response.content_part.done",
  "response.output_item.done",
  end,
];

e2e(
  "AI responses: requests",
  (server) => {
    const { client, responsesUrl, post, tenant, since, useSeeded } = responsesApi(server, fake);
    const seeded = useSeeded();

    describe("request forms", () => {
      it("takes the plain prompt: one user message, no system message", async () => {
        const before = fake.requests.length;
        const response = await post(seeded.owner.key, {
          model: "gpt-4o-mini",
          prompt: "How many leads do I have?",
        });
        expect(response.status).toBe(200);
        expect(response.json).toMatchObject({ object: "response", status: "completed", instructions: null });
        expect(response.json.output[0].content[0].text).toBe(DEFAULT_TEXT);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json.messages).toEqual([{ role: "user", content: "How many leads do I have?" }]);
      });

      it("takes input as a string; instructions become the only system message", async () => {
        const before = fake.requests.length;
        const instructions = "Answer in French, in one sentence.";
        const answer = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Hello?",
          instructions,
        });
        expect(answer.output_text).toBe(DEFAULT_TEXT);
        expect(answer.instructions).toBe(instructions);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json.messages).toEqual([
          { role: "system", content: instructions },
          { role: "user", content: "Hello?" },
        ]);

        // Without instructions the provider sees no system message at all: Kontor adds none.
        const next = fake.requests.length;
        await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Hello again?" });
        const [plain] = since(next) as [FakeRequest];
        expect(plain.json.messages).toEqual([{ role: "user", content: "Hello again?" }]);
        expect(plain.json.messages.filter((m: { role: string }) => m.role === "system")).toEqual([]);
      });

      it("takes input as message items (text parts, an assistant turn) with instructions first", async () => {
        const before = fake.requests.length;
        const instructions = "You are the workspace's assistant.";
        const answer = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          instructions,
          input: [
            { role: "user", content: "My name is Ada." },
            { role: "assistant", content: "Hello Ada." },
            {
              type: "message",
              role: "user",
              content: [
                { type: "input_text", text: "What is my name?" },
                { type: "input_image", image_url: PNG, detail: "low" },
                { type: "input_text", text: "Be brief." },
              ],
            },
          ],
          temperature: 0.2,
          max_output_tokens: 64,
          tool_choice: { type: "function", name: "leads" },
        });
        expect(answer.status).toBe("completed");
        expect(answer.output_text).toBe(DEFAULT_TEXT);
        expect(answer.temperature).toBe(0.2);
        expect(answer.max_output_tokens).toBe(64);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json.messages).toEqual([
          { role: "system", content: instructions },
          { role: "user", content: "My name is Ada." },
          { role: "assistant", content: "Hello Ada." },
          {
            role: "user",
            content: [
              { type: "text", text: "What is my name?" },
              { type: "image_url", image_url: { url: PNG, detail: "low" } },
              { type: "text", text: "Be brief." },
            ],
          },
        ]);
        expect(upstream.json.messages.filter((m: { role: string }) => m.role === "system")).toHaveLength(1);
        expect(upstream.json).toMatchObject({
          temperature: 0.2,
          max_completion_tokens: 64,
          tool_choice: { type: "function", function: { name: "leads" } },
        });
      });

      it("refuses a bad body with 400 validation_failed naming the parameter, and nothing reaches the provider", async () => {
        const key = seeded.owner.key;
        const before = fake.requests.length;
        const cases: [unknown, string][] = [
          [{ model: "gpt-4o-mini" }, "input"],
          [{ model: "gpt-4o-mini", input: "a", prompt: "b" }, "prompt"],
          [
            {
              model: "gpt-4o-mini",
              input: "a",
              tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }],
            },
            "tools",
          ],
          [{ model: "gpt-4o-mini", prompt: { id: "pmpt_123" } }, "prompt"],
          [{ model: "gpt-4o-mini", input: [] }, "input"],
          [
            { model: "gpt-4o-mini", input: [{ type: "function_call_output", call_id: "c", output: "x" }] },
            "input[0].type",
          ],
          [{ model: "gpt-4o-mini", input: "a", previous_response_id: "resp_x" }, "previous_response_id"],
          [{ model: "gpt-4o-mini", input: "a", temperature: 5 }, "temperature"],
          [{ input: "a" }, "model"],
        ];
        for (const [body, param] of cases) {
          const response = await post(key, body);
          expect(response.status, JSON.stringify(body)).toBe(400);
          expect(response.json.error, JSON.stringify(body)).toMatchObject({
            type: "invalid_request_error",
            code: "validation_failed",
            param,
          });
          expect(response.json.error.request_id).toBe(response.headers.get("x-request-id"));
        }
        // The official client gets the same 400, as an error it understands.
        const thrown = await client(key)
          .responses.create({
            model: "gpt-4o-mini",
            input: "a",
            tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: false }],
          })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.BadRequestError);
        expect(thrown).toMatchObject({ status: 400, code: "validation_failed", param: "tools" });
        const streamed = await client(key)
          .responses.create({ model: "gpt-4o-mini", stream: true } as never)
          .catch((e: unknown) => e);
        expect(streamed).toMatchObject({ status: 400, param: "input" });
        expect(since(before)).toHaveLength(0);

        const notJson = await post(key, "{ not json");
        expect(notJson.status).toBe(400);
        expect(notJson.json.error.code).toBe("invalid_json");
        expect(since(before)).toHaveLength(0);
      });
    });

    describe("streaming", () => {
      it("sends the Responses events in order, the first delta before the provider releases the rest", async () => {
        const tenantKey = seeded.owner.key;
        const hold = gate();
        const before = fake.requests.length;
        play(
          stream({
            deltas: ["Hello", ", ", "world!"],
            usage: usageOf(21, 7),
            holdAfter: 2,
            gate: hold.promise,
          }),
        );
        const response = await fetch(responsesUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${tenantKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", input: "Greet me.", stream: true }),
          signal: AbortSignal.timeout(10_000),
        });
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(response.headers.get("x-ratelimit-limit")).toBe(
          String(PLAN_LIMITS.max.ai_requests_per_minute),
        );
        const reader = response.body!.getReader();
        const decoder = new TextDecoder();
        let text = "";
        while (!text.includes('"type":"response.output_text.delta"')) {
          const { done, value } = await reader.read();
          if (done) throw new Error(`the stream ended before its first delta: ${text}`);
          text += decoder.decode(value, { stream: true });
        }
        // The first delta is here while the provider still holds the rest.
        expect(hold.opened).toBe(false);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.finished).toBe(false);
        const early = parseSse(text.slice(0, text.lastIndexOf("\n\n") + 2));
        expect(early.map((e) => e.data.type)).toEqual(streamedTypes(1).slice(0, 5));
        expect(early.at(-1)!.data.delta).toBe("Hello");
        expect(text).not.toContain("world");
        hold.open();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        const events = parseSse(text);
        expect(events.map((e) => e.data.type)).toEqual(streamedTypes(3));
        for (const event of events) expect(event.event).toBe(event.data.type);
        expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
        expect(
          events.filter((e) => e.data.type === "response.output_text.delta").map((e) => e.data.delta),
        ).toEqual(["Hello", ", ", "world!"]);
        const created = events[0]!.data.response;
        const completed = events.at(-1)!.data.response;
        expect(created).toMatchObject({ object: "response", status: "in_progress", output: [] });
        expect(completed).toMatchObject({
          id: created.id,
          object: "response",
          status: "completed",
          model: "gpt-4o-mini",
        });
        expect(completed.output).toEqual([
          {
            type: "message",
            id: expect.stringMatching(/^msg_/),
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text: "Hello, world!", annotations: [], logprobs: [] }],
          },
        ]);
        expect(completed.usage).toEqual(usageOfResponse(21, 7));
        expect(events.find((e) => e.data.type === "response.output_text.done")!.data.text).toBe(
          "Hello, world!",
        );
        for (const event of events.slice(2, -1))
          expect(event.data.item_id ?? event.data.item.id).toBe(completed.output[0].id);
        // The provider was asked to stream, with its usage.
        expect(upstream.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });

        // The same stream passes the OpenAPI check.
        play(stream({ deltas: ["a", "b"] }));
        const checked = await post(tenantKey, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(checked.status).toBe(200);
        expect(parseSse(checked.text).map((e) => e.data.type)).toEqual(streamedTypes(2));
      });

      it("the official client's stream gives the events and the first delta while the provider holds the rest", async () => {
        const hold = gate();
        play(
          stream({
            deltas: ["One", " two", " three"],
            usage: usageOf(5, 3),
            holdAfter: 2,
            gate: hold.promise,
          }),
        );
        const created = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Count.",
          stream: true,
        });
        const iterator = created[Symbol.asyncIterator]();
        const seen: ResponseStreamEvent[] = [];
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended early");
          seen.push(next.value);
          if (next.value.type === "response.output_text.delta") break;
        }
        expect(hold.opened).toBe(false);
        expect((seen.at(-1) as { delta: string }).delta).toBe("One");
        hold.open();
        const remaining = await collect({ [Symbol.asyncIterator]: () => iterator }, () =>
          created.controller.abort(),
        );
        const all = [...seen, ...remaining];
        expect(all.map((e) => e.type)).toEqual(streamedTypes(3));
        const done = all.at(-1) as { type: "response.completed"; response: OpenAIResponse };
        expect(done.response.status).toBe("completed");
        expect(done.response.usage).toEqual(usageOfResponse(5, 3));

        // And the stream helper assembles the same answer.
        play(stream({ deltas: ["One", " two", " three"], usage: usageOf(5, 3) }));
        const runner = client(seeded.owner.key).responses.stream({ model: "gpt-4o-mini", input: "Count." });
        let snapshot = "";
        runner.on("response.output_text.delta", (event) => void (snapshot = event.snapshot));
        const final = await runner.finalResponse();
        expect(final.output_text).toBe("One two three");
        expect(snapshot).toBe("One two three");
      });
    });

    describe("request logs", () => {
      it("AI rows carry the model and the tokens the provider reported (summed over rounds, streams once ended); other rows have none", async () => {
        const owner = await tenant("pro");
        const openai = client(owner.key);

        // /v1/chat/completions
        play(completion({ text: "chat", usage: usageOf(11, 5) }));
        const chat = await openai.chat.completions
          .create({ model: "gpt-4.1", messages: [{ role: "user", content: "Hi" }] })
          .withResponse();
        // /v1/responses with two rounds
        play(
          toolRound([{ id: "call_l", name: "leads", args: {} }], usageOf(100, 20)),
          textRound("No leads.", usageOf(250, 30)),
        );
        const loop = await openai.responses.create({ model: "gpt-4o-mini", input: "Leads?" }).withResponse();
        expect(loop.data.usage).toEqual(usageOfResponse(350, 50));

        // /v1/responses streamed, two rounds; held open after its first delta.
        const hold = gate();
        play(
          toolRound([{ id: "call_w", name: "workspace", args: {} }], usageOf(60, 10)),
          stream({
            deltas: ["Streamed", " answer"],
            usage: usageOf(70, 8),
            holdAfter: 2,
            gate: hold.promise,
          }),
        );
        const { data: streamed, response: streamHead } = await openai.responses
          .create({ model: "gpt-4.1-mini", input: "Stream it.", stream: true })
          .withResponse();
        const iterator = streamed[Symbol.asyncIterator]();
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended early");
          if (next.value.type === "response.output_text.delta") break;
        }
        const streamId = streamHead.headers.get("x-request-id")!;
        // While the stream runs, its row is not written: its tokens are not known yet.
        await flushRequestLogs(server().running.db);
        expect(
          await server().running.db.prisma.requestLog.findUnique({ where: { id: streamId } }),
        ).toBeNull();
        hold.open();
        const remaining = await collect({ [Symbol.asyncIterator]: () => iterator }, () =>
          streamed.controller.abort(),
        );
        expect(remaining.at(-1)!.type).toBe("response.completed");

        // A failing provider: the row is still written, without tokens.
        play(upstreamError(500, "boom", { type: "server_error" }));
        const failed = await post(owner.key, { model: "gpt-4o-mini", input: "fail" });
        expect(failed.status).toBe(502);

        const leads = await rest(server().api, owner.key).get("/leads");
        expect(leads.status).toBe(200);

        const ids = {
          chat: chat.response.headers.get("x-request-id")!,
          loop: loop.response.headers.get("x-request-id")!,
          stream: streamId,
          failed: failed.headers.get("x-request-id")!,
          leads: leads.headers.get("x-request-id")!,
        };
        const logs = rest(server().api, owner.key);
        const page = await eventually(
          async () => (await logs.get(`/request-logs?key_id=${owner.keyId}&limit=100`)).body,
          (body) =>
            Object.values(ids).every((id) =>
              body.data?.some((row: { request_id: string }) => row.request_id === id),
            ),
        );
        const row = (id: string) => page.data.find((r: { request_id: string }) => r.request_id === id);
        expect(row(ids.chat)).toMatchObject({
          method: "POST",
          route: "/v1/chat/completions",
          status: 200,
          model: "gpt-4.1",
          input_tokens: 11,
          output_tokens: 5,
        });
        expect(row(ids.loop)).toMatchObject({
          method: "POST",
          route: "/v1/responses",
          status: 200,
          model: "gpt-4o-mini",
          input_tokens: 350,
          output_tokens: 50,
        });
        expect(row(ids.stream)).toMatchObject({
          method: "POST",
          route: "/v1/responses",
          status: 200,
          model: "gpt-4.1-mini",
          input_tokens: 130,
          output_tokens: 18,
        });
        expect(row(ids.failed)).toMatchObject({
          route: "/v1/responses",
          status: 502,
          error_code: "upstream_error",
          input_tokens: null,
          output_tokens: null,
        });
        expect(row(ids.leads)).toMatchObject({
          method: "GET",
          route: "/v1/leads",
          status: 200,
          model: null,
          input_tokens: null,
          output_tokens: null,
        });
        for (const id of Object.values(ids)) expect(row(id).key_id).toBe(owner.keyId);
      });
      it("requests answered before the AI layer runs (an idempotent replay, a 429) are logged under their route template", async () => {
        const free = await tenant("free", ["ai.responses", "logs.read"]);
        const before = fake.requests.length;
        const idem = `responses-${Date.now()}-${Math.random()}`;
        const once = () =>
          raw(responsesUrl(), {
            method: "POST",
            headers: {
              authorization: `Bearer ${free.key}`,
              "content-type": "application/json",
              "idempotency-key": idem,
            },
            body: JSON.stringify({ model: "gpt-4o-mini", input: "x" }),
          });
        expect((await once()).status).toBe(200);
        const replayed = await once();
        expect(replayed.headers.get("idempotent-replay")).toBe("true");
        expect(since(before)).toHaveLength(1);
        // 18 refused bodies (no model: nothing reaches the provider) spend the rest of the AI column; the 21st is 429.
        for (let i = 0; i < 18; i++) expect((await post(free.key, { input: "x" })).status).toBe(400);
        const limited = await post(free.key, { model: "gpt-4o-mini", input: "x" });
        expect(limited.status).toBe(429);
        expect(since(before)).toHaveLength(1);

        const wanted = [replayed.headers.get("x-request-id")!, limited.headers.get("x-request-id")!];
        const page = await eventually(
          async () =>
            (await rest(server().api, free.key).get(`/request-logs?key_id=${free.keyId}&limit=100`)).body,
          (body) =>
            wanted.every((id) => body.data?.some((row: { request_id: string }) => row.request_id === id)),
        );
        for (const id of wanted) {
          const row = page.data.find((r: { request_id: string }) => r.request_id === id);
          expect
            .soft(row.route, `the logged route of a ${row.status} on /v1/responses`)
            .toBe("/v1/responses");
        }
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
