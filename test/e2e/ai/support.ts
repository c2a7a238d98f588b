import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
} from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import type { PlanName } from "../../../schema/lib/plans.ts";
import {
  type ChatUsage,
  completion,
  type FakeOpenAI,
  type FakeRequest,
  type Handler,
  startFakeOpenAI,
  stream,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import type { Tenant, TestServer } from "../../support/server.ts";

/**
 * What the AI suites share: the chat-completions suites (chat, chat-streams, chat-failures), the
 * /v1/responses suites (responses-tools, responses-requests, responses-limits, responses-failures)
 * and the coding-plan suites (metering, coding-meter).
 */

export const HOUR = 3_600_000;
export const FIVE_HOURS = 5 * HOUR;
export const DAY = 24 * HOUR;
export const WEEK = 7 * DAY;

/** A 1×1 PNG as a data: URL. */
export const PNG =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** The response shows nothing of the provider's key (`secret`): neither body nor any header. */
export function noSecretIn(secret: string) {
  return function expectNoSecret(response: { text: string; headers: Headers }) {
    expect(response.text).not.toContain(secret);
    expect(response.text).not.toContain("upstream-secret");
    for (const [name, value] of response.headers)
      expect(`${name}: ${value}`).not.toContain("upstream-secret");
  };
}

// ---- /v1/chat/completions

/** The provider's key in the chat-completions suites. */
export const CHAT_SECRET = "sk-upstream-secret";

export const CATALOG: Record<PlanName, string[]> = {
  free: ["gpt-4o-mini"],
  plus: ["gpt-4o-mini", "gpt-4.1-mini"],
  pro: ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1"],
  max: ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1", "o3"],
};

/** Every chunk of an async iterable, failing (not hanging) when it does not end in time. */
export async function collectChunks<T>(
  source: AsyncIterable<T>,
  options: { into?: T[]; timeoutMs?: number; onTimeout?: () => void } = {},
): Promise<T[]> {
  const out = options.into ?? [];
  const iterator = source[Symbol.asyncIterator]();
  const deadline = Date.now() + (options.timeoutMs ?? 5_000);
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">(
      (resolve) => (timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()))),
    );
    const next = await Promise.race([iterator.next(), late]).finally(() => clearTimeout(timer));
    if (next === "late") {
      options.onTimeout?.();
      throw new Error(
        `the stream did not end within ${options.timeoutMs ?? 5_000} ms; ${out.length} chunks arrived: ${JSON.stringify(out).slice(0, 800)}`,
      );
    }
    if (next.done) return out;
    out.push(next.value);
  }
}

/** A JSON text as Kontor forwards it: parsed (the last of duplicate keys wins), then serialised again. */
export const reserialised = (text: string) => JSON.stringify(JSON.parse(text));

export const textOf = (chunks: ChatCompletionChunk[]) =>
  chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("");

/** The helpers of a chat-completions suite: called inside `e2e(...)` with its server getter and the fake provider. */
export function chatApi(server: () => TestServer, fake: FakeOpenAI) {
  /** The bodies the client put on the wire, in order. */
  const sent: string[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    if (typeof init?.body === "string") sent.push(init.body);
    return fetch(input, init);
  };
  const client = (key: string, base = server().api) =>
    new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0, fetch: recordingFetch });

  const chatUrl = () => `${server().api}/chat/completions`;
  const post = (key: string, body: unknown, url = chatUrl()) =>
    raw(url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });

  /** The requests the fake received after `before` of them. */
  const since = (before: number) => fake.requests.slice(before);

  const simple = (model = "gpt-4o-mini"): ChatCompletionCreateParamsNonStreaming => ({
    model,
    messages: [{ role: "user", content: "Say hello." }],
  });

  /** A workspace of its own: a request one test leaves running holds none of another test's coding slots. */
  const fresh = (plan: PlanName = "pro") => server().tenant({ plan });

  return { sent, client, chatUrl, post, since, simple, fresh };
}

// ---- /v1/responses

/** The provider's key in the /v1/responses suites. */
export const RESPONSES_SECRET = "sk-upstream-secret-responses";

export interface Call {
  id: string;
  name: string;
  args: unknown;
}

/** A JSON completion calling `calls`. */
export const jsonToolCalls = (calls: Call[], usage: ChatUsage): Handler =>
  completion({
    usage,
    extra: {
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: calls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: JSON.stringify(call.args) },
            })),
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
    },
  });

/** A chat-completion stream calling `calls`: each call's arguments in two pieces, as OpenAI streams them. */
export const streamedToolCalls =
  (calls: Call[], usage: ChatUsage): Handler =>
  async (request, res) => {
    const base = {
      id: "chatcmpl-fake-tools",
      object: "chat.completion.chunk",
      created: 1_760_000_000,
      model: "gpt-4o-mini-2024-07-18",
    };
    const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    const events: unknown[] = [chunk({ role: "assistant", content: null }, null)];
    calls.forEach((call, index) => {
      const args = JSON.stringify(call.args);
      const half = Math.floor(args.length / 2);
      events.push(
        chunk(
          {
            tool_calls: [
              { index, id: call.id, type: "function", function: { name: call.name, arguments: "" } },
            ],
          },
          null,
        ),
      );
      events.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }, null));
      events.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, null));
    });
    events.push(chunk({}, "tool_calls"));
    if (request.json?.stream_options?.include_usage === true) events.push({ ...base, choices: [], usage });
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    for (const event of events) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(event)}\n\n`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end("data: [DONE]\n\n");
  };

/** A round calling tools, as JSON or as a stream, whichever the request asked for. */
export const toolRound =
  (calls: Call[], usage: ChatUsage): Handler =>
  (request, res) =>
    (request.json?.stream === true ? streamedToolCalls : jsonToolCalls)(calls, usage)(request, res);

/** A round answering `text`, as JSON or as a stream (one delta per word), whichever the request asked for. */
export const textRound =
  (text: string, usage: ChatUsage): Handler =>
  (request, res) =>
    (request.json?.stream === true
      ? stream({ deltas: text.split(/(?<= )/), usage })
      : completion({ text, usage }))(request, res);

export const DEFAULT_TEXT = "The default answer.";
/** What the fake answers past a test's script. */
export const defaultAnswer: Handler = (request, res) => textRound(DEFAULT_TEXT, usageOf(9, 3))(request, res);

export const toolNames = (request: FakeRequest) =>
  ((request.json.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name).sort();

export interface SseEvent {
  event: string | undefined;
  data: any;
}

/** The server-sent events of a body: each `event:` name with its parsed `data:`. */
export function parseSse(text: string): SseEvent[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim().length > 0)
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice(7);
      const data = lines
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
        .join("\n");
      return { event, data: JSON.parse(data) };
    });
}

/** Every item of an async iterable, calling `abort` and failing (not hanging) when it does not end in time. */
export const collectEvents = <T>(source: AsyncIterable<T>, abort: () => void, timeoutMs = 8_000) =>
  collectChunks(source, { timeoutMs, onTimeout: abort });

export const usageOfResponse = (input: number, output: number) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: input + output,
});

/** A workspace (max plan: 120 AI requests a minute, room for every test of a suite) with leads, a client and an invoice, created through REST; and a second workspace with an Ada of its own. */
export interface Seeded {
  owner: Tenant;
  ada: any;
  grace: any;
  client: any;
  invoice: any;
  other: Tenant;
  otherAda: any;
}

/**
 * The fake provider of a /v1/responses suite file, started now and closed after its tests, answering
 * from a script: `play(...answers)` sets the answers, one per upstream request, in order. The script
 * is emptied before every test so a failing test leaves nothing queued for the next; past it, the
 * default answer, or what `fallBackTo` set for the test.
 */
export async function scriptedFake() {
  const fake = await startFakeOpenAI();
  afterAll(() => fake.close());
  let script: Handler[] = [];
  let fallback: Handler = defaultAnswer;
  fake.setDefault((request, res) => (script.shift() ?? fallback)(request, res));
  beforeEach(() => {
    script = [];
    fallback = defaultAnswer;
  });
  return {
    fake,
    play: (...answers: Handler[]) => {
      script = answers;
    },
    fallBackTo: (handler: Handler) => {
      fallback = handler;
    },
  };
}

/** The helpers of a /v1/responses suite: called inside `e2e(...)` with its server getter and the fake provider. */
export function responsesApi(server: () => TestServer, fake: FakeOpenAI) {
  const client = (key: string, base = server().api) =>
    new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
  const responsesUrl = (base = server().api) => `${base}/responses`;
  const post = (key: string, body: unknown, base = server().api) =>
    raw(responsesUrl(base), {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const tenant = (plan: PlanName = "pro", scopes?: string[]) =>
    server().tenant({ plan, ...(scopes && { scopes }) });

  /** The requests the fake received after `before` of them. */
  const since = (before: number) => fake.requests.slice(before);

  /** Creates the `Seeded` workspaces (call it in a `beforeAll`). */
  async function seed(): Promise<Seeded> {
    const owner = await tenant("max");
    const api = rest(server().api, owner.key);
    const created = async (path: string, body: unknown) => {
      const res = await api.post(path, body);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body;
    };
    const ada = await created("/leads", {
      full_name: "Ada Lovelace",
      company_name: "Analytical Engines",
      stage: "qualified",
      estimated_value: 1200,
    });
    const grace = await created("/leads", {
      full_name: "Grace Hopper",
      company_name: "Compilers Inc",
      stage: "new",
    });
    const customer = await created("/clients", {
      name: "Babbage Difference Works",
      email: "billing@babbage.example",
    });
    const invoice = await created("/invoices", {
      client_id: customer.id,
      items: [
        { description: "Difference engine tuning", quantity: 3, unit_price: 250 },
        { description: "Punch cards", quantity: 100, unit_price: 1.5 },
      ],
    });
    const other = await tenant("pro");
    const otherAda = (
      await rest(server().api, other.key).post("/leads", {
        full_name: "Ada Gordon",
        company_name: "Elsewhere Ltd",
      })
    ).body;
    expect(otherAda.id).toMatch(/^lead_/);
    return { owner, ada, grace, client: customer, invoice, other, otherAda };
  }

  /** The `Seeded` workspaces, created before the suite's tests: the object they are put in then. */
  function useSeeded(): Seeded {
    const seeded = {} as Seeded;
    beforeAll(async () => {
      Object.assign(seeded, await seed());
    });
    return seeded;
  }

  return { client, responsesUrl, post, tenant, since, seed, useSeeded };
}
