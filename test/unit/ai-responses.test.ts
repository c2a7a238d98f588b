import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../schema/lib/errors.ts";
import { type CreateResponseInput, createResponse, DEFAULT_MAX_ROUNDS } from "../../server/ai/responses.ts";
import type { ToolDefinition } from "../../server/ai/tools.ts";
import type { ChatUpstream } from "../../server/ai/upstream.ts";

// ---------------------------------------------------------------------------------------------
// A fake upstream: each chat() call takes the next scripted answer and records what it was sent.

type Answer = (body: Record<string, unknown>, signal: AbortSignal) => Response | Promise<Response>;

class FakeUpstream implements ChatUpstream {
  readonly bodies: Record<string, any>[] = [];
  readonly signals: AbortSignal[] = [];
  constructor(
    private readonly answers: Answer[],
    private readonly fallback?: Answer,
  ) {}

  async chat(body: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    this.bodies.push(structuredClone(body));
    this.signals.push(signal);
    const next = this.answers.shift() ?? this.fallback;
    if (!next) throw new Error("the fake upstream has no more answers");
    return next(body, signal);
  }
}

const usage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

const completion =
  (message: Record<string, unknown>, finish = "stop", tokens = usage(10, 5)): Answer =>
  () =>
    Response.json({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
      usage: tokens,
    });

const text = (content: string, tokens = usage(10, 5)) => completion({ content }, "stop", tokens);

const toolCalls = (calls: [id: string, name: string, args: string][], tokens = usage(10, 5)) =>
  completion(
    {
      content: null,
      tool_calls: calls.map(([id, name, args]) => ({
        id,
        type: "function",
        function: { name, arguments: args },
      })),
    },
    "tool_calls",
    tokens,
  );

/** An event-stream body the test writes chunk by chunk. */
function controlledSse() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  return {
    answer: (() => new Response(body, { headers: { "content-type": "text/event-stream" } })) as Answer,
    chunk(delta: Record<string, unknown>, finish: string | null = null) {
      const event = {
        id: "chatcmpl-1",
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, finish_reason: finish }],
      };
      controller.enqueue(encoder.encode(`data: ${JSON.stringify(event)}\n\n`));
    },
    usage(tokens: ReturnType<typeof usage>) {
      controller.enqueue(
        encoder.encode(
          `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [], usage: tokens })}\n\n`,
        ),
      );
    },
    raw(text: string) {
      controller.enqueue(encoder.encode(text));
    },
    done() {
      controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      controller.close();
    },
  };
}

/** A whole streamed answer at once. */
const streamed =
  (deltas: string[], tokens = usage(7, 3)): Answer =>
  () => {
    const lines: {
      choices: { index: number; delta: Record<string, unknown>; finish_reason: string | null }[];
    }[] = deltas.map((content, i) => ({
      choices: [
        { index: 0, delta: i === 0 ? { role: "assistant", content } : { content }, finish_reason: null },
      ],
    }));
    lines.push({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
    const text = [
      ...lines.map((l) => `data: ${JSON.stringify(l)}\n\n`),
      `data: ${JSON.stringify({ choices: [], usage: tokens })}\n\n`,
      "data: [DONE]\n\n",
    ].join("");
    return new Response(text, { headers: { "content-type": "text/event-stream" } });
  };

/** Reads our own Responses event stream, event by event. */
class EventReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private pending = "";
  readonly seen: { event: string; data: any }[] = [];
  constructor(response: Response) {
    this.reader = response.body!.getReader();
  }

  /** The next event, or undefined at the end of the stream. */
  async next(): Promise<{ event: string; data: any } | undefined> {
    while (true) {
      const end = this.pending.indexOf("\n\n");
      if (end >= 0) {
        const block = this.pending.slice(0, end);
        this.pending = this.pending.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1] ?? "";
        const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!);
        const parsed = { event, data };
        this.seen.push(parsed);
        return parsed;
      }
      const { done, value } = await this.reader.read();
      if (done) {
        expect(this.pending.trim()).toBe("");
        return undefined;
      }
      this.pending += this.decoder.decode(value, { stream: true });
    }
  }

  async until(type: string) {
    for (let event = await this.next(); event; event = await this.next())
      if (event.event === type) return event;
    throw new Error(`the stream ended without ${type}`);
  }

  async rest() {
    while (await this.next());
    return this.seen;
  }

  cancel() {
    return this.reader.cancel();
  }
}

const tool = (name: string, description = `The ${name} tool.`): ToolDefinition => ({
  name,
  description,
  parameters: {
    type: "object",
    properties: { stage: { type: "string", enum: ["new", "won"] } },
    additionalProperties: false,
  },
  scopes: [],
  document: { kind: "Document", definitions: [] } as never,
});

const TOOLS = [tool("leads"), tool("workspace")];

function setup(
  upstream: FakeUpstream,
  body: Record<string, unknown>,
  overrides: Partial<CreateResponseInput> = {},
) {
  const runs: { tool: string; args: unknown }[] = [];
  const input: CreateResponseInput = {
    body,
    tools: TOOLS,
    upstream,
    signal: new AbortController().signal,
    run: async (definition, args) => {
      runs.push({ tool: definition.name, args });
      return { ok: true, data: { tool: definition.name, args } };
    },
    ...overrides,
  };
  return { runs, go: () => createResponse(input) };
}

async function json(response: Response) {
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return (await response.json()) as any;
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

// ---------------------------------------------------------------------------------------------

describe("createResponse: the tool loop", () => {
  it("runs the model's tool calls and hands their results to the next round", async () => {
    const upstream = new FakeUpstream([
      toolCalls(
        [
          ["call_a", "leads", '{"stage":"won"}'],
          ["call_b", "workspace", ""],
        ],
        usage(100, 20),
      ),
      text("You have two won leads.", usage(180, 12)),
    ]);
    const { runs, go } = setup(upstream, { model: "gpt-4o-mini", input: "How many leads did we win?" });
    const { response, usage: metered } = await go();
    const body = await json(response);

    expect(runs).toEqual([
      { tool: "leads", args: { stage: "won" } },
      { tool: "workspace", args: {} },
    ]);
    expect(upstream.bodies).toHaveLength(2);
    // Round 1: the conversation and Kontor's tools in chat form.
    const [first, second] = upstream.bodies as [any, any];
    expect(first.model).toBe("gpt-4o-mini");
    expect(first.messages).toEqual([{ role: "user", content: "How many leads did we win?" }]);
    expect(first.tools).toEqual(
      TOOLS.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
    );
    expect(first.tool_choice).toBe("auto");
    expect(first.stream).toBeUndefined();
    // Round 2: the assistant's calls and one tool message per call, with the tool's answer.
    expect(second.messages).toEqual([
      { role: "user", content: "How many leads did we win?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "leads", arguments: '{"stage":"won"}' } },
          { id: "call_b", type: "function", function: { name: "workspace", arguments: "" } },
        ],
      },
      {
        role: "tool",
        tool_call_id: "call_a",
        content: JSON.stringify({ ok: true, data: { tool: "leads", args: { stage: "won" } } }),
      },
      {
        role: "tool",
        tool_call_id: "call_b",
        content: JSON.stringify({ ok: true, data: { tool: "workspace", args: {} } }),
      },
    ]);

    expect(body).toMatchObject({
      object: "response",
      status: "completed",
      model: "gpt-4o-mini",
      error: null,
      incomplete_details: null,
      tools: [],
    });
    expect(body.id).toMatch(/^resp_[0-9A-Z]{26}$/);
    expect(body.created_at).toBeTypeOf("number");
    expect(body.output).toEqual([
      {
        type: "message",
        id: expect.stringMatching(/^msg_/),
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "You have two won leads.", annotations: [], logprobs: [] }],
      },
    ]);
    expect(body.usage).toEqual({
      input_tokens: 280,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 32,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 312,
    });
    await expect(metered).resolves.toEqual({ input_tokens: 280, output_tokens: 32, abandoned: false });
  });

  it("answers an unknown tool, bad JSON arguments and a failing tool as errors the model reads, without running them", async () => {
    const upstream = new FakeUpstream([
      toolCalls([
        ["c1", "invoices", "{}"],
        ["c2", "leads", "{not json"],
        ["c3", "workspace", "{}"],
      ]),
      text("Sorry."),
    ]);
    const { go } = setup(
      upstream,
      { model: "m", input: "hi" },
      {
        run: async () => {
          throw new Error("connection string postgres://secret@db");
        },
      },
    );
    await json((await go()).response);
    const tools = upstream.bodies[1]!.messages.filter((m: any) => m.role === "tool").map((m: any) =>
      JSON.parse(m.content),
    );
    expect(tools[0]).toEqual({
      ok: false,
      error: { code: "unknown_tool", message: expect.stringContaining("leads, workspace") },
    });
    expect(tools[1]).toEqual({
      ok: false,
      error: { code: "invalid_json", message: expect.stringContaining("not valid JSON") },
    });
    // The thrown error's text never reaches the model.
    expect(tools[2]).toEqual({
      ok: false,
      error: { code: "internal_error", message: "The tool failed unexpectedly." },
    });
  });

  it("stops after maxRounds rounds of tool calls with an incomplete response", async () => {
    const upstream = new FakeUpstream([], toolCalls([["c", "leads", "{}"]], usage(1, 1)));
    const { runs, go } = setup(upstream, { model: "m", input: "loop forever" }, { maxRounds: 3 });
    const body = await json((await go()).response);
    expect(upstream.bodies).toHaveLength(3);
    // The last round's calls are not run: nothing would read their answers.
    expect(runs).toHaveLength(2);
    expect(body.status).toBe("incomplete");
    expect(body.incomplete_details).toEqual({ reason: "max_tool_rounds" });
    expect(body.output).toEqual([]);
    expect(body.usage).toMatchObject({ input_tokens: 3, output_tokens: 3, total_tokens: 6 });
  });

  it(`runs at most ${DEFAULT_MAX_ROUNDS} rounds by default`, async () => {
    const upstream = new FakeUpstream([], toolCalls([["c", "workspace", "{}"]]));
    const body = await json((await setup(upstream, { model: "m", input: "x" }).go()).response);
    expect(upstream.bodies).toHaveLength(DEFAULT_MAX_ROUNDS);
    expect(body.status).toBe("incomplete");
  });

  it("maps a length finish to incomplete max_output_tokens, keeping the text", async () => {
    const upstream = new FakeUpstream([completion({ content: "The answer is cut" }, "length")]);
    const body = await json(
      (await setup(upstream, { model: "m", input: "x", max_output_tokens: 5 }).go()).response,
    );
    expect(upstream.bodies[0]!.max_completion_tokens).toBe(5);
    expect(body).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      max_output_tokens: 5,
    });
    expect(body.output[0]).toMatchObject({ status: "incomplete", content: [{ text: "The answer is cut" }] });
  });
});

describe("createResponse: the request", () => {
  it("maps instructions to the one system message, and adds no system message of its own", async () => {
    const upstream = new FakeUpstream([text("ok")]);
    await setup(upstream, { model: "m", instructions: "Answer in French.", input: "Hello" }).go();
    expect(upstream.bodies[0]!.messages).toEqual([
      { role: "system", content: "Answer in French." },
      { role: "user", content: "Hello" },
    ]);

    const bare = new FakeUpstream([text("ok")]);
    await setup(bare, { model: "m", input: "Hello" }).go();
    expect(bare.bodies[0]!.messages.filter((m: any) => m.role === "system")).toEqual([]);
  });

  it("takes a plain prompt string as the user message", async () => {
    const upstream = new FakeUpstream([text("ok")]);
    await setup(upstream, { model: "m", prompt: "Summarise my pipeline" }).go();
    expect(upstream.bodies[0]!.messages).toEqual([{ role: "user", content: "Summarise my pipeline" }]);
  });

  it("translates input items: text and image parts, earlier assistant output, developer messages", async () => {
    const upstream = new FakeUpstream([text("ok")]);
    await setup(upstream, {
      model: "m",
      input: [
        { role: "developer", content: "Be brief." },
        {
          type: "message",
          role: "user",
          content: [
            { type: "input_text", text: "What is in this picture?" },
            { type: "input_image", image_url: "https://example.com/a.png", detail: "low" },
          ],
        },
        {
          type: "message",
          id: "msg_1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "A cat.", annotations: [] }],
        },
        { role: "user", content: "And its colour?" },
      ],
    }).go();
    expect(upstream.bodies[0]!.messages).toEqual([
      { role: "system", content: "Be brief." },
      {
        role: "user",
        content: [
          { type: "text", text: "What is in this picture?" },
          { type: "image_url", image_url: { url: "https://example.com/a.png", detail: "low" } },
        ],
      },
      { role: "assistant", content: "A cat." },
      { role: "user", content: "And its colour?" },
    ]);
  });

  it("passes sampling settings on, and a forcing tool_choice for the first round only", async () => {
    const upstream = new FakeUpstream([toolCalls([["c", "leads", "{}"]]), text("done")]);
    const body = await json(
      (
        await setup(upstream, {
          model: "m",
          input: "x",
          temperature: 0.2,
          top_p: 0.9,
          tool_choice: { type: "function", name: "leads" },
          metadata: { ticket: "42" },
          store: false,
          user: "u1",
        }).go()
      ).response,
    );
    expect(upstream.bodies[0]).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      tool_choice: { type: "function", function: { name: "leads" } },
    });
    expect(upstream.bodies[1]!.tool_choice).toBe("auto");
    expect(upstream.bodies[0]!.user).toBeUndefined();
    expect(body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      metadata: { ticket: "42" },
      tool_choice: { type: "function", name: "leads" },
    });
  });

  it("accepts an empty tools list (nothing of the caller's)", async () => {
    const upstream = new FakeUpstream([text("ok")]);
    const body = await json((await setup(upstream, { model: "m", input: "x", tools: [] }).go()).response);
    expect(body.status).toBe("completed");
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ["neither input nor prompt", { model: "m" }, "input"],
    ["both input and prompt", { model: "m", input: "a", prompt: "b" }, "prompt"],
    ["no model", { input: "a" }, "model"],
    ["a number as input", { model: "m", input: 5 }, "input"],
    ["an empty input list", { model: "m", input: [] }, "input"],
    ["a prompt template object", { model: "m", prompt: { id: "pmpt_1" } }, "prompt"],
    [
      "a function_call_output item",
      { model: "m", input: [{ type: "function_call_output", call_id: "c", output: "x" }] },
      "input[0].type",
    ],
    ["an unknown role", { model: "m", input: [{ role: "robot", content: "x" }] }, "input[0].role"],
    [
      "a file part",
      { model: "m", input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] },
      "input[0].content[0].type",
    ],
    [
      "an image by file id",
      { model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] },
      "input[0].content[0].image_url",
    ],
    [
      "a text part without text",
      { model: "m", input: [{ role: "user", content: [{ type: "input_text" }] }] },
      "input[0].content[0].text",
    ],
    [
      "client tools",
      { model: "m", input: "a", tools: [{ type: "function", name: "mine", parameters: {} }] },
      "tools",
    ],
    [
      "an unsupported OpenAI parameter",
      { model: "m", input: "a", previous_response_id: "resp_1" },
      "previous_response_id",
    ],
    ["an unknown parameter", { model: "m", input: "a", colour: "blue" }, "colour"],
    ["a string temperature", { model: "m", input: "a", temperature: "hot" }, "temperature"],
    ["a temperature above 2", { model: "m", input: "a", temperature: 3 }, "temperature"],
    ["a string stream flag", { model: "m", input: "a", stream: "yes" }, "stream"],
    ["numeric instructions", { model: "m", input: "a", instructions: 3 }, "instructions"],
    ["zero max_output_tokens", { model: "m", input: "a", max_output_tokens: 0 }, "max_output_tokens"],
    ["a number in metadata", { model: "m", input: "a", metadata: { n: 1 } }, "metadata.n"],
    [
      "a tool_choice naming no tool of ours",
      { model: "m", input: "a", tool_choice: { type: "function", name: "invoices" } },
      "tool_choice.name",
    ],
    ["an odd tool_choice", { model: "m", input: "a", tool_choice: "sometimes" }, "tool_choice"],
  ];
  for (const [what, body, param] of invalid) {
    it(`refuses ${what}: 400 validation_failed, param ${param}, nothing sent upstream`, async () => {
      const upstream = new FakeUpstream([text("never")]);
      const error = await refusal(setup(upstream, body).go());
      expect({ status: error.status, code: error.code, param: error.param }).toEqual({
        status: 400,
        code: "validation_failed",
        param,
      });
      expect(error.message.length).toBeGreaterThan(10);
      expect(upstream.bodies).toHaveLength(0);
    });
  }
});

describe("createResponse: upstream failures", () => {
  it("turns an upstream 500 into 502 upstream_error with its short message", async () => {
    const upstream = new FakeUpstream([
      () => Response.json({ error: { message: "The model is overloaded." } }, { status: 500 }),
    ]);
    const error = await refusal(setup(upstream, { model: "m", input: "x" }).go());
    expect({ status: error.status, code: error.code }).toEqual({ status: 502, code: "upstream_error" });
    expect(error.message).toContain("500");
    expect(error.message).toContain("The model is overloaded.");
  });

  it("never echoes a provider message that carries key material", async () => {
    const upstream = new FakeUpstream([
      () =>
        Response.json(
          {
            error: {
              message: "Incorrect API key provided: sk-proj-abc123***xyz. You can find your API key at …",
            },
          },
          { status: 401 },
        ),
    ]);
    const error = await refusal(setup(upstream, { model: "m", input: "x" }).go());
    expect(error.code).toBe("upstream_error");
    expect(error.message).not.toMatch(/sk-|API key/i);
  });

  it("turns an answer that is not JSON into 502 upstream_error", async () => {
    const upstream = new FakeUpstream([
      () => new Response("<html>Bad gateway</html>", { headers: { "content-type": "text/html" } }),
    ]);
    const error = await refusal(setup(upstream, { model: "m", input: "x" }).go());
    expect({ status: error.status, code: error.code }).toEqual({ status: 502, code: "upstream_error" });
    expect(error.message).not.toContain("html");
  });

  it("fails the whole response when a later round fails (no partial JSON answer), telling onFailure what the rounds before cost", async () => {
    const upstream = new FakeUpstream([
      toolCalls([["c", "leads", "{}"]]),
      () => new Response("{", { status: 200 }),
    ]);
    const spent: unknown[] = [];
    const error = await refusal(
      setup(upstream, { model: "m", input: "x" }, { onFailure: (usage) => spent.push(usage) }).go(),
    );
    expect(error.code).toBe("upstream_error");
    expect(spent).toEqual([{ input_tokens: 10, output_tokens: 5 }]);
  });

  it("a failure before any round completed tells onFailure it cost nothing; a bad body too", async () => {
    const spent: unknown[] = [];
    const onFailure = (usage: unknown) => spent.push(usage);
    const upstream = new FakeUpstream([
      () => Response.json({ error: { message: "Overloaded" } }, { status: 503 }),
    ]);
    expect((await refusal(setup(upstream, { model: "m", input: "x" }, { onFailure }).go())).code).toBe(
      "upstream_error",
    );
    expect(
      (await refusal(setup(new FakeUpstream([]), { model: "m", input: 42 }, { onFailure }).go())).code,
    ).toBe("validation_failed");
    expect(spent).toEqual([
      { input_tokens: 0, output_tokens: 0 },
      { input_tokens: 0, output_tokens: 0 },
    ]);
  });

  it("with stream, an upstream refusing the first round is an HTTP error, not a stream", async () => {
    const upstream = new FakeUpstream([
      () => Response.json({ error: { message: "No such model" } }, { status: 404 }),
    ]);
    const error = await refusal(setup(upstream, { model: "m", input: "x", stream: true }).go());
    expect({ status: error.status, code: error.code }).toEqual({ status: 502, code: "upstream_error" });
  });
});

describe("createResponse: streaming", () => {
  it("forwards each upstream delta as it arrives, in OpenAI's event order, with usage summed over the rounds", async () => {
    const sse = controlledSse();
    const upstream = new FakeUpstream([
      toolCalls([["c1", "leads", '{"stage":"new"}']], usage(50, 8)),
      sse.answer,
    ]);
    const { runs, go } = setup(upstream, { model: "m", input: "Any new leads?", stream: true });
    const { response, usage: metered } = await go();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = new EventReader(response);

    // The first delta reaches the client while the upstream is still writing.
    sse.chunk({ role: "assistant", content: "Yes, " });
    const first = await events.until("response.output_text.delta");
    expect(first.data.delta).toBe("Yes, ");
    expect(runs).toEqual([{ tool: "leads", args: { stage: "new" } }]);
    sse.chunk({ content: "two." });
    const second = await events.until("response.output_text.delta");
    expect(second.data.delta).toBe("two.");
    sse.chunk({}, "stop");
    sse.usage(usage(70, 4));
    sse.done();
    const all = await events.rest();

    expect(all.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    for (const [index, { event, data }] of all.entries()) {
      expect(data.type).toBe(event);
      expect(data.sequence_number).toBe(index);
    }
    const byType = Object.fromEntries(all.map((e) => [e.event, e.data]));
    expect(byType["response.created"].response).toMatchObject({
      object: "response",
      status: "in_progress",
      output: [],
      usage: null,
    });
    const itemId = byType["response.output_item.added"].item.id;
    expect(byType["response.output_item.added"]).toMatchObject({
      output_index: 0,
      item: { type: "message", role: "assistant", status: "in_progress", content: [] },
    });
    expect(byType["response.content_part.added"]).toMatchObject({
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: "output_text", text: "" },
    });
    expect(byType["response.output_text.done"]).toMatchObject({ item_id: itemId, text: "Yes, two." });
    expect(byType["response.content_part.done"].part).toMatchObject({
      type: "output_text",
      text: "Yes, two.",
    });
    expect(byType["response.output_item.done"].item).toMatchObject({
      id: itemId,
      status: "completed",
      content: [{ type: "output_text", text: "Yes, two." }],
    });
    const done = byType["response.completed"].response;
    expect(done).toMatchObject({
      id: byType["response.created"].response.id,
      status: "completed",
      output: [{ id: itemId, content: [{ text: "Yes, two." }] }],
    });
    expect(done.usage).toMatchObject({ input_tokens: 120, output_tokens: 12, total_tokens: 132 });
    await expect(metered).resolves.toEqual({ input_tokens: 120, output_tokens: 12, abandoned: false });

    // Every round asked the upstream to stream, with usage.
    for (const body of upstream.bodies)
      expect(body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("assembles tool calls from streamed deltas", async () => {
    const calls = controlledSse();
    const upstream = new FakeUpstream([calls.answer, streamed(["Found it."])]);
    const { runs, go } = setup(upstream, { model: "m", input: "x", stream: true });
    const { response } = await go();
    calls.chunk({
      role: "assistant",
      tool_calls: [
        { index: 0, id: "call_1", type: "function", function: { name: "leads", arguments: '{"sta' } },
      ],
    });
    calls.chunk({ tool_calls: [{ index: 0, function: { arguments: 'ge":"won"}' } }] });
    calls.chunk({}, "tool_calls");
    calls.done();
    const all = await new EventReader(response).rest();
    expect(runs).toEqual([{ tool: "leads", args: { stage: "won" } }]);
    expect(upstream.bodies[1]!.messages[1].tool_calls).toEqual([
      { id: "call_1", type: "function", function: { name: "leads", arguments: '{"stage":"won"}' } },
    ]);
    expect(all.at(-1)!.data.response.output[0].content[0].text).toBe("Found it.");
  });

  it("ends with response.failed when the upstream fails after the stream began", async () => {
    const upstream = new FakeUpstream([
      toolCalls([["c", "leads", "{}"]]),
      () => Response.json({ error: { message: "Overloaded" } }, { status: 503 }),
    ]);
    const { response, usage: metered } = await setup(upstream, { model: "m", input: "x", stream: true }).go();
    const all = await new EventReader(response).rest();
    expect(all.map((e) => e.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(all[2]!.data).toMatchObject({
      sequence_number: 2,
      response: {
        status: "failed",
        error: { code: "upstream_error", message: expect.stringContaining("Overloaded") },
      },
    });
    await expect(metered).resolves.toEqual({ input_tokens: 10, output_tokens: 5, abandoned: false });
  });

  it("ends with response.failed when the upstream's stream breaks off mid-answer", async () => {
    const sse = controlledSse();
    const upstream = new FakeUpstream([sse.answer]);
    const { response } = await setup(upstream, { model: "m", input: "x", stream: true }).go();
    const events = new EventReader(response);
    sse.chunk({ content: "Half an" });
    await events.until("response.output_text.delta");
    sse.raw("data: {not json\n\n");
    const all = await events.rest();
    const failed = all.at(-1)!;
    expect(failed.event).toBe("response.failed");
    expect(failed.data.response).toMatchObject({
      status: "failed",
      error: { code: "upstream_error" },
      output: [{ status: "incomplete", content: [{ text: "Half an" }] }],
    });
  });

  it("aborts the upstream when the client goes away", async () => {
    const sse = controlledSse();
    const upstream = new FakeUpstream([sse.answer]);
    const { response, usage: metered } = await setup(upstream, { model: "m", input: "x", stream: true }).go();
    const events = new EventReader(response);
    sse.chunk({ content: "Hel" });
    await events.until("response.output_text.delta");
    expect(upstream.signals[0]!.aborted).toBe(false);
    await events.cancel();
    expect(upstream.signals[0]!.aborted).toBe(true);
    await expect(metered).resolves.toEqual({ input_tokens: 0, output_tokens: 0, abandoned: true });
  });

  it("streams an incomplete response when the tool rounds run out", async () => {
    const upstream = new FakeUpstream([], toolCalls([["c", "workspace", "{}"]]));
    const { response } = await setup(
      upstream,
      { model: "m", input: "x", stream: true },
      { maxRounds: 2 },
    ).go();
    const all = await new EventReader(response).rest();
    expect(all.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.incomplete",
    ]);
    expect(all[2]!.data.response).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "max_tool_rounds" },
    });
  });
});

describe("the official openai SDK reads what Kontor answers", () => {
  /** An SDK client whose requests go to createResponse, in process (no network). */
  function client(upstream: FakeUpstream) {
    const sent: any[] = [];
    const openai = new OpenAI({
      apiKey: "ktr_live_test",
      baseURL: "http://127.0.0.1:9/v1",
      maxRetries: 0,
      fetch: async (url, init) => {
        expect(String(url)).toBe("http://127.0.0.1:9/v1/responses");
        const body = JSON.parse(String(init?.body));
        sent.push(body);
        const { response } = await createResponse({
          body,
          tools: TOOLS,
          upstream,
          signal: new AbortController().signal,
          run: async () => ({ ok: true, data: [] }),
        });
        return response;
      },
    });
    return { openai, sent };
  }

  it("responses.create: output_text", async () => {
    const { openai } = client(new FakeUpstream([toolCalls([["c", "leads", "{}"]]), text("Three leads.")]));
    const response = await openai.responses.create({
      model: "gpt-4o-mini",
      input: "How many leads?",
      instructions: "Be brief.",
    });
    expect(response.output_text).toBe("Three leads.");
    expect(response.status).toBe("completed");
    expect(response.usage?.total_tokens).toBe(30);
  });

  it("responses.create with stream: true: typed events, ending in response.completed", async () => {
    const { openai } = client(new FakeUpstream([streamed(["Thr", "ee ", "leads."])]));
    const stream = await openai.responses.create({
      model: "gpt-4o-mini",
      input: "How many leads?",
      stream: true,
    });
    const types: string[] = [];
    let deltas = "";
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") deltas += event.delta;
      if (event.type === "response.completed") final = event.response;
    }
    expect(deltas).toBe("Three leads.");
    expect(types.filter((t) => t === "response.output_text.delta")).toHaveLength(3);
    expect(final?.output[0]).toMatchObject({
      type: "message",
      content: [{ type: "output_text", text: "Three leads." }],
    });
    expect(final?.usage).toMatchObject({ input_tokens: 7, output_tokens: 3 });
  });

  it("responses.stream: the SDK's accumulator builds the final response", async () => {
    const { openai } = client(new FakeUpstream([streamed(["Hello", ", world"])]));
    const runner = openai.responses.stream({ model: "gpt-4o-mini", input: "Say hello" });
    const texts: string[] = [];
    runner.on("response.output_text.delta", (event) => texts.push(event.delta));
    const final = await runner.finalResponse();
    expect(texts).toEqual(["Hello", ", world"]);
    expect(final.output_text).toBe("Hello, world");
  });

  it("a refused request surfaces as the SDK's error with Kontor's code", async () => {
    const openai = new OpenAI({
      apiKey: "ktr_live_test",
      baseURL: "http://127.0.0.1:9/v1",
      maxRetries: 0,
      // What the route answers for a thrown ApiError (REST error body).
      fetch: async (_url, init) => {
        try {
          await createResponse({
            body: JSON.parse(String(init?.body)),
            tools: TOOLS,
            upstream: new FakeUpstream([]),
            signal: new AbortController().signal,
            run: async () => null,
          });
          throw new Error("expected a refusal");
        } catch (error) {
          const e = error as ApiError;
          return Response.json(
            { error: { type: e.type, code: e.code, message: e.message, param: e.param } },
            { status: e.status },
          );
        }
      },
    });
    const error = await openai.responses
      .create({
        model: "m",
        input: "x",
        tools: [{ type: "function", name: "f", parameters: {}, strict: false }],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ status: 400, code: "validation_failed", param: "tools" });
  });
});
