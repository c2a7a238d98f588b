import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterAll, describe, expect, it } from "vitest";
import {
  type FakeRequest,
  gate,
  headThenHang,
  startFakeOpenAI,
  stream,
  usageOf,
} from "../../support/fake-openai.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import { chatApi, collectChunks as collect, reserialised, CHAT_SECRET as SECRET, textOf } from "./support.ts";

/**
 * Streamed chat completions against the OpenAI-compatible fake provider, through the official
 * `openai` client: events passed on one by one as the provider writes them (paced by the fake's
 * gate), the usage chunk, and client aborts reaching the provider.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

e2e(
  "AI chat completions: streams",
  (server) => {
    const { sent, client, chatUrl, simple, since, fresh } = chatApi(server, fake);

    describe("streams", () => {
      const streamBody = {
        model: "gpt-4o-mini",
        messages: [{ role: "user" as const, content: "Count." }],
        stream: true as const,
      };

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
        await collect(
          { [Symbol.asyncIterator]: () => iterator },
          { into: chunks, onTimeout: () => data.controller.abort() },
        );
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
        const created = await client(pro.key).chat.completions.create({
          ...streamBody,
          stream_options: { include_usage: true },
        });
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
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
