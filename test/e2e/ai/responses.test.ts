import OpenAI from "openai";
import type { Response as OpenAIResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import { DEFAULT_MAX_ROUNDS } from "../../../server/ai/responses.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import {
  completion,
  completionBody,
  error as upstreamError,
  gate,
  hang,
  headThenHang,
  startFakeOpenAI,
  stream,
  usageOf,
  type ChatUsage,
  type FakeRequest,
  type Handler,
} from "../../support/fake-openai.ts";
import { raw, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { startTestServer, type Tenant, type TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * POST /v1/responses end to end, against the OpenAI-compatible fake provider on loopback and
 * through the official `openai` client: the tool loop over the workspace's real data (run as the
 * caller, this workspace only), the tools a credential's scopes allow, the request forms and their
 * validation, the bound on rounds, the Responses event stream (paced by the fake's gate), scopes,
 * the AI rate-limit column and the coding plan, the request log's model and tokens, and provider
 * failures without the provider's key.
 */

const SECRET = "sk-upstream-secret-responses";
const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/**
 * The fake's answers, one per upstream request, in order; reset before every test so a failing
 * test leaves nothing queued for the next. Past the script, `fallback` answers.
 */
let script: Handler[] = [];
const DEFAULT_TEXT = "The default answer.";
const defaultAnswer: Handler = (request, res) => textRound(DEFAULT_TEXT, usageOf(9, 3))(request, res);
let fallback: Handler = defaultAnswer;
fake.setDefault((request, res) => (script.shift() ?? fallback)(request, res));
beforeEach(() => {
  script = [];
  fallback = defaultAnswer;
});

interface Call {
  id: string;
  name: string;
  args: unknown;
}

/** A JSON completion calling `calls`. */
const jsonToolCalls = (calls: Call[], usage: ChatUsage): Handler =>
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
            tool_calls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } })),
          },
          logprobs: null,
          finish_reason: "tool_calls",
        },
      ],
    },
  });

/** A chat-completion stream calling `calls`: each call's arguments in two pieces, as OpenAI streams them. */
const streamedToolCalls =
  (calls: Call[], usage: ChatUsage): Handler =>
  async (request, res) => {
    const base = { id: "chatcmpl-fake-tools", object: "chat.completion.chunk", created: 1_760_000_000, model: "gpt-4o-mini-2024-07-18" };
    const chunk = (delta: Record<string, unknown>, finish: string | null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    const events: unknown[] = [chunk({ role: "assistant", content: null }, null)];
    calls.forEach((call, index) => {
      const args = JSON.stringify(call.args);
      const half = Math.floor(args.length / 2);
      events.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }, null));
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
const toolRound =
  (calls: Call[], usage: ChatUsage): Handler =>
  (request, res) =>
    (request.json?.stream === true ? streamedToolCalls : jsonToolCalls)(calls, usage)(request, res);

/** A round answering `text`, as JSON or as a stream (one delta per word), whichever the request asked for. */
const textRound =
  (text: string, usage: ChatUsage): Handler =>
  (request, res) =>
    (request.json?.stream === true ? stream({ deltas: text.split(/(?<= )/), usage }) : completion({ text, usage }))(request, res);

/** The requests the fake received after `before` of them. */
const since = (before: number) => fake.requests.slice(before);

/** The tool messages of an upstream request, their content parsed. */
const toolResults = (request: FakeRequest) =>
  (request.json.messages as { role: string; tool_call_id?: string; content: string }[])
    .filter((message) => message.role === "tool")
    .map((message) => ({ id: message.tool_call_id, raw: message.content, result: JSON.parse(message.content) }));

const toolNames = (request: FakeRequest) => ((request.json.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name).sort();

/** The response shows nothing of the provider's key: neither body nor any header. */
function expectNoSecret(response: { text: string; headers: Headers }) {
  expect(response.text).not.toContain(SECRET);
  expect(response.text).not.toContain("upstream-secret");
  for (const [name, value] of response.headers) expect(`${name}: ${value}`).not.toContain("upstream-secret");
}

interface SseEvent {
  event: string | undefined;
  data: any;
}

/** The server-sent events of a body: each `event:` name with its parsed `data:`. */
function parseSse(text: string): SseEvent[] {
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

/** Every item of an async iterable, failing (not hanging) when it does not end in time. */
async function collect<T>(source: AsyncIterable<T>, abort: () => void, timeoutMs = 8_000): Promise<T[]> {
  const out: T[] = [];
  const iterator = source[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), Math.max(0, deadline - Date.now()))));
    const next = await Promise.race([iterator.next(), late]).finally(() => clearTimeout(timer));
    if (next === "late") {
      abort();
      throw new Error(`the stream did not end within ${timeoutMs} ms; ${out.length} events arrived`);
    }
    if (next.done) return out;
    out.push(next.value);
  }
}

const usageOfResponse = (input: number, output: number) => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: input + output,
});

/** A 1×1 PNG as a data: URL. */
const PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/** Tools that must never be offered: configuration, traffic and identities are not business data. */
const NOT_BUSINESS = /^(events?|webhook\w*|requestLog\w*|agent\w*|trustedProvider\w*)$/i;

e2e(
  "AI responses",
  (server) => {
    const client = (key: string, base = server().api) => new OpenAI({ apiKey: key, baseURL: base, maxRetries: 0 });
    const responsesUrl = (base = server().api) => `${base}/responses`;
    const post = (key: string, body: unknown, base = server().api) =>
      raw(responsesUrl(base), {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    const tenant = (plan: PlanName = "pro", scopes?: string[]) => server().tenant({ plan, ...(scopes && { scopes }) });

    /** A workspace (max plan: 120 AI requests a minute, room for every test below) with leads, a client and an invoice, created through REST; and a second workspace with an Ada of its own. */
    interface Seeded {
      owner: Tenant;
      ada: any;
      grace: any;
      client: any;
      invoice: any;
      other: Tenant;
      otherAda: any;
    }
    let seeded: Seeded;
    beforeAll(async () => {
      const owner = await tenant("max");
      const api = rest(server().api, owner.key);
      const created = async (path: string, body: unknown) => {
        const res = await api.post(path, body);
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return res.body;
      };
      const ada = await created("/leads", { full_name: "Ada Lovelace", company_name: "Analytical Engines", stage: "qualified", estimated_value: 1200 });
      const grace = await created("/leads", { full_name: "Grace Hopper", company_name: "Compilers Inc", stage: "new" });
      const customer = await created("/clients", { name: "Babbage Difference Works", email: "billing@babbage.example" });
      const invoice = await created("/invoices", {
        client_id: customer.id,
        items: [
          { description: "Difference engine tuning", quantity: 3, unit_price: 250 },
          { description: "Punch cards", quantity: 100, unit_price: 1.5 },
        ],
      });
      const other = await tenant("pro");
      const otherAda = (await rest(server().api, other.key).post("/leads", { full_name: "Ada Gordon", company_name: "Elsewhere Ltd" })).body;
      expect(otherAda.id).toMatch(/^lead_/);
      seeded = { owner, ada, grace, client: customer, invoice, other, otherAda };
    });

    describe("the tool loop over the workspace's data", () => {
      it("runs a leads tool call as the caller and answers with the model's final text (official client)", async () => {
        const { owner, ada, grace, otherAda } = seeded;
        const before = fake.requests.length;
        const answer = "You have one lead called Ada: Ada Lovelace of Analytical Engines (qualified).";
        script = [toolRound([{ id: "call_leads_1", name: "leads", args: { search: "Ada" } }], usageOf(100, 20)), textRound(answer, usageOf(250, 30))];

        const { data, response } = await client(owner.key)
          .responses.create({ model: "gpt-4o-mini", input: "Which of my leads are called Ada?" })
          .withResponse();
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^application\/json/);
        expect(data.object).toBe("response");
        expect(data.id).toMatch(/^resp_/);
        expect(data.status).toBe("completed");
        expect(data.output_text).toBe(answer);
        expect(data.model).toBe("gpt-4o-mini");
        expect(data.error).toBeNull();
        expect(data.incomplete_details).toBeNull();
        expect(data.output).toHaveLength(1);
        expect(data.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: answer }] });
        // Kontor's tools are its own: the response lists none of the caller's.
        expect(data.tools).toEqual([]);
        expect(data.usage).toEqual(usageOfResponse(350, 50));
        // A general-AI answer carries no coding-plan headers.
        expect(response.headers.get("x-codingplan-5h-used-percent")).toBeNull();

        const upstream = since(before);
        expect(upstream).toHaveLength(2);
        const [first, second] = upstream as [FakeRequest, FakeRequest];
        for (const request of upstream) {
          expect(request.path).toBe("/v1/chat/completions");
          expect(request.headers.authorization).toBe(`Bearer ${SECRET}`);
          expect(request.body).not.toContain(owner.key);
          expect(JSON.stringify(request.headers)).not.toContain(owner.key);
        }
        expect(first.json.model).toBe("gpt-4o-mini");
        expect(first.json.messages).toEqual([{ role: "user", content: "Which of my leads are called Ada?" }]);
        expect(first.json.tool_choice).toBe("auto");
        expect(first.json.stream).toBeUndefined();
        expect(toolNames(first)).toEqual(expect.arrayContaining(["leads", "lead", "clients", "invoices", "workspace"]));

        // The second round: the conversation so far, the assistant's call, then the tool's result.
        expect(second.json.messages.slice(0, 2)).toEqual([
          { role: "user", content: "Which of my leads are called Ada?" },
          { role: "assistant", content: null, tool_calls: [{ id: "call_leads_1", type: "function", function: { name: "leads", arguments: '{"search":"Ada"}' } }] },
        ]);
        expect(second.json.messages).toHaveLength(3);
        const [result] = toolResults(second);
        expect(toolResults(second)).toHaveLength(1);
        expect(result!.id).toBe("call_leads_1");
        expect(result!.result.ok).toBe(true);
        const page = result!.result.data;
        expect(page.object).toBe("list");
        expect(page.data.map((lead: { id: string }) => lead.id)).toEqual([ada.id]);
        expect(page.data[0]).toMatchObject({ object: "lead", full_name: "Ada Lovelace", company_name: "Analytical Engines", stage: "qualified" });
        // What the REST route answers for the same question, no more, no less.
        const viaRest = await rest(server().api, owner.key).get("/leads?search=Ada");
        expect(viaRest.status).toBe(200);
        expect(page).toEqual(viaRest.body);
        // Only this workspace's data, and only what was asked for.
        expect(result!.raw).not.toContain(otherAda.id);
        expect(result!.raw).not.toContain("Gordon");
        expect(result!.raw).not.toContain(grace.id);
        expect(result!.raw).not.toContain(seeded.other.workspaceId);
      });

      it("runs several tool calls of one round (clients, invoices, and a lead of another workspace) over a stream (responses.stream().finalResponse())", async () => {
        const { owner, client: customer, invoice, otherAda } = seeded;
        const before = fake.requests.length;
        const answer = "Babbage Difference Works owes one draft invoice.";
        script = [
          toolRound(
            [
              { id: "call_c", name: "clients", args: { search: "Babbage" } },
              { id: "call_i", name: "invoices", args: { client_id: customer.id } },
              { id: "call_x", name: "lead", args: { id: otherAda.id } },
            ],
            usageOf(120, 40),
          ),
          textRound(answer, usageOf(400, 25)),
        ];
        const deltas: string[] = [];
        const runner = client(owner.key)
          .responses.stream({ model: "gpt-4o-mini", input: "What does Babbage owe?" })
          .on("response.output_text.delta", (event) => void deltas.push(event.delta));
        const final = await runner.finalResponse();
        expect(final.status).toBe("completed");
        expect(final.output_text).toBe(answer);
        expect(deltas.join("")).toBe(answer);
        expect(final.usage).toEqual(usageOfResponse(520, 65));

        const upstream = since(before);
        expect(upstream).toHaveLength(2);
        const [first, second] = upstream as [FakeRequest, FakeRequest];
        for (const request of upstream) expect(request.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });
        expect(first.json.messages).toEqual([{ role: "user", content: "What does Babbage owe?" }]);
        // The streamed calls, reassembled, in their order.
        expect(second.json.messages[1]).toEqual({
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_c", type: "function", function: { name: "clients", arguments: JSON.stringify({ search: "Babbage" }) } },
            { id: "call_i", type: "function", function: { name: "invoices", arguments: JSON.stringify({ client_id: customer.id }) } },
            { id: "call_x", type: "function", function: { name: "lead", arguments: JSON.stringify({ id: otherAda.id }) } },
          ],
        });
        const results = toolResults(second);
        expect(results.map((r) => r.id)).toEqual(["call_c", "call_i", "call_x"]);
        const [clients, invoices, foreign] = results as [any, any, any];
        const api = rest(server().api, owner.key);
        expect(clients.result).toEqual({ ok: true, data: (await api.get("/clients?search=Babbage")).body });
        expect(clients.result.data.data.map((c: { id: string }) => c.id)).toEqual([customer.id]);
        expect(invoices.result).toEqual({ ok: true, data: (await api.get(`/invoices?client_id=${customer.id}`)).body });
        expect(invoices.result.data.data).toHaveLength(1);
        expect(invoices.result.data.data[0]).toMatchObject({ id: invoice.id, invoice_number: invoice.invoice_number, total: invoice.total, status: "draft" });
        // Another workspace's lead is not found, exactly as REST says.
        expect(foreign.result.ok).toBe(false);
        expect(foreign.result.error.code).toBe("not_found");
        expect(foreign.raw).not.toContain("Gordon");
        expect(foreign.raw).not.toContain("Elsewhere");
      });

      it("answers a tool call the model got wrong with an error result and goes on", async () => {
        const { owner } = seeded;
        const before = fake.requests.length;
        script = [
          jsonToolCalls(
            [
              { id: "call_bad_stage", name: "leads", args: { stage: "closed" } },
              { id: "call_no_tool", name: "deleteLead", args: { id: seeded.ada.id } },
            ],
            usageOf(10, 5),
          ),
          completion({ text: "Sorry.", usage: usageOf(20, 2) }),
        ];
        const answer = await client(owner.key).responses.create({ model: "gpt-4o-mini", input: "Closed leads?" });
        expect(answer.status).toBe("completed");
        expect(answer.output_text).toBe("Sorry.");
        const [badStage, noTool] = toolResults(since(before)[1]!) as [any, any];
        expect(badStage.result).toMatchObject({ ok: false, error: { code: "validation_failed", param: "stage" } });
        expect(noTool.result).toMatchObject({ ok: false, error: { code: "unknown_tool" } });
        // Nothing was deleted: the tools only read.
        expect((await rest(server().api, owner.key).get(`/leads/${seeded.ada.id}`)).status).toBe(200);
      });
    });

    describe("the tools follow the caller's scopes", () => {
      it("a key with ai.responses + leads.read is offered lead tools and the workspace, never invoices; a forced invoice call gets an error", async () => {
        const { owner, invoice, client: customer } = seeded;
        const narrow = await server().key(owner.workspaceId, ["ai.responses", "leads.read"]);
        const before = fake.requests.length;
        script = [
          toolRound(
            [
              { id: "call_inv", name: "invoices", args: {} },
              { id: "call_one", name: "invoice", args: { id: invoice.id } },
              { id: "call_cli", name: "clients", args: { search: "Babbage" } },
            ],
            usageOf(50, 10),
          ),
          textRound("I cannot see invoices.", usageOf(60, 5)),
        ];
        const answer = await client(narrow.key).responses.create({ model: "gpt-4o-mini", input: "List my invoices." });
        expect(answer.status).toBe("completed");
        expect(answer.output_text).toBe("I cannot see invoices.");

        const [first, second] = since(before) as [FakeRequest, FakeRequest];
        expect(since(before)).toHaveLength(2);
        expect(toolNames(first)).toEqual(["lead", "leads", "workspace"]);
        expect(toolNames(second)).toEqual(["lead", "leads", "workspace"]);
        for (const tool of first.json.tools) {
          expect(tool.type).toBe("function");
          expect(typeof tool.function.description).toBe("string");
          expect(tool.function.parameters).toMatchObject({ type: "object", additionalProperties: false });
        }
        const results = toolResults(second);
        expect(results.map((r) => r.id)).toEqual(["call_inv", "call_one", "call_cli"]);
        for (const result of results) {
          expect(result.result.ok).toBe(false);
          expect(result.result.error.code).toBe("unknown_tool");
          // No invoice or client data: not its id, number, amounts, lines or the client's name.
          for (const secret of [invoice.invoice_number, customer.id, "Difference engine", "Punch cards", "Babbage", String(invoice.total)]) {
            expect(result.raw).not.toContain(secret);
          }
        }
      });

      it("a key with every scope is offered the business tools, never webhooks, events, request logs or agents", async () => {
        const before = fake.requests.length;
        script = [textRound("ok", usageOf(1, 1))];
        await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Hi" });
        const names = toolNames(since(before)[0]!);
        expect(names).toEqual(
          expect.arrayContaining(["workspace", "leads", "lead", "clients", "client", "invoices", "invoice", "inventoryItems", "projects", "tasks", "files", "buckets"]),
        );
        expect(names.filter((name) => NOT_BUSINESS.test(name))).toEqual([]);
        expect(names.some((name) => /webhook|event|log|agent|provider/i.test(name))).toBe(false);
      });

      it("a key with ai.responses and write scopes only gets just the workspace tool; tool_choice naming a tool it lacks is 400 before the provider", async () => {
        const writer = await server().key(seeded.owner.workspaceId, ["ai.responses", "leads.write", "invoices.write"]);
        const before = fake.requests.length;
        script = [textRound("ok", usageOf(1, 1))];
        await client(writer.key).responses.create({ model: "gpt-4o-mini", input: "Hi" });
        expect(toolNames(since(before)[0]!)).toEqual(["workspace"]);

        const narrow = await server().key(seeded.owner.workspaceId, ["ai.responses", "leads.read"]);
        const middle = fake.requests.length;
        const refused = await post(narrow.key, { model: "gpt-4o-mini", input: "x", tool_choice: { type: "function", name: "invoices" } });
        expect(refused.status).toBe(400);
        expect(refused.json.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param: "tool_choice.name" });
        expect(since(middle)).toHaveLength(0);
      });
    });

    describe("request forms", () => {
      it("takes the plain prompt: one user message, no system message", async () => {
        const before = fake.requests.length;
        const response = await post(seeded.owner.key, { model: "gpt-4o-mini", prompt: "How many leads do I have?" });
        expect(response.status).toBe(200);
        expect(response.json).toMatchObject({ object: "response", status: "completed", instructions: null });
        expect(response.json.output[0].content[0].text).toBe(DEFAULT_TEXT);
        const [upstream] = since(before) as [FakeRequest];
        expect(upstream.json.messages).toEqual([{ role: "user", content: "How many leads do I have?" }]);
      });

      it("takes input as a string; instructions become the only system message", async () => {
        const before = fake.requests.length;
        const instructions = "Answer in French, in one sentence.";
        const answer = await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Hello?", instructions });
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
        expect(upstream.json).toMatchObject({ temperature: 0.2, max_completion_tokens: 64, tool_choice: { type: "function", function: { name: "leads" } } });
      });

      it("refuses a bad body with 400 validation_failed naming the parameter, and nothing reaches the provider", async () => {
        const key = seeded.owner.key;
        const before = fake.requests.length;
        const cases: [unknown, string][] = [
          [{ model: "gpt-4o-mini" }, "input"],
          [{ model: "gpt-4o-mini", input: "a", prompt: "b" }, "prompt"],
          [{ model: "gpt-4o-mini", input: "a", tools: [{ type: "function", name: "get_weather", parameters: { type: "object" } }] }, "tools"],
          [{ model: "gpt-4o-mini", prompt: { id: "pmpt_123" } }, "prompt"],
          [{ model: "gpt-4o-mini", input: [] }, "input"],
          [{ model: "gpt-4o-mini", input: [{ type: "function_call_output", call_id: "c", output: "x" }] }, "input[0].type"],
          [{ model: "gpt-4o-mini", input: "a", previous_response_id: "resp_x" }, "previous_response_id"],
          [{ model: "gpt-4o-mini", input: "a", temperature: 5 }, "temperature"],
          [{ input: "a" }, "model"],
        ];
        for (const [body, param] of cases) {
          const response = await post(key, body);
          expect(response.status, JSON.stringify(body)).toBe(400);
          expect(response.json.error, JSON.stringify(body)).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
          expect(response.json.error.request_id).toBe(response.headers.get("x-request-id"));
        }
        // The official client gets the same 400, as an error it understands.
        const thrown = await client(key)
          .responses.create({ model: "gpt-4o-mini", input: "a", tools: [{ type: "function", name: "f", parameters: { type: "object" }, strict: false }] })
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

    describe("bounded rounds", () => {
      it("a model that calls tools forever stops after the maximum rounds with status incomplete", async () => {
        expect(DEFAULT_MAX_ROUNDS).toBe(6);
        let n = 0;
        fallback = (request, res) => toolRound([{ id: `call_loop_${++n}`, name: "workspace", args: {} }], usageOf(10, 2))(request, res);
        const before = fake.requests.length;
        const answer = await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Loop forever." });
        expect(answer.status).toBe("incomplete");
        expect(answer.incomplete_details).toEqual({ reason: "max_tool_rounds" });
        expect(answer.output).toEqual([]);
        expect(answer.output_text).toBe("");
        expect(answer.usage).toEqual(usageOfResponse(60, 12));
        const upstream = since(before);
        expect(upstream).toHaveLength(6);
        // Each round but the first carries every call and result so far; the workspace tool really ran.
        const last = upstream.at(-1)!;
        const results = toolResults(last);
        expect(results).toHaveLength(5);
        for (const result of results) expect(result.result).toMatchObject({ ok: true, data: { object: "workspace", id: seeded.owner.workspaceId } });

        // Streamed: the same bound, ending with response.incomplete.
        const streamedBefore = fake.requests.length;
        const runner = client(seeded.owner.key).responses.stream({ model: "gpt-4o-mini", input: "Loop forever, streamed." });
        const types: string[] = [];
        runner.on("event", (event) => void types.push(event.type));
        const final = await runner.finalResponse();
        expect(final.status).toBe("incomplete");
        expect(final.incomplete_details).toEqual({ reason: "max_tool_rounds" });
        expect(final.usage).toEqual(usageOfResponse(60, 12));
        expect(types).toEqual(["response.created", "response.in_progress", "response.incomplete"]);
        expect(since(streamedBefore)).toHaveLength(6);
      });
      it("runs at most 16 tool calls of one round; the others are answered with too_many_tool_calls", async () => {
        const calls = Array.from({ length: 17 }, (_, i) => ({ id: `call_${i}`, name: "workspace", args: {} }));
        const before = fake.requests.length;
        script = [jsonToolCalls(calls, usageOf(10, 10)), completion({ text: "Done.", usage: usageOf(10, 1) })];
        const answer = await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Many calls." });
        expect(answer.status).toBe("completed");
        const results = toolResults(since(before)[1]!);
        expect(results.map((r) => r.id)).toEqual(calls.map((c) => c.id));
        for (const result of results.slice(0, 16)) expect(result.result).toMatchObject({ ok: true, data: { object: "workspace" } });
        expect(results[16]!.result).toMatchObject({ ok: false, error: { code: "too_many_tool_calls" } });
      });

      it("a provider stopping for length is incomplete (max_output_tokens), the partial text kept", async () => {
        script = [
          completion({
            usage: usageOf(12, 4),
            extra: { choices: [{ index: 0, message: { role: "assistant", content: "Cut sho", refusal: null }, logprobs: null, finish_reason: "length" }] },
          }),
        ];
        const answer = await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Write a lot.", max_output_tokens: 4 });
        expect(answer.status).toBe("incomplete");
        expect(answer.incomplete_details).toEqual({ reason: "max_output_tokens" });
        expect(answer.output_text).toBe("Cut sho");
        expect(answer.output[0]).toMatchObject({ type: "message", status: "incomplete" });
        expect(answer.usage).toEqual(usageOfResponse(12, 4));
      });
    });

    describe("streaming", () => {
      it("sends the Responses events in order, the first delta before the provider releases the rest", async () => {
        const tenantKey = seeded.owner.key;
        const hold = gate();
        const before = fake.requests.length;
        script = [stream({ deltas: ["Hello", ", ", "world!"], usage: usageOf(21, 7), holdAfter: 2, gate: hold.promise })];
        const response = await fetch(responsesUrl(), {
          method: "POST",
          headers: { authorization: `Bearer ${tenantKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "gpt-4o-mini", input: "Greet me.", stream: true }),
          signal: AbortSignal.timeout(10_000),
        });
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(response.headers.get("x-ratelimit-limit")).toBe(String(PLAN_LIMITS.max.ai_requests_per_minute));
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
        expect(events.filter((e) => e.data.type === "response.output_text.delta").map((e) => e.data.delta)).toEqual(["Hello", ", ", "world!"]);
        const created = events[0]!.data.response;
        const completed = events.at(-1)!.data.response;
        expect(created).toMatchObject({ object: "response", status: "in_progress", output: [] });
        expect(completed).toMatchObject({ id: created.id, object: "response", status: "completed", model: "gpt-4o-mini" });
        expect(completed.output).toEqual([
          { type: "message", id: expect.stringMatching(/^msg_/), status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hello, world!", annotations: [], logprobs: [] }] },
        ]);
        expect(completed.usage).toEqual(usageOfResponse(21, 7));
        expect(events.find((e) => e.data.type === "response.output_text.done")!.data.text).toBe("Hello, world!");
        for (const event of events.slice(2, -1)) expect(event.data.item_id ?? event.data.item.id).toBe(completed.output[0].id);
        // The provider was asked to stream, with its usage.
        expect(upstream.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });

        // The same stream passes the OpenAPI check.
        script = [stream({ deltas: ["a", "b"] })];
        const checked = await post(tenantKey, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(checked.status).toBe(200);
        expect(parseSse(checked.text).map((e) => e.data.type)).toEqual(streamedTypes(2));
      });

      it("the official client's stream gives the events and the first delta while the provider holds the rest", async () => {
        const hold = gate();
        script = [stream({ deltas: ["One", " two", " three"], usage: usageOf(5, 3), holdAfter: 2, gate: hold.promise })];
        const created = await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Count.", stream: true });
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
        const remaining = await collect({ [Symbol.asyncIterator]: () => iterator }, () => created.controller.abort());
        const all = [...seen, ...remaining];
        expect(all.map((e) => e.type)).toEqual(streamedTypes(3));
        const done = all.at(-1) as { type: "response.completed"; response: OpenAIResponse };
        expect(done.response.status).toBe("completed");
        expect(done.response.usage).toEqual(usageOfResponse(5, 3));

        // And the stream helper assembles the same answer.
        script = [stream({ deltas: ["One", " two", " three"], usage: usageOf(5, 3) })];
        const runner = client(seeded.owner.key).responses.stream({ model: "gpt-4o-mini", input: "Count." });
        let snapshot = "";
        runner.on("response.output_text.delta", (event) => void (snapshot = event.snapshot));
        const final = await runner.finalResponse();
        expect(final.output_text).toBe("One two three");
        expect(snapshot).toBe("One two three");
      });
    });

    describe("scopes, rate limits and metering", () => {
      it("a credential with neither ai.responses nor ai.coding is 403 insufficient_scope (ai.responses), before the provider", async () => {
        const key = await server().key(seeded.owner.workspaceId, ["leads.read", "invoices.read"]);
        const before = fake.requests.length;
        const response = await post(key.key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(403);
        expect(response.json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "ai.responses" });
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
          expect(response.headers.get("x-ratelimit-limit")).toBe(String(PLAN_LIMITS[plan].ai_requests_per_minute));
          expect(response.headers.get("x-ratelimit-limit")).toBe(plan === "plus" ? "40" : "120");
        }
      });

      it("a credential with ai.coding only is metered by tokens: the x-codingplan-* headers, and the tokens of every round counted", async () => {
        const free = await tenant("free", ["ai.coding"]);
        const limits = PLAN_LIMITS.free;
        const before = fake.requests.length;
        script = [toolRound([{ id: "call_ws", name: "workspace", args: {} }], usageOf(1_000, 200)), textRound("Your workspace.", usageOf(3_000, 300))];
        const { data, response } = await client(free.key).responses.create({ model: "gpt-4o-mini", input: "Which workspace is this?" }).withResponse();
        expect(data.output_text).toBe("Your workspace.");
        expect(data.usage).toEqual(usageOfResponse(4_000, 500));
        expect(response.headers.get("x-codingplan-5h-used-percent")).toBe("0");
        expect(response.headers.get("x-codingplan-weekly-used-percent")).toBe("0");
        expect(Date.parse(response.headers.get("x-codingplan-5h-reset")!)).toBeGreaterThan(Date.now() - 1_000);
        expect(Date.parse(response.headers.get("x-codingplan-weekly-reset")!)).toBeGreaterThan(Date.now() - 1_000);
        // Coding use does not count in the AI column: the general one.
        expect(response.headers.get("x-ratelimit-limit")).toBe(String(limits.requests_per_minute));
        // A coding-only key reads nothing but the workspace summary.
        expect(toolNames(since(before)[0]!)).toEqual(["workspace"]);

        // 4 500 tokens of 200 000 (5 h) and 1 000 000 (week).
        const second = await post(free.key, { model: "gpt-4o-mini", input: "Again?" });
        expect(second.status).toBe(200);
        expect(second.headers.get("x-codingplan-5h-used-percent")).toBe(String(Math.round((4_500 / limits.coding_tokens_5h) * 10_000) / 100));
        expect(second.headers.get("x-codingplan-5h-used-percent")).toBe("2.25");
        expect(second.headers.get("x-codingplan-weekly-used-percent")).toBe("0.45");

        // A stream: the headers in its head, and its tokens counted once it has ended (9 + 3 more).
        script = [stream({ deltas: ["streamed"], usage: usageOf(5_000, 500) })];
        const { data: streamed, response: head } = await client(free.key).responses.create({ model: "gpt-4o-mini", input: "Stream.", stream: true }).withResponse();
        expect(head.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(head.headers.get("x-codingplan-5h-used-percent")).toBe(String(Math.round((4_512 / limits.coding_tokens_5h) * 10_000) / 100));
        const events = await collect(streamed, () => streamed.controller.abort());
        expect(events.at(-1)!.type).toBe("response.completed");
        const third = await post(free.key, { model: "gpt-4o-mini", input: "After the stream?" });
        expect(third.headers.get("x-codingplan-5h-used-percent")).toBe(String(Math.round((10_012 / limits.coding_tokens_5h) * 10_000) / 100));
      });

      it("a coding pool spent is 429 rate_limit_exceeded with the coding headers, before the provider", async () => {
        const free = await tenant("free", ["ai.coding"]);
        script = [completion({ text: "big", usage: usageOf(150_000, 50_001) })];
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
        expect(notInPlan.headers.get("x-codingplan-5h-used-percent"), "coding headers on a /responses model_not_available").toBe("0");
        const notJson = await post(fresh.key, "{ nope");
        expect(notJson.status).toBe(400);
        expect(notJson.headers.get("x-codingplan-5h-used-percent"), "coding headers on a /responses invalid_json").toBe("0");
      });

      it("an idempotent replay of a coding answer carries the coding headers", async () => {
        const coding = await tenant("free", ["ai.coding"]);
        const idem = `coding-${Date.now()}-${Math.random()}`;
        const send = (path: string, body: unknown) =>
          raw(`${server().api}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${coding.key}`, "content-type": "application/json", "idempotency-key": `${idem}${path}` },
            body: JSON.stringify(body),
          });
        const responsesBody = { model: "gpt-4o-mini", input: "x" };
        expect((await send("/responses", responsesBody)).headers.get("x-codingplan-5h-used-percent")).toBe("0");
        const replayed = await send("/responses", responsesBody);
        expect(replayed.headers.get("idempotent-replay")).toBe("true");
        expect.soft(replayed.headers.get("x-codingplan-5h-used-percent"), "coding headers on a replayed /v1/responses").not.toBeNull();
        // /v1/chat/completions: the document requires the four headers on its 200, a replay included.
        const chatBody = { model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] };
        expect((await send("/chat/completions", chatBody)).status).toBe(200);
        const chatReplay = await send("/chat/completions", chatBody).catch((error: Error) => error);
        expect
          .soft(chatReplay instanceof Error ? chatReplay.message : "no OpenAPI mismatch", "a replayed /v1/chat/completions fits the document")
          .toBe("no OpenAPI mismatch");
      });

      it("a client leaving a stream aborts the provider's request and gives the coding slot back; meanwhile a second coding request is 429 concurrency_limit_exceeded", async () => {
        const free = await tenant("free", ["ai.coding"]);
        expect(PLAN_LIMITS.free.coding_concurrency).toBe(1);
        const hold = gate();
        const before = fake.requests.length;
        script = [stream({ deltas: ["first", " never", " sent"], holdAfter: 2, gate: hold.promise })];
        const abort = new AbortController();
        const created = await client(free.key).responses.create({ model: "gpt-4o-mini", input: "Talk.", stream: true }, { signal: abort.signal });
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
        script = [toolRound([{ id: "call_ws", name: "workspace", args: {} }], usageOf(10, 1)), headThenHang({ partial: '{"id": "chatcmpl-slow", "choices": [' })];
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
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "idempotency-key": idem },
            body: JSON.stringify({ model: "gpt-4o-mini", input }),
          });
        const before = fake.requests.length;
        script = [textRound("Only once.", usageOf(3, 1))];
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
          expect(response.json.error).toMatchObject({ type: "invalid_request_error", code: "model_not_available", param: "model" });
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
          expect((await post(coding.key, { model: "gpt-4o-mini", input: "x" }, bare.api)).json.error.code).toBe("ai_unavailable");
          const narrow = await bare.key(t.workspaceId, ["leads.read"]);
          expect((await post(narrow.key, { model: "gpt-4o-mini", input: "x" }, bare.api)).status).toBe(403);
          const free = await bare.tenant({ plan: "free" });
          expect((await post(free.key, { model: "o3", input: "x" }, bare.api)).json.error.code).toBe("model_not_available");
        });
      });
    });

    describe("request logs", () => {
      it("AI rows carry the model and the tokens the provider reported (summed over rounds, streams once ended); other rows have none", async () => {
        const owner = await tenant("pro");
        const openai = client(owner.key);

        // /v1/chat/completions
        script = [completion({ text: "chat", usage: usageOf(11, 5) })];
        const chat = await openai.chat.completions.create({ model: "gpt-4.1", messages: [{ role: "user", content: "Hi" }] }).withResponse();
        // /v1/responses with two rounds
        script = [toolRound([{ id: "call_l", name: "leads", args: {} }], usageOf(100, 20)), textRound("No leads.", usageOf(250, 30))];
        const loop = await openai.responses.create({ model: "gpt-4o-mini", input: "Leads?" }).withResponse();
        expect(loop.data.usage).toEqual(usageOfResponse(350, 50));

        // /v1/responses streamed, two rounds; held open after its first delta.
        const hold = gate();
        script = [
          toolRound([{ id: "call_w", name: "workspace", args: {} }], usageOf(60, 10)),
          stream({ deltas: ["Streamed", " answer"], usage: usageOf(70, 8), holdAfter: 2, gate: hold.promise }),
        ];
        const { data: streamed, response: streamHead } = await openai.responses.create({ model: "gpt-4.1-mini", input: "Stream it.", stream: true }).withResponse();
        const iterator = streamed[Symbol.asyncIterator]();
        for (;;) {
          const next = await iterator.next();
          if (next.done) throw new Error("the stream ended early");
          if (next.value.type === "response.output_text.delta") break;
        }
        const streamId = streamHead.headers.get("x-request-id")!;
        // While the stream runs, its row is not written: its tokens are not known yet.
        await flushRequestLogs(server().running.db);
        expect(await server().running.db.prisma.requestLog.findUnique({ where: { id: streamId } })).toBeNull();
        hold.open();
        const remaining = await collect({ [Symbol.asyncIterator]: () => iterator }, () => streamed.controller.abort());
        expect(remaining.at(-1)!.type).toBe("response.completed");

        // A failing provider: the row is still written, without tokens.
        script = [upstreamError(500, "boom", { type: "server_error" })];
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
          (body) => Object.values(ids).every((id) => body.data?.some((row: { request_id: string }) => row.request_id === id)),
        );
        const row = (id: string) => page.data.find((r: { request_id: string }) => r.request_id === id);
        expect(row(ids.chat)).toMatchObject({ method: "POST", route: "/v1/chat/completions", status: 200, model: "gpt-4.1", input_tokens: 11, output_tokens: 5 });
        expect(row(ids.loop)).toMatchObject({ method: "POST", route: "/v1/responses", status: 200, model: "gpt-4o-mini", input_tokens: 350, output_tokens: 50 });
        expect(row(ids.stream)).toMatchObject({ method: "POST", route: "/v1/responses", status: 200, model: "gpt-4.1-mini", input_tokens: 130, output_tokens: 18 });
        expect(row(ids.failed)).toMatchObject({ route: "/v1/responses", status: 502, error_code: "upstream_error", input_tokens: null, output_tokens: null });
        expect(row(ids.leads)).toMatchObject({ method: "GET", route: "/v1/leads", status: 200, model: null, input_tokens: null, output_tokens: null });
        for (const id of Object.values(ids)) expect(row(id).key_id).toBe(owner.keyId);
      });
      it("requests answered before the AI layer runs (an idempotent replay, a 429) are logged under their route template", async () => {
        const free = await tenant("free", ["ai.responses", "logs.read"]);
        const before = fake.requests.length;
        const idem = `responses-${Date.now()}-${Math.random()}`;
        const once = () =>
          raw(responsesUrl(), {
            method: "POST",
            headers: { authorization: `Bearer ${free.key}`, "content-type": "application/json", "idempotency-key": idem },
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
          async () => (await rest(server().api, free.key).get(`/request-logs?key_id=${free.keyId}&limit=100`)).body,
          (body) => wanted.every((id) => body.data?.some((row: { request_id: string }) => row.request_id === id)),
        );
        for (const id of wanted) {
          const row = page.data.find((r: { request_id: string }) => r.request_id === id);
          expect.soft(row.route, `the logged route of a ${row.status} on /v1/responses`).toBe("/v1/responses");
        }
      });

    });

    describe("when the provider fails", () => {
      it("a provider 500 is 502 upstream_error with its short message, not its key", async () => {
        const key = seeded.owner.key;
        script = [upstreamError(500, "The server had an error while processing your request.", { type: "server_error" })];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expect(response.json.error.message).toContain("The server had an error while processing your request.");
        expectNoSecret(response);

        script = [upstreamError(500, "boom")];
        const thrown = await client(key)
          .responses.create({ model: "gpt-4o-mini", input: "x" })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 502, code: "upstream_error" });

        // A stream whose first round fails is an HTTP error too, not a 200 stream.
        script = [upstreamError(500, "boom")];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(502);
        expect(streamed.json.error.code).toBe("upstream_error");
        expectNoSecret(streamed);
      });

      it("a provider error naming the key does not pass the key on", async () => {
        const key = seeded.owner.key;
        script = [upstreamError(401, `Incorrect API key provided: ${SECRET}. You can find your API key at https://platform.openai.com/account/api-keys.`, { code: "invalid_api_key" })];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        script = [upstreamError(429, `Rate limit reached for key ${SECRET}`)];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(502);
        expectNoSecret(streamed);
      });

      it("a failure in a later round is 502 without a stream, and response.failed at the end of a stream", async () => {
        const key = seeded.owner.key;
        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), upstreamError(500, `Key ${SECRET} rejected`)];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), upstreamError(500, `Key ${SECRET} rejected`)];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        expectNoSecret(streamed);
        const events = parseSse(streamed.text);
        expect(events.map((e) => e.data.type)).toEqual(["response.created", "response.in_progress", "response.failed"]);
        expect(events.at(-1)!.data.response).toMatchObject({ status: "failed", error: { code: "upstream_error" } });

        // The official client's helper reports the failed response.
        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), upstreamError(500, "late failure")];
        const final = await client(key).responses.stream({ model: "gpt-4o-mini", input: "x" }).finalResponse();
        expect(final.status).toBe("failed");
        expect(final.error).toMatchObject({ code: "upstream_error" });
      });

      it("a provider that cuts its stream off ends the answer with response.failed (upstream_error)", async () => {
        script = [stream({ deltas: ["partial", " answer", " never"], dropAfter: 3 })];
        const streamed = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        const events = parseSse(streamed.text);
        expect(events.filter((e) => e.data.type === "response.output_text.delta").map((e) => e.data.delta)).toEqual(["partial", " answer"]);
        const last = events.at(-1)!.data;
        expect(last.type).toBe("response.failed");
        expect(last.response.status).toBe("failed");
        expect(last.response.error, "a provider breaking off is the provider's failure").toMatchObject({ code: "upstream_error" });
      });

      it("a later round without a head in time is 504 upstream_timeout (no stream) or response.failed (stream)", async () => {
        const key = seeded.owner.key;
        const before = fake.requests.length;
        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), hang()];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(504);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
        expectNoSecret(response);
        const stuck = since(before)[1]!;
        expect(await eventually(async () => stuck.aborted, Boolean, 5_000)).toBe(true);

        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), hang()];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        const last = parseSse(streamed.text).at(-1)!.data;
        expect(last.type).toBe("response.failed");
        expect(last.response.error).toMatchObject({ code: "upstream_timeout" });
      });

      it("a provider answer that is not JSON is 502 upstream_error", async () => {
        script = [completion({ raw: '{"id": "chatcmpl-cut", "choi' })];
        const response = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        // A completion without a message is no answer either.
        script = [completion({ raw: JSON.stringify({ ...completionBody(), choices: [] }) })];
        const empty = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x" });
        expect(empty.status).toBe(502);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
