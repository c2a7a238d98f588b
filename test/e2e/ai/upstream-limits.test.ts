import { once } from "node:events";
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import {
  type FakeOpenAI,
  type FakeRequest,
  type Handler,
  startFakeOpenAI,
} from "../../support/fake-openai.ts";
import { mb, rssOf, sampleRss } from "../../support/rss.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";

/**
 * Every answer of the AI provider is bounded in the server's memory, whatever its size and
 * whatever the client does: a non-streamed answer past 16 MiB is a 502 `upstream_error` (checked
 * while it is read), one stream event past 1 MiB ends the stream with an error event, the text a
 * /v1/responses answer gathers is bounded too, and a stream whose client does not read stops
 * reading the provider. A server in its own process is watched through /proc/<pid>/status while a
 * fake provider on loopback sends a few hundred MB made on the fly.
 *
 * One stack only (embedded): the memory property does not depend on the database or Redis.
 */

const MiB = 1024 * 1024;
const FLOOD = 256 * MiB;
/** What the server's RSS may grow by while a flood runs. */
const RSS_BOUND = 150 * MiB;

interface Flood {
  /** Bytes handed to the socket so far. */
  sent: number;
  /** The fake's record of the exchange (once it has arrived). */
  request?: FakeRequest;
}

/**
 * An answer of `head`, then `piece` again and again up to `total` bytes, then `tail`, written as
 * fast as the server takes it (and no faster: each write waits for the socket to drain).
 */
function flood(
  counter: Flood,
  options: { contentType: string; head: string; piece: string; total: number; tail: string },
): Handler {
  const piece = Buffer.from(options.piece);
  return async (request, res: ServerResponse) => {
    counter.request = request;
    res.writeHead(200, { "content-type": options.contentType });
    const write = async (chunk: Buffer | string) => {
      if (res.destroyed || res.writableEnded) return false;
      counter.sent += Buffer.byteLength(chunk);
      if (!res.write(chunk)) {
        await new Promise<void>((resolve) => {
          res.once("drain", resolve);
          res.once("close", resolve);
        });
      }
      return !res.destroyed;
    };
    if (!(await write(options.head))) return;
    for (let written = 0; written < options.total; written += piece.length) if (!(await write(piece))) return;
    if (await write(options.tail)) res.end();
  };
}

/** A chat-completion stream of 64 KiB content deltas, `total` bytes of them. */
const deltaStream = (counter: Flood, total = FLOOD) => {
  const chunk = {
    id: "chatcmpl-flood",
    object: "chat.completion.chunk",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{ index: 0, delta: { content: "x".repeat(64 * 1024) }, finish_reason: null }],
  };
  return flood(counter, {
    contentType: "text/event-stream",
    head: "",
    piece: `data: ${JSON.stringify(chunk)}\n\n`,
    total,
    tail: "data: [DONE]\n\n",
  });
};

/** One chat.completion JSON object whose content is `total` bytes long. */
const hugeCompletion = (counter: Flood) =>
  flood(counter, {
    contentType: "application/json",
    head: '{"id":"chatcmpl-huge","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"',
    piece: "x".repeat(MiB),
    total: FLOOD,
    tail: '"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}',
  });

/** One stream event that never ends: `data: …` without the blank line. */
const endlessEvent = (counter: Flood) =>
  flood(counter, {
    contentType: "text/event-stream",
    head: 'data: {"choices":[{"index":0,"delta":{"content":"',
    piece: "x".repeat(MiB),
    total: FLOOD,
    tail: '"}}]}\n\n',
  });

describe("upstream answers in a server process's memory [embedded]", () => {
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  let fake: FakeOpenAI;
  let child: ChildServer | undefined;
  let key: string;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    scratch = await provisionStack("embedded");
    const env = {
      ...scratch.env,
      KONTOR_ENV: "development",
      AI_UPSTREAM_URL: fake.url,
      AI_UPSTREAM_API_KEY: "sk-limits-test-key",
    };
    key = (await tenantIn(env, "AI limits")).key;
    child = await startChildServer(env);
    // Warm-up: the AI routes' code is loaded and compiled before any baseline is taken.
    for (const path of ["/chat/completions", "/responses"]) {
      const res = await post(
        path,
        path === "/responses" ? { input: "hi" } : { messages: [{ role: "user", content: "hi" }] },
      );
      expect(res.status, path).toBe(200);
      await res.text();
    }
  });

  afterAll(async () => {
    await child?.stop();
    await scratch?.drop();
    await fake?.close();
  });

  const post = (path: string, body: Record<string, unknown>) =>
    fetch(`${child!.api}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", ...body }),
    });

  /** A request whose answer's head is read, then nothing more: the socket is paused. */
  async function stalled(
    path: string,
    body: Record<string, unknown>,
  ): Promise<{ res: IncomingMessage; close: () => void }> {
    const req = httpRequest(`${child!.api}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    req.on("error", () => {});
    req.end(JSON.stringify({ model: "gpt-4o-mini", ...body }));
    const [res] = (await once(req, "response")) as [IncomingMessage];
    res.pause();
    res.socket.pause();
    return { res, close: () => req.destroy() };
  }

  /** The server's RSS while `run` runs (sampled), and its growth over `baseline`. */
  async function watched<T>(
    run: () => Promise<T>,
  ): Promise<{ result: T; baseline: number; peak: number; growth: number }> {
    const pid = child!.child.pid!;
    const baseline = rssOf(pid);
    const sampling = sampleRss(pid);
    try {
      const result = await run();
      const { peak } = sampling.stop();
      return { result, baseline, peak, growth: peak - baseline };
    } finally {
      sampling.stop();
    }
  }

  it("a /v1/responses stream whose client does not read stops reading the provider: RSS stays flat", {
    timeout: 30_000,
  }, async () => {
    const counter: Flood = { sent: 0 };
    fake.next(deltaStream(counter));
    const { result, baseline, peak, growth } = await watched(async () => {
      const { res, close } = await stalled("/responses", { input: "hi", stream: true });
      expect(res.statusCode).toBe(200);
      // Long enough for an unbounded buffer to take hundreds of MB.
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      const after4s = counter.sent;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      return { close, after4s, after6s: counter.sent };
    });
    console.info(
      `/responses stream, client not reading: RSS ${mb(baseline)} → peak ${mb(peak)} (+${mb(growth)}); provider sent ${mb(result.after6s)} of ${mb(FLOOD)}`,
    );
    expect(growth, "RSS growth").toBeLessThan(RSS_BOUND);
    // The provider is held back: far less than the flood left it, and nothing more once the buffers are full.
    expect(result.after6s).toBeLessThan(64 * MiB);
    expect(result.after6s - result.after4s).toBeLessThan(4 * MiB);
    result.close();
    // The client leaving reaches the provider.
    expect(await counter.request!.settled).toBe(true);
  });

  it("a /v1/chat/completions stream whose client does not read stays bounded too", {
    timeout: 30_000,
  }, async () => {
    const counter: Flood = { sent: 0 };
    fake.next(deltaStream(counter));
    const { result, growth } = await watched(async () => {
      const { res, close } = await stalled("/chat/completions", {
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      });
      expect(res.statusCode).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      return { close, sent: counter.sent };
    });
    expect(growth, "RSS growth").toBeLessThan(RSS_BOUND);
    expect(result.sent).toBeLessThan(64 * MiB);
    result.close();
    expect(await counter.request!.settled).toBe(true);
  });

  for (const path of ["/chat/completions", "/responses"]) {
    it(`a non-streamed answer past 16 MiB to ${path} is a 502 upstream_error, read no further`, {
      timeout: 30_000,
    }, async () => {
      const counter: Flood = { sent: 0 };
      fake.next(hugeCompletion(counter));
      const body = path === "/responses" ? { input: "hi" } : { messages: [{ role: "user", content: "hi" }] };
      const { result, baseline, peak, growth } = await watched(async () => {
        const res = await post(path, body);
        return {
          status: res.status,
          body: (await res.json()) as { error: { code: string; message: string } },
        };
      });
      console.info(
        `${path}, ${mb(FLOOD)} JSON answer: RSS ${mb(baseline)} → peak ${mb(peak)} (+${mb(growth)}); provider sent ${mb(counter.sent)}`,
      );
      expect(result.status).toBe(502);
      expect(result.body.error.code).toBe("upstream_error");
      expect(result.body.error.message).toMatch(/16 MiB/);
      expect(growth, "RSS growth").toBeLessThan(RSS_BOUND);
      expect(await counter.request!.settled, "the provider's answer is cut off").toBe(true);
      expect(counter.sent).toBeLessThan(64 * MiB);
    });
  }

  it("a stream event that never ends is cut off past 1 MiB: the stream ends with an error event", {
    timeout: 30_000,
  }, async () => {
    const counter: Flood = { sent: 0 };
    fake.next(endlessEvent(counter));
    const { result, growth } = await watched(async () => {
      const res = await post("/chat/completions", {
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      });
      return { status: res.status, text: await res.text() };
    });
    expect(result.status).toBe(200);
    expect(result.text.length, result.text.slice(0, 200)).toBeLessThan(MiB);
    const events = result.text.split("\n\n").filter(Boolean);
    expect(JSON.parse(events.at(-1)!.slice("data: ".length))).toMatchObject({
      error: { code: "upstream_error" },
    });
    expect(growth, "RSS growth").toBeLessThan(RSS_BOUND);
    expect(await counter.request!.settled).toBe(true);
  });

  it("a /v1/responses stream gathers at most 16 MiB of text: past it, response.failed", {
    timeout: 30_000,
  }, async () => {
    const counter: Flood = { sent: 0 };
    fake.next(deltaStream(counter, 48 * MiB));
    const { result, growth } = await watched(async () => {
      const res = await post("/responses", { input: "hi", stream: true });
      return { status: res.status, text: await res.text() };
    });
    expect(result.status).toBe(200);
    const last = result.text.trimEnd().split("\n\n").at(-1)!;
    expect(last.slice(0, 200)).toMatch(/^event: response\.failed\n/);
    expect(JSON.parse(last.split("\ndata: ")[1]!).response.error).toMatchObject({ code: "upstream_error" });
    expect(growth, "RSS growth").toBeLessThan(RSS_BOUND);
    expect(await counter.request!.settled, "the provider's stream is cut off").toBe(true);
  });
});
