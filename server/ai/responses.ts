import { ulid } from "ulid";
import { ApiError, isApiError, validationFailed } from "../../schema/lib/errors.ts";
import { describeError, log } from "../observability/log.ts";
import { AnswerBudget, EventSplitter, readAnswer } from "./limits.ts";
import { providerFailure, upstreamMessage } from "./passthrough.ts";
import { addTokens } from "./tokens.ts";
import type { ToolDefinition } from "./tools.ts";
import { type ChatUpstream, upstreamError } from "./upstream.ts";

/**
 * POST /v1/responses: OpenAI's Responses API over an upstream that speaks chat completions, with
 * the workspace's read-only tools. Kontor runs the tool loop itself (bounded rounds) and answers
 * one assistant message, as JSON or as the Responses event stream.
 */

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

/** The tokens of an answer once it has ended, and whether its client left before its end. */
export interface SpentTokens extends TokenUsage {
  /** The client went away before the answer was complete: the provider may have spent more than it reported. */
  abandoned: boolean;
}

export interface CreateResponseInput {
  /** The request body, already parsed as a JSON object. */
  body: Record<string, unknown>;
  /** The tools the caller may use (toolsFor(workspaceTools(schema), scopes)). */
  tools: ToolDefinition[];
  /** Runs one tool as the caller; its answer (a string, or JSON-serialised) is what the model reads. */
  run: (tool: ToolDefinition, args: unknown) => Promise<unknown>;
  upstream: ChatUpstream;
  /** The client going away: aborts the upstream call and the loop. */
  signal: AbortSignal;
  /** Upstream calls at most (default 6): a model still calling tools after them gets an incomplete response. */
  maxRounds?: number;
  /** Called when createResponse throws, with the tokens of the rounds that did complete (a failed tool loop still cost them). */
  onFailure?: (usage: TokenUsage) => void;
  /** The id of the request being answered, for the log lines of what fails while it runs. */
  requestId?: string;
}

export const DEFAULT_MAX_ROUNDS = 6;
/** Tool calls one round may make; further ones are answered with an error and not run. */
export const MAX_TOOL_CALLS_PER_ROUND = 16;

/** Top-level fields the endpoint reads. Any other is refused, as OpenAI refuses unknown parameters. */
export const ACCEPTED_FIELDS = [
  "model",
  "input",
  "prompt",
  "instructions",
  "stream",
  "temperature",
  "top_p",
  "max_output_tokens",
  "metadata",
  "user",
  "store",
  "tool_choice",
  "parallel_tool_calls",
  "stream_options",
  "safety_identifier",
  "prompt_cache_key",
  "truncation",
] as const;

// ---------------------------------------------------------------------------------------------
// The request

type ChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string; detail?: string } };

type ChatMessage =
  | { role: "system" | "user"; content: string | ChatContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

type ToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export interface ParsedRequest {
  model: string;
  messages: ChatMessage[];
  instructions: string | null;
  stream: boolean;
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  tool_choice: ToolChoice;
  parallel_tool_calls: boolean | undefined;
  user: string | undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const describe = (value: unknown) =>
  value === null
    ? "null"
    : Array.isArray(value)
      ? "an array"
      : typeof value === "object"
        ? "an object"
        : `a ${typeof value}`;

function optionalNumber(
  body: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
): number | null {
  const value = body[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    throw validationFailed(name, `${name} must be a number from ${min} to ${max}.`);
  }
  return value;
}

function optionalBoolean(body: Record<string, unknown>, name: string): boolean | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean")
    throw validationFailed(name, `${name} must be true or false, not ${describe(value)}.`);
  return value;
}

function optionalString(body: Record<string, unknown>, name: string, maxLength: number): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string")
    throw validationFailed(name, `${name} must be a string, not ${describe(value)}.`);
  if (value.length > maxLength)
    throw validationFailed(name, `${name} must be at most ${maxLength} characters.`);
  return value;
}

function metadataOf(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value)) throw validationFailed("metadata", "metadata must be an object of strings.");
  const entries = Object.entries(value);
  if (entries.length > 16) throw validationFailed("metadata", "metadata holds at most 16 keys.");
  for (const [key, item] of entries) {
    if (key.length > 64)
      throw validationFailed(`metadata.${key}`, "metadata keys are at most 64 characters.");
    if (typeof item !== "string" || item.length > 512)
      throw validationFailed(
        `metadata.${key}`,
        `metadata.${key} must be a string of at most 512 characters.`,
      );
  }
  return value as Record<string, string>;
}

function toolChoiceOf(value: unknown, tools: ToolDefinition[]): ToolChoice {
  if (value === undefined || value === null) return "auto";
  if (value === "auto" || value === "none" || value === "required") return value;
  if (isObject(value) && value.type === "function" && typeof value.name === "string") {
    if (!tools.some((tool) => tool.name === value.name)) {
      throw validationFailed(
        "tool_choice.name",
        `There is no tool named '${value.name}' for this credential; the tools are: ${tools.map((t) => t.name).join(", ")}.`,
      );
    }
    return { type: "function", name: value.name };
  }
  throw validationFailed(
    "tool_choice",
    'tool_choice must be "auto", "none", "required" or {"type": "function", "name": …} naming one of Kontor\'s tools.',
  );
}

/** A message's content parts as chat content parts. */
function contentOf(param: string, role: string, content: unknown): string | ChatContentPart[] {
  if (typeof content === "string") return content;
  if (!Array.isArray(content))
    throw validationFailed(param, `${param} must be a string or an array of content parts.`);
  if (content.length === 0) throw validationFailed(param, `${param} must not be empty.`);
  return content.map((part, index): ChatContentPart => {
    const at = `${param}[${index}]`;
    if (!isObject(part)) throw validationFailed(at, `${at} must be an object.`);
    const type = part.type;
    const textual = role === "assistant" ? ["output_text", "input_text"] : ["input_text"];
    if (typeof type === "string" && textual.includes(type)) {
      if (typeof part.text !== "string") throw validationFailed(`${at}.text`, `${at}.text must be a string.`);
      return { type: "text", text: part.text };
    }
    if (type === "refusal" && role === "assistant") {
      if (typeof part.refusal !== "string")
        throw validationFailed(`${at}.refusal`, `${at}.refusal must be a string.`);
      return { type: "text", text: part.refusal };
    }
    if (type === "input_image" && role === "user") {
      if (typeof part.image_url !== "string" || part.image_url.length === 0) {
        throw validationFailed(
          `${at}.image_url`,
          `${at}.image_url must be an image URL (https: or data:); file_id is not supported.`,
        );
      }
      const detail = part.detail;
      if (
        detail !== undefined &&
        detail !== null &&
        !["low", "high", "auto", "original"].includes(detail as string)
      ) {
        throw validationFailed(`${at}.detail`, `${at}.detail must be low, high, auto or original.`);
      }
      const chatDetail = detail === "original" ? "high" : (detail as string | null | undefined);
      return {
        type: "image_url",
        image_url: { url: part.image_url, ...(chatDetail && { detail: chatDetail }) },
      };
    }
    throw validationFailed(
      `${at}.type`,
      `${at}.type ${JSON.stringify(type)} is not supported in a ${role} message; use ${role === "user" ? "input_text or input_image" : role === "assistant" ? "output_text" : "input_text"}.`,
    );
  });
}

function messagesOf(input: unknown): ChatMessage[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  if (!Array.isArray(input))
    throw validationFailed(
      "input",
      `input must be a string or an array of input items, not ${describe(input)}.`,
    );
  if (input.length === 0) throw validationFailed("input", "input must hold at least one item.");
  return input.map((item, index): ChatMessage => {
    const at = `input[${index}]`;
    if (!isObject(item)) throw validationFailed(at, `${at} must be an object.`);
    const type = item.type ?? "message";
    if (type !== "message") {
      const why =
        typeof type === "string" && /function_call|tool/.test(type)
          ? " Kontor runs its own tools: send messages only."
          : " Send messages ({role, content}).";
      throw validationFailed(
        `${at}.type`,
        `Input items of type ${JSON.stringify(type)} are not supported.${why}`,
      );
    }
    const role = item.role;
    if (role !== "user" && role !== "assistant" && role !== "system" && role !== "developer") {
      throw validationFailed(`${at}.role`, `${at}.role must be user, assistant, system or developer.`);
    }
    const content = contentOf(`${at}.content`, role, item.content);
    if (role === "assistant") {
      return {
        role,
        content:
          typeof content === "string"
            ? content
            : content.map((part) => (part.type === "text" ? part.text : "")).join(""),
      };
    }
    if ((role === "system" || role === "developer") && Array.isArray(content)) {
      // System text as one string: the widest-supported form across chat providers.
      return {
        role: "system",
        content: content.map((part) => (part.type === "text" ? part.text : "")).join("\n"),
      };
    }
    return { role: role === "developer" ? "system" : role, content } as ChatMessage;
  });
}

/** Checks the body and reads it as a chat conversation; the first problem is a 400 naming its `param`. */
export function parseRequest(body: Record<string, unknown>, tools: ToolDefinition[]): ParsedRequest {
  const accepted = new Set<string>(ACCEPTED_FIELDS);
  for (const name of Object.keys(body)) {
    if (name === "tools") {
      const tools = body.tools;
      if (tools === null || (Array.isArray(tools) && tools.length === 0)) continue;
      throw validationFailed(
        "tools",
        "tools cannot be sent: Kontor supplies the tools, the workspace's read-only tools your key's scopes allow.",
      );
    }
    if (!accepted.has(name)) {
      throw validationFailed(
        name,
        `${name} is not supported here. Kontor's /v1/responses accepts: ${ACCEPTED_FIELDS.join(", ")}.`,
      );
    }
  }
  const model = body.model;
  if (typeof model !== "string" || model.length === 0)
    throw validationFailed("model", "model is required: one of the ids GET /v1/models lists.");

  const hasInput = body.input !== undefined && body.input !== null;
  const hasPrompt = body.prompt !== undefined && body.prompt !== null;
  if (hasInput && hasPrompt) throw validationFailed("prompt", "Send input or prompt, not both.");
  if (!hasInput && !hasPrompt)
    throw validationFailed(
      "input",
      "input is required (a string or message items); or send prompt, a string.",
    );
  let messages: ChatMessage[];
  if (hasPrompt) {
    if (typeof body.prompt !== "string") {
      throw validationFailed(
        "prompt",
        `prompt must be a string, not ${describe(body.prompt)} (prompt templates are not supported).`,
      );
    }
    if (body.prompt.length === 0) throw validationFailed("prompt", "prompt must not be empty.");
    messages = [{ role: "user", content: body.prompt }];
  } else {
    messages = messagesOf(body.input);
  }

  const instructions = optionalString(body, "instructions", 1_000_000) ?? null;
  const stream = optionalBoolean(body, "stream") ?? false;
  const maxOutput = body.max_output_tokens;
  if (
    maxOutput !== undefined &&
    maxOutput !== null &&
    (!Number.isSafeInteger(maxOutput) || (maxOutput as number) < 1)
  ) {
    throw validationFailed("max_output_tokens", "max_output_tokens must be a positive integer.");
  }
  optionalBoolean(body, "store");
  optionalString(body, "safety_identifier", 64);
  optionalString(body, "prompt_cache_key", 1024);
  if (
    body.truncation !== undefined &&
    body.truncation !== null &&
    body.truncation !== "auto" &&
    body.truncation !== "disabled"
  ) {
    throw validationFailed("truncation", "truncation must be auto or disabled.");
  }
  if (body.stream_options !== undefined && body.stream_options !== null && !isObject(body.stream_options)) {
    throw validationFailed("stream_options", "stream_options must be an object.");
  }
  return {
    model,
    messages: instructions !== null ? [{ role: "system", content: instructions }, ...messages] : messages,
    instructions,
    stream,
    temperature: optionalNumber(body, "temperature", 0, 2),
    top_p: optionalNumber(body, "top_p", 0, 1),
    max_output_tokens: (maxOutput as number | null | undefined) ?? null,
    metadata: metadataOf(body.metadata),
    tool_choice: toolChoiceOf(body.tool_choice, tools),
    parallel_tool_calls: optionalBoolean(body, "parallel_tool_calls"),
    user: optionalString(body, "user", 256),
  };
}

/** The chat-completions body of one round. A forcing tool_choice holds for the first round only. */
function chatBody(
  request: ParsedRequest,
  tools: ToolDefinition[],
  messages: ChatMessage[],
  round: number,
): Record<string, unknown> {
  const forcing = request.tool_choice === "required" || typeof request.tool_choice === "object";
  const choice = forcing && round > 0 ? "auto" : request.tool_choice;
  return {
    model: request.model,
    messages,
    ...(tools.length > 0 && {
      tools: tools.map((tool) => ({
        type: "function",
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      })),
      tool_choice:
        typeof choice === "object" ? { type: "function", function: { name: choice.name } } : choice,
      ...(request.parallel_tool_calls !== undefined && { parallel_tool_calls: request.parallel_tool_calls }),
    }),
    ...(request.temperature !== null && { temperature: request.temperature }),
    ...(request.top_p !== null && { top_p: request.top_p }),
    ...(request.max_output_tokens !== null && { max_completion_tokens: request.max_output_tokens }),
    ...(request.stream && { stream: true, stream_options: { include_usage: true } }),
  };
}

// ---------------------------------------------------------------------------------------------
// Usage

class Meter {
  input = 0;
  output = 0;
  cached = 0;
  reasoning = 0;

  add(value: unknown): void {
    const usage = (value as { usage?: Record<string, unknown> } | null)?.usage;
    if (!isObject(usage)) return;
    // Each count clamped as it is added (tokens.ts): a provider's 1e308 or -5 never reaches the meter or the request log.
    this.input = addTokens(this.input, usage.prompt_tokens);
    this.output = addTokens(this.output, usage.completion_tokens);
    this.cached = addTokens(
      this.cached,
      (usage.prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens,
    );
    this.reasoning = addTokens(
      this.reasoning,
      (usage.completion_tokens_details as Record<string, unknown> | undefined)?.reasoning_tokens,
    );
  }

  get tokens(): TokenUsage {
    return { input_tokens: this.input, output_tokens: this.output };
  }

  get responseUsage() {
    return {
      input_tokens: this.input,
      input_tokens_details: { cached_tokens: this.cached },
      output_tokens: this.output,
      output_tokens_details: { reasoning_tokens: this.reasoning },
      total_tokens: this.input + this.output,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// One round with the upstream

interface Round {
  text: string;
  calls: ChatToolCall[];
  finishReason: string | null;
}

/** The data of each server-sent event of a body, as it arrives. */
async function* sseData(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  // One event at most MAX_EVENT_CHARS long: a longer one is 502 upstream_error.
  const events = new EventSplitter();
  const cancel = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  const eventData = (event: string) =>
    event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""))
      .join("\n");
  try {
    while (true) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        if (signal.aborted) throw error;
        throw upstreamError("The AI provider's stream broke off. Retry later.");
      }
      if (signal.aborted) throw signal.reason;
      if (chunk.done) break;
      for (const event of events.push(decoder.decode(chunk.value, { stream: true }))) {
        const data = eventData(event);
        if (data) yield data;
      }
    }
    for (const event of [...events.push(decoder.decode()), events.end()]) {
      const data = eventData(event);
      if (data) yield data;
    }
  } finally {
    signal.removeEventListener("abort", cancel);
    cancel();
  }
}

function providerErrorIn(value: unknown): ApiError | undefined {
  if (!isObject(value) || value.error === undefined || value.error === null) return undefined;
  const message = upstreamMessage(JSON.stringify(value));
  return upstreamError(`The AI provider reported an error${message ? `: ${message}` : "."}`);
}

/**
 * Reads one upstream answer (a JSON completion or an event stream), passing text on as it comes
 * (and reading on only once `onText` has taken it); what it gathers is taken from `budget`.
 */
async function readRound(
  answer: Response,
  meter: Meter,
  budget: AnswerBudget,
  onText: Loop["onText"],
  signal: AbortSignal,
): Promise<Round> {
  if (!answer.ok) throw await providerFailure(answer);
  const round: Round = { text: "", calls: [], finishReason: null };
  const type = answer.headers.get("content-type") ?? "";
  if (/text\/event-stream/i.test(type) && answer.body) {
    const partial = new Map<number, ChatToolCall>();
    let done = false;
    // The last usage a stream reports is the round's (some providers repeat a running total).
    let usage: unknown;
    for await (const data of sseData(answer.body, signal)) {
      if (data.trim() === "[DONE]") {
        done = true;
        break;
      }
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        throw upstreamError("The AI provider sent a stream event that is not JSON.");
      }
      const failure = providerErrorIn(chunk);
      if (failure) throw failure;
      if (isObject((chunk as { usage?: unknown }).usage)) usage = chunk;
      const choice = ((chunk as { choices?: unknown }).choices as unknown[] | undefined)?.[0];
      if (!isObject(choice)) continue;
      const delta = isObject(choice.delta) ? choice.delta : {};
      if (typeof delta.content === "string" && delta.content.length > 0) {
        budget.take(delta.content.length);
        round.text += delta.content;
        await onText(delta.content);
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const [position, piece] of delta.tool_calls.entries()) {
          if (!isObject(piece)) continue;
          const index = typeof piece.index === "number" ? piece.index : position;
          const call = partial.get(index) ?? {
            id: "",
            type: "function" as const,
            function: { name: "", arguments: "" },
          };
          partial.set(index, call);
          if (typeof piece.id === "string" && piece.id) call.id = piece.id;
          const fn = isObject(piece.function) ? piece.function : {};
          if (typeof fn.name === "string" && fn.name) call.function.name = fn.name;
          if (typeof fn.arguments === "string") {
            budget.take(fn.arguments.length);
            call.function.arguments += fn.arguments;
          }
        }
      }
      if (typeof choice.finish_reason === "string") round.finishReason = choice.finish_reason;
    }
    meter.add(usage);
    if (!done && round.finishReason === null)
      throw upstreamError("The AI provider's stream ended before the answer did. Retry later.");
    round.calls = [...partial.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  } else {
    let parsed: unknown;
    try {
      // Read up to MAX_ANSWER_BYTES, no further: a larger answer is a 502.
      parsed = JSON.parse(await readAnswer(answer));
    } catch (error) {
      if (isApiError(error)) throw error;
      throw upstreamError("The AI provider answered something that is not JSON.");
    }
    const failure = providerErrorIn(parsed);
    if (failure) throw failure;
    meter.add(parsed);
    const choice = ((parsed as { choices?: unknown }).choices as unknown[] | undefined)?.[0];
    if (!isObject(choice) || !isObject(choice.message))
      throw upstreamError("The AI provider answered without a message.");
    const message = choice.message;
    if (typeof message.content === "string" && message.content.length > 0) {
      budget.take(message.content.length);
      round.text = message.content;
      await onText(message.content);
    }
    if (Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls) {
        if (!isObject(call) || !isObject(call.function)) continue;
        const fn = call.function;
        if (typeof fn.arguments === "string") budget.take(fn.arguments.length);
        round.calls.push({
          id: typeof call.id === "string" ? call.id : "",
          type: "function",
          function: {
            name: typeof fn.name === "string" ? fn.name : "",
            arguments: typeof fn.arguments === "string" ? fn.arguments : "",
          },
        });
      }
    }
    round.finishReason = typeof choice.finish_reason === "string" ? choice.finish_reason : null;
  }
  // The tool messages answer calls by id: give any call without one an id of its own.
  round.calls.forEach((call, index) => {
    if (!call.id) call.id = `call_${index}_${ulid()}`;
  });
  return round;
}

// ---------------------------------------------------------------------------------------------
// The tool loop

interface Outcome {
  status: "completed" | "incomplete";
  reason?: "max_output_tokens" | "content_filter" | "max_tool_rounds";
}

interface Loop {
  request: ParsedRequest;
  tools: ToolDefinition[];
  run: CreateResponseInput["run"];
  upstream: ChatUpstream;
  signal: AbortSignal;
  maxRounds: number;
  meter: Meter;
  /** What the answer gathers from the provider, over every round. */
  budget: AnswerBudget;
  /** Takes text as it comes; a promise holds the reading of the provider until the client has room. */
  onText: (delta: string) => void | Promise<void>;
  requestId?: string;
}

const toolFailure = (code: string, message: string) =>
  JSON.stringify({ ok: false, error: { code, message } });

async function callTool(loop: Loop, call: ChatToolCall): Promise<string> {
  const tool = loop.tools.find((candidate) => candidate.name === call.function.name);
  if (!tool) {
    return toolFailure(
      "unknown_tool",
      `There is no tool named '${call.function.name}'. The tools are: ${loop.tools.map((t) => t.name).join(", ")}.`,
    );
  }
  let args: unknown = {};
  if (call.function.arguments.trim() !== "") {
    try {
      args = JSON.parse(call.function.arguments);
    } catch (error) {
      return toolFailure("invalid_json", `The arguments are not valid JSON: ${(error as Error).message}`);
    }
  }
  try {
    const result = await loop.run(tool, args);
    return typeof result === "string" ? result : (JSON.stringify(result) ?? "null");
  } catch (error) {
    if (loop.signal.aborted) throw error;
    if (isApiError(error)) return toolFailure(error.code, error.message);
    log("error", "AI tool failed", { request_id: loop.requestId, tool: tool.name, ...describeError(error) });
    return toolFailure("internal_error", "The tool failed unexpectedly.");
  }
}

/** Rounds with the upstream until the model answers in text, or the rounds run out. */
async function runLoop(loop: Loop, first: Response): Promise<Outcome> {
  const messages = [...loop.request.messages];
  let answer: Response | undefined = first;
  for (let round = 0; ; round += 1) {
    answer ??= await loop.upstream.chat(chatBody(loop.request, loop.tools, messages, round), loop.signal);
    const result = await readRound(answer, loop.meter, loop.budget, loop.onText, loop.signal);
    answer = undefined;
    if (result.calls.length === 0) {
      if (result.finishReason === "length") return { status: "incomplete", reason: "max_output_tokens" };
      if (result.finishReason === "content_filter") return { status: "incomplete", reason: "content_filter" };
      return { status: "completed" };
    }
    if (round + 1 >= loop.maxRounds) return { status: "incomplete", reason: "max_tool_rounds" };
    messages.push({ role: "assistant", content: result.text || null, tool_calls: result.calls });
    const outputs = await Promise.all(
      result.calls.map((call, index) =>
        index < MAX_TOOL_CALLS_PER_ROUND
          ? callTool(loop, call)
          : Promise.resolve(
              toolFailure(
                "too_many_tool_calls",
                `At most ${MAX_TOOL_CALLS_PER_ROUND} tool calls run per round; call this one again.`,
              ),
            ),
      ),
    );
    for (const [index, call] of result.calls.entries()) {
      messages.push({ role: "tool", tool_call_id: call.id, content: outputs[index]! });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The answer

interface Draft {
  id: string;
  messageId: string;
  createdAt: number;
  request: ParsedRequest;
}

function messageItem(draft: Draft, text: string, status: "in_progress" | "completed" | "incomplete") {
  return {
    type: "message",
    id: draft.messageId,
    status,
    role: "assistant",
    content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

function responseObject(
  draft: Draft,
  state: {
    status: "in_progress" | "completed" | "incomplete" | "failed";
    output: unknown[];
    meter?: Meter;
    reason?: string;
    error?: ApiError;
  },
) {
  const { request } = draft;
  return {
    id: draft.id,
    object: "response",
    created_at: draft.createdAt,
    status: state.status,
    background: false,
    completed_at: state.status === "completed" ? Math.floor(Date.now() / 1000) : null,
    error: state.error ? { code: state.error.code, message: state.error.message } : null,
    incomplete_details: state.reason ? { reason: state.reason } : null,
    instructions: request.instructions,
    max_output_tokens: request.max_output_tokens,
    metadata: request.metadata,
    model: request.model,
    output: state.output,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: request.temperature ?? 1,
    text: { format: { type: "text" } },
    tool_choice: request.tool_choice,
    // Kontor's own tools are not the caller's: the request had none.
    tools: [],
    top_p: request.top_p ?? 1,
    truncation: "disabled",
    usage: state.meter ? state.meter.responseUsage : null,
    user: request.user ?? null,
  };
}

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};
/** The bytes of a stream's events queued for a client that has not read them, past which the provider is read no further. */
const STREAM_QUEUE_BYTES = 64 * 1024;

/**
 * Answers a POST /v1/responses. Throws a 400 ApiError for a bad body, and the upstream's failure
 * (502 upstream_error, 504 upstream_timeout) when it fails before anything was sent: without
 * `stream`, at any round; with `stream`, at the first round's head (later failures end the stream
 * with `response.failed`). `usage` resolves, never rejects, once the answer is complete (for a
 * stream: when it ends, however it ends) with the tokens of every round, and whether the client
 * left first; when it throws, `onFailure` gets the tokens of the rounds before. A stream reads the
 * provider only as fast as its client reads (a bounded queue), and what an answer gathers is
 * bounded (AnswerBudget): past it, 502 upstream_error, or `response.failed` once streaming.
 */
export async function createResponse(
  input: CreateResponseInput,
): Promise<{ response: Response; usage: Promise<SpentTokens> }> {
  const meter = new Meter();
  try {
    return await answer(input, meter);
  } catch (error) {
    input.onFailure?.(meter.tokens);
    throw error;
  }
}

async function answer(
  input: CreateResponseInput,
  meter: Meter,
): Promise<{ response: Response; usage: Promise<SpentTokens> }> {
  const request = parseRequest(input.body, input.tools);
  const draft: Draft = {
    id: `resp_${ulid()}`,
    messageId: `msg_${ulid()}`,
    createdAt: Math.floor(Date.now() / 1000),
    request,
  };
  const maxRounds = Math.max(1, input.maxRounds ?? DEFAULT_MAX_ROUNDS);

  if (!request.stream) {
    let text = "";
    const loop: Loop = {
      ...input,
      request,
      maxRounds,
      meter,
      budget: new AnswerBudget(),
      onText: (delta) => void (text += delta),
    };
    const first = await input.upstream.chat(
      chatBody(request, input.tools, request.messages, 0),
      input.signal,
    );
    const outcome = await runLoop(loop, first);
    const output = outcome.status === "completed" || text ? [messageItem(draft, text, outcome.status)] : [];
    const body = responseObject(draft, {
      status: outcome.status,
      output,
      meter,
      ...(outcome.reason && { reason: outcome.reason }),
    });
    return { response: Response.json(body), usage: Promise.resolve({ ...meter.tokens, abandoned: false }) };
  }

  // The stream's own end (the client leaving) aborts the upstream too.
  const cancelled = new AbortController();
  const signal = AbortSignal.any([input.signal, cancelled.signal]);
  // The first head before any byte is sent: an unreachable or refusing provider is an HTTP error.
  const first = await input.upstream.chat(chatBody(request, input.tools, request.messages, 0), signal);
  if (!first.ok) throw await providerFailure(first);

  let settle!: (usage: SpentTokens) => void;
  const usage = new Promise<SpentTokens>((resolve) => (settle = resolve));
  const encoder = new TextEncoder();
  let sequence = 0;
  let closed = false;
  let text = "";
  let opened = false;
  /** Ends the wait for room in the queue: the client has read (or left). */
  let wake: (() => void) | undefined;
  const woken = () => {
    wake?.();
    wake = undefined;
  };

  // A bounded queue: the loop reads the provider on only while the client keeps up (see onText).
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const send = (type: string, payload: Record<string, unknown>) => {
          if (closed) return;
          const event = { type, sequence_number: sequence++, ...payload };
          controller.enqueue(encoder.encode(`event: ${type}\ndata: ${JSON.stringify(event)}\n\n`));
        };
        const end = (abandoned = false) => {
          if (closed) return;
          closed = true;
          settle({ ...meter.tokens, abandoned });
          controller.close();
        };
        const open = () => {
          if (opened) return;
          opened = true;
          send("response.output_item.added", {
            output_index: 0,
            item: messageItem(draft, "", "in_progress"),
          });
          send("response.content_part.added", {
            item_id: draft.messageId,
            output_index: 0,
            content_index: 0,
            part: { type: "output_text", text: "", annotations: [], logprobs: [] },
          });
        };
        const onText = async (delta: string) => {
          open();
          text += delta;
          send("response.output_text.delta", {
            item_id: draft.messageId,
            output_index: 0,
            content_index: 0,
            delta,
            logprobs: [],
          });
          // The queue is full: the next read of the provider waits until the client has taken some.
          while (!closed && (controller.desiredSize ?? 0) <= 0)
            await new Promise<void>((resolve) => (wake = resolve));
        };
        send("response.created", { response: responseObject(draft, { status: "in_progress", output: [] }) });
        send("response.in_progress", {
          response: responseObject(draft, { status: "in_progress", output: [] }),
        });

        const loop: Loop = {
          ...input,
          request,
          maxRounds,
          meter,
          budget: new AnswerBudget(),
          signal,
          onText,
        };
        void runLoop(loop, first).then(
          (outcome) => {
            const output: unknown[] = [];
            if (outcome.status === "completed" || opened) {
              open();
              const part = { type: "output_text", text, annotations: [], logprobs: [] };
              send("response.output_text.done", {
                item_id: draft.messageId,
                output_index: 0,
                content_index: 0,
                text,
                logprobs: [],
              });
              send("response.content_part.done", {
                item_id: draft.messageId,
                output_index: 0,
                content_index: 0,
                part,
              });
              const item = messageItem(draft, text, outcome.status);
              send("response.output_item.done", { output_index: 0, item });
              output.push(item);
            }
            const response = responseObject(draft, {
              status: outcome.status,
              output,
              meter,
              ...(outcome.reason && { reason: outcome.reason }),
            });
            send(outcome.status === "completed" ? "response.completed" : "response.incomplete", { response });
            end();
          },
          (error: unknown) => {
            if (signal.aborted) return end(true);
            const failure = isApiError(error)
              ? error
              : new ApiError(500, "api_error", "internal_error", "An unexpected error occurred.");
            if (!isApiError(error))
              log("error", "AI response failed", { request_id: input.requestId, ...describeError(error) });
            const output = opened ? [{ ...messageItem(draft, text, "incomplete") }] : [];
            send("response.failed", {
              response: responseObject(draft, { status: "failed", output, meter, error: failure }),
            });
            end();
          },
        );
      },
      pull: woken,
      cancel() {
        closed = true;
        woken();
        settle({ ...meter.tokens, abandoned: true });
        cancelled.abort();
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: STREAM_QUEUE_BYTES }),
  );
  return { response: new Response(stream, { status: 200, headers: SSE_HEADERS }), usage };
}
