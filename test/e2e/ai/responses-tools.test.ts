import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_ROUNDS } from "../../../server/ai/responses.ts";
import { completion, type FakeRequest, usageOf } from "../../support/fake-openai.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import {
  jsonToolCalls,
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
 * through the official `openai` client: the tool loop over the workspace's real data (run as the
 * caller, this workspace only), the tools a credential's scopes allow, and the bound on rounds.
 * The request forms, the event stream and the request log are in responses-requests.test.ts;
 * scopes, the AI rate-limit column and the coding plan in responses-limits.test.ts; provider
 * failures in responses-failures.test.ts.
 */

const { fake, play, fallBackTo } = await scriptedFake();

/** The tool messages of an upstream request, their content parsed. */
const toolResults = (request: FakeRequest) =>
  (request.json.messages as { role: string; tool_call_id?: string; content: string }[])
    .filter((message) => message.role === "tool")
    .map((message) => ({
      id: message.tool_call_id,
      raw: message.content,
      result: JSON.parse(message.content),
    }));

/** Tools that must never be offered: configuration, traffic and identities are not business data. */
const NOT_BUSINESS = /^(events?|webhook\w*|requestLog\w*|agent\w*|trustedProvider\w*)$/i;

e2e(
  "AI responses: tools",
  (server) => {
    const { client, post, since, useSeeded } = responsesApi(server, fake);
    const seeded = useSeeded();

    describe("the tool loop over the workspace's data", () => {
      it("runs a leads tool call as the caller and answers with the model's final text (official client)", async () => {
        const { owner, ada, grace, otherAda } = seeded;
        const before = fake.requests.length;
        const answer = "You have one lead called Ada: Ada Lovelace of Analytical Engines (qualified).";
        play(
          toolRound([{ id: "call_leads_1", name: "leads", args: { search: "Ada" } }], usageOf(100, 20)),
          textRound(answer, usageOf(250, 30)),
        );

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
        expect(data.output[0]).toMatchObject({
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: answer }],
        });
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
        expect(toolNames(first)).toEqual(
          expect.arrayContaining(["leads", "lead", "clients", "invoices", "workspace"]),
        );

        // The second round: the conversation so far, the assistant's call, then the tool's result.
        expect(second.json.messages.slice(0, 2)).toEqual([
          { role: "user", content: "Which of my leads are called Ada?" },
          {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_leads_1",
                type: "function",
                function: { name: "leads", arguments: '{"search":"Ada"}' },
              },
            ],
          },
        ]);
        expect(second.json.messages).toHaveLength(3);
        const [result] = toolResults(second);
        expect(toolResults(second)).toHaveLength(1);
        expect(result!.id).toBe("call_leads_1");
        expect(result!.result.ok).toBe(true);
        const page = result!.result.data;
        expect(page.object).toBe("list");
        expect(page.data.map((lead: { id: string }) => lead.id)).toEqual([ada.id]);
        expect(page.data[0]).toMatchObject({
          object: "lead",
          full_name: "Ada Lovelace",
          company_name: "Analytical Engines",
          stage: "qualified",
        });
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
        play(
          toolRound(
            [
              { id: "call_c", name: "clients", args: { search: "Babbage" } },
              { id: "call_i", name: "invoices", args: { client_id: customer.id } },
              { id: "call_x", name: "lead", args: { id: otherAda.id } },
            ],
            usageOf(120, 40),
          ),
          textRound(answer, usageOf(400, 25)),
        );
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
        for (const request of upstream)
          expect(request.json).toMatchObject({ stream: true, stream_options: { include_usage: true } });
        expect(first.json.messages).toEqual([{ role: "user", content: "What does Babbage owe?" }]);
        // The streamed calls, reassembled, in their order.
        expect(second.json.messages[1]).toEqual({
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_c",
              type: "function",
              function: { name: "clients", arguments: JSON.stringify({ search: "Babbage" }) },
            },
            {
              id: "call_i",
              type: "function",
              function: { name: "invoices", arguments: JSON.stringify({ client_id: customer.id }) },
            },
            {
              id: "call_x",
              type: "function",
              function: { name: "lead", arguments: JSON.stringify({ id: otherAda.id }) },
            },
          ],
        });
        const results = toolResults(second);
        expect(results.map((r) => r.id)).toEqual(["call_c", "call_i", "call_x"]);
        const [clients, invoices, foreign] = results as [any, any, any];
        const api = rest(server().api, owner.key);
        expect(clients.result).toEqual({ ok: true, data: (await api.get("/clients?search=Babbage")).body });
        expect(clients.result.data.data.map((c: { id: string }) => c.id)).toEqual([customer.id]);
        expect(invoices.result).toEqual({
          ok: true,
          data: (await api.get(`/invoices?client_id=${customer.id}`)).body,
        });
        expect(invoices.result.data.data).toHaveLength(1);
        expect(invoices.result.data.data[0]).toMatchObject({
          id: invoice.id,
          invoice_number: invoice.invoice_number,
          total: invoice.total,
          status: "draft",
        });
        // Another workspace's lead is not found, exactly as REST says.
        expect(foreign.result.ok).toBe(false);
        expect(foreign.result.error.code).toBe("not_found");
        expect(foreign.raw).not.toContain("Gordon");
        expect(foreign.raw).not.toContain("Elsewhere");
      });

      it("answers a tool call the model got wrong with an error result and goes on", async () => {
        const { owner } = seeded;
        const before = fake.requests.length;
        play(
          jsonToolCalls(
            [
              { id: "call_bad_stage", name: "leads", args: { stage: "closed" } },
              { id: "call_no_tool", name: "deleteLead", args: { id: seeded.ada.id } },
            ],
            usageOf(10, 5),
          ),
          completion({ text: "Sorry.", usage: usageOf(20, 2) }),
        );
        const answer = await client(owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Closed leads?",
        });
        expect(answer.status).toBe("completed");
        expect(answer.output_text).toBe("Sorry.");
        const [badStage, noTool] = toolResults(since(before)[1]!) as [any, any];
        expect(badStage.result).toMatchObject({
          ok: false,
          error: { code: "validation_failed", param: "stage" },
        });
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
        play(
          toolRound(
            [
              { id: "call_inv", name: "invoices", args: {} },
              { id: "call_one", name: "invoice", args: { id: invoice.id } },
              { id: "call_cli", name: "clients", args: { search: "Babbage" } },
            ],
            usageOf(50, 10),
          ),
          textRound("I cannot see invoices.", usageOf(60, 5)),
        );
        const answer = await client(narrow.key).responses.create({
          model: "gpt-4o-mini",
          input: "List my invoices.",
        });
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
          for (const secret of [
            invoice.invoice_number,
            customer.id,
            "Difference engine",
            "Punch cards",
            "Babbage",
            String(invoice.total),
          ]) {
            expect(result.raw).not.toContain(secret);
          }
        }
      });

      it("a key with every scope is offered the business tools, never webhooks, events, request logs or agents", async () => {
        const before = fake.requests.length;
        play(textRound("ok", usageOf(1, 1)));
        await client(seeded.owner.key).responses.create({ model: "gpt-4o-mini", input: "Hi" });
        const names = toolNames(since(before)[0]!);
        expect(names).toEqual(
          expect.arrayContaining([
            "workspace",
            "leads",
            "lead",
            "clients",
            "client",
            "invoices",
            "invoice",
            "inventoryItems",
            "projects",
            "tasks",
            "files",
            "buckets",
          ]),
        );
        expect(names.filter((name) => NOT_BUSINESS.test(name))).toEqual([]);
        expect(names.some((name) => /webhook|event|log|agent|provider/i.test(name))).toBe(false);
      });

      it("a key with ai.responses and write scopes only gets just the workspace tool; tool_choice naming a tool it lacks is 400 before the provider", async () => {
        const writer = await server().key(seeded.owner.workspaceId, [
          "ai.responses",
          "leads.write",
          "invoices.write",
        ]);
        const before = fake.requests.length;
        play(textRound("ok", usageOf(1, 1)));
        await client(writer.key).responses.create({ model: "gpt-4o-mini", input: "Hi" });
        expect(toolNames(since(before)[0]!)).toEqual(["workspace"]);

        const narrow = await server().key(seeded.owner.workspaceId, ["ai.responses", "leads.read"]);
        const middle = fake.requests.length;
        const refused = await post(narrow.key, {
          model: "gpt-4o-mini",
          input: "x",
          tool_choice: { type: "function", name: "invoices" },
        });
        expect(refused.status).toBe(400);
        expect(refused.json.error).toMatchObject({
          type: "invalid_request_error",
          code: "validation_failed",
          param: "tool_choice.name",
        });
        expect(since(middle)).toHaveLength(0);
      });
    });

    describe("bounded rounds", () => {
      it("a model that calls tools forever stops after the maximum rounds with status incomplete", async () => {
        expect(DEFAULT_MAX_ROUNDS).toBe(6);
        let n = 0;
        fallBackTo((request, res) =>
          toolRound([{ id: `call_loop_${++n}`, name: "workspace", args: {} }], usageOf(10, 2))(request, res),
        );
        const before = fake.requests.length;
        const answer = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Loop forever.",
        });
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
        for (const result of results)
          expect(result.result).toMatchObject({
            ok: true,
            data: { object: "workspace", id: seeded.owner.workspaceId },
          });

        // Streamed: the same bound, ending with response.incomplete.
        const streamedBefore = fake.requests.length;
        const runner = client(seeded.owner.key).responses.stream({
          model: "gpt-4o-mini",
          input: "Loop forever, streamed.",
        });
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
        const calls = Array.from({ length: 17 }, (_, i) => ({
          id: `call_${i}`,
          name: "workspace",
          args: {},
        }));
        const before = fake.requests.length;
        play(jsonToolCalls(calls, usageOf(10, 10)), completion({ text: "Done.", usage: usageOf(10, 1) }));
        const answer = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Many calls.",
        });
        expect(answer.status).toBe("completed");
        const results = toolResults(since(before)[1]!);
        expect(results.map((r) => r.id)).toEqual(calls.map((c) => c.id));
        for (const result of results.slice(0, 16))
          expect(result.result).toMatchObject({ ok: true, data: { object: "workspace" } });
        expect(results[16]!.result).toMatchObject({ ok: false, error: { code: "too_many_tool_calls" } });
      });

      it("a provider stopping for length is incomplete (max_output_tokens), the partial text kept", async () => {
        play(
          completion({
            usage: usageOf(12, 4),
            extra: {
              choices: [
                {
                  index: 0,
                  message: { role: "assistant", content: "Cut sho", refusal: null },
                  logprobs: null,
                  finish_reason: "length",
                },
              ],
            },
          }),
        );
        const answer = await client(seeded.owner.key).responses.create({
          model: "gpt-4o-mini",
          input: "Write a lot.",
          max_output_tokens: 4,
        });
        expect(answer.status).toBe("incomplete");
        expect(answer.incomplete_details).toEqual({ reason: "max_output_tokens" });
        expect(answer.output_text).toBe("Cut sho");
        expect(answer.output[0]).toMatchObject({ type: "message", status: "incomplete" });
        expect(answer.usage).toEqual(usageOfResponse(12, 4));
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
