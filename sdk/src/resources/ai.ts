import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { Stream } from "../lib/streaming.js";
import { APIResource } from "./resource.js";

/**
 * The AI routes speak OpenAI's API (the official `openai` package works with a Kontor credential
 * too); these methods are thin and pass every parameter through. Types cover the common fields.
 */

export interface Model {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
}

export interface ModelList {
  object: "list";
  data: Model[];
}

export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content: string | Array<Record<string, unknown>> | null;
  [key: string]: unknown;
}

export interface ChatCompletionCreateParams {
  model: string;
  messages: ChatMessage[];
  stream?: boolean | null;
  [key: string]: unknown;
}

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [key: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: ChatMessage;
    finish_reason: string | null;
    [key: string]: unknown;
  }>;
  usage?: ChatCompletionUsage;
  [key: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: Partial<ChatMessage>;
    finish_reason: string | null;
    [key: string]: unknown;
  }>;
  usage?: ChatCompletionUsage | null;
  [key: string]: unknown;
}

export interface ResponseCreateParams {
  model: string;
  input?: string | Array<Record<string, unknown>>;
  instructions?: string;
  stream?: boolean | null;
  [key: string]: unknown;
}

export interface ResponseObject {
  id: string;
  object: "response";
  status: string;
  model: string;
  output: Array<{ type: string; [key: string]: unknown }>;
  usage?: {
    input_tokens: number;
    output_tokens: number;
    total_tokens: number;
    [key: string]: unknown;
  } | null;
  [key: string]: unknown;
}

/** One server-sent event of a streamed response (`response.created` … `response.completed`). */
export interface ResponseStreamEvent {
  type: string;
  [key: string]: unknown;
}

/**
 * The text of a response's assistant messages, joined (what `output_text` is in OpenAI's SDK).
 *
 * @example
 * ```ts
 * const response = await kontor.responses.create({ model: "gpt-4.1-mini", input: "Which invoices are overdue?" });
 * console.log(outputText(response));
 * ```
 */
export function outputText(response: ResponseObject): string {
  return response.output
    .filter((item) => item.type === "message")
    .flatMap((item) =>
      Array.isArray(item.content) ? (item.content as Array<{ type?: string; text?: string }>) : [],
    )
    .filter((part) => part.type === "output_text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("");
}

export class Models extends APIResource {
  /**
   * The models of the workspace's plan (any valid credential).
   *
   * @example
   * ```ts
   * const { data } = await kontor.models.list();
   * console.log(data.map((model) => model.id));
   * ```
   */
  list(options?: RequestOptions): APIPromise<ModelList> {
    return this._client.request<ModelList>({ method: "GET", path: "/models", options });
  }

  /**
   * One model of the plan's catalog.
   *
   * @example
   * ```ts
   * const model = await kontor.models.retrieve("gpt-4.1-mini");
   * ```
   */
  retrieve(model: string, options?: RequestOptions): APIPromise<Model> {
    return this._client.request<Model>({
      method: "GET",
      path: `/models/${encodeURIComponent(model)}`,
      options,
    });
  }
}

export class ChatCompletions extends APIResource {
  /**
   * `POST /v1/chat/completions`, passed through to the provider (needs `ai.coding`). With
   * `stream: true` the answer is a `Stream` of chunks.
   *
   * @example
   * ```ts
   * const stream = await kontor.chat.completions.create({
   *   model: "gpt-4.1-mini",
   *   messages: [{ role: "user", content: "Hello" }],
   *   stream: true,
   * });
   * for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
   * ```
   */
  create(
    params: ChatCompletionCreateParams & { stream: true },
    options?: RequestOptions,
  ): APIPromise<Stream<ChatCompletionChunk>>;
  create(
    params: ChatCompletionCreateParams & { stream?: false | null },
    options?: RequestOptions,
  ): APIPromise<ChatCompletion>;
  create(
    params: ChatCompletionCreateParams,
    options?: RequestOptions,
  ): APIPromise<ChatCompletion | Stream<ChatCompletionChunk>>;
  create(
    params: ChatCompletionCreateParams,
    options?: RequestOptions,
  ): APIPromise<ChatCompletion | Stream<ChatCompletionChunk>> {
    return this._client._openaiPost<ChatCompletion, ChatCompletionChunk>(
      "/chat/completions",
      params,
      options,
    );
  }
}

export class Chat extends APIResource {
  readonly completions: ChatCompletions = new ChatCompletions(this._client);
}

export class Responses extends APIResource {
  /**
   * `POST /v1/responses`: an answer grounded in the workspace (needs `ai.responses` or
   * `ai.coding`). With `stream: true` the answer is a `Stream` of Responses events.
   *
   * @example
   * ```ts
   * const response = await kontor.responses.create({ model: "gpt-4.1-mini", input: "Summarise this month's invoices." });
   * console.log(outputText(response));
   * ```
   */
  create(
    params: ResponseCreateParams & { stream: true },
    options?: RequestOptions,
  ): APIPromise<Stream<ResponseStreamEvent>>;
  create(
    params: ResponseCreateParams & { stream?: false | null },
    options?: RequestOptions,
  ): APIPromise<ResponseObject>;
  create(
    params: ResponseCreateParams,
    options?: RequestOptions,
  ): APIPromise<ResponseObject | Stream<ResponseStreamEvent>>;
  create(
    params: ResponseCreateParams,
    options?: RequestOptions,
  ): APIPromise<ResponseObject | Stream<ResponseStreamEvent>> {
    return this._client._openaiPost<ResponseObject, ResponseStreamEvent>("/responses", params, options);
  }
}
