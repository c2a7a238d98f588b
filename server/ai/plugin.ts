import type { Plugin } from "graphql-yoga";
import type { Context, Credential } from "../../schema/context.ts";
import { schema } from "../../schema/index.ts";
import { ApiError, isApiError, scopeRefused, validationFailed } from "../../schema/lib/errors.ts";
import { MODEL_ID_LENGTH, textProblem } from "../../schema/lib/limits.ts";
import { maskError } from "../graphql/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { describeError, log } from "../observability/log.ts";
import { dailyHeaders, type GeneralBudget, reservationOf } from "./budget.ts";
import type { ModelCatalog } from "./catalog.ts";
import { readAnswer } from "./limits.ts";
import { type CodingMeter, codingHeaders } from "./metering.ts";
import { chatUsage, passStream, providerFailure } from "./passthrough.ts";
import type { TokenUsage } from "./responses.ts";
import { createResponse } from "./responses.ts";
import { runTool, toolsFor, workspaceTools } from "./tools.ts";
import { aiUnavailable, type ChatUpstream, upstreamError } from "./upstream.ts";

export const AI_ROUTES = {
  models: "/v1/models",
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
} as const;

const MODEL_PATH = /^\/v1\/models\/([^/]+)$/;

const modelNotAvailable = (model: string, plan: string) =>
  new ApiError(
    400,
    "invalid_request_error",
    "model_not_available",
    `The model '${model}' is not available on the ${plan} plan: GET /v1/models lists those that are.`,
    {
      param: "model",
    },
  );

const clientGone = () =>
  new ApiError(
    400,
    "invalid_request_error",
    "request_aborted",
    "The client closed the connection before the answer was ready.",
  );

const methodNotAllowed = (method: string, path: string, allow: string) =>
  new ApiError(405, "invalid_request_error", "method_not_allowed", `${method} is not allowed on ${path}.`, {
    headers: { Allow: allow },
  });

/** The JSON object of a request body (already read and bounded by the body limit). */
async function jsonObject(request: Request): Promise<Record<string, unknown>> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new ApiError(
      415,
      "invalid_request_error",
      "unsupported_media_type",
      "Send the body as JSON with 'Content-Type: application/json'.",
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(await request.text());
  } catch (error) {
    throw new ApiError(
      400,
      "invalid_request_error",
      "invalid_json",
      `The request body is not valid JSON: ${(error as Error).message}`,
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(
      400,
      "invalid_request_error",
      "validation_failed",
      "The request body must be a JSON object.",
    );
  }
  return body as Record<string, unknown>;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export interface AiServices {
  /** Undefined without AI_UPSTREAM_URL. */
  upstream: ChatUpstream | undefined;
  catalog: ModelCatalog;
  meter: CodingMeter;
  /** General AI's daily token budget (/v1/responses with ai.responses). */
  budget: GeneralBudget;
}

/** The model a request names, if the plan may use it. */
function checkModel(body: Record<string, unknown>, credential: Credential, catalog: ModelCatalog): string {
  const model = body.model;
  if (typeof model !== "string" || model.length === 0)
    throw validationFailed("model", "model is required: one of the ids GET /v1/models lists.");
  if (!catalog.allows(credential.plan, model)) throw modelNotAvailable(model, credential.plan);
  return model;
}

/**
 * POST /v1/chat/completions (ai.coding): the provider gets the JSON Kontor parsed and checked,
 * serialised again (never the client's bytes, so a duplicate key cannot make it read another
 * `model` or `stream`), and its answer comes back as sent (but for the provider's key, which
 * HttpUpstream redacts; a non-streamed answer past MAX_ANSWER_BYTES is a 502); a stream is passed
 * on event by event, read as the client reads it.
 * Kontor adds one thing, upstream only: `stream_options.include_usage`, to meter the tokens.
 */
async function chatCompletions(
  services: AiServices,
  state: RequestState,
  request: Request,
): Promise<Response> {
  const credential = state.credential!;
  if (!credential.scopes.has("ai.coding")) throw scopeRefused(credential, "ai.coding");
  // Every coding answer, a refusal included, says where the plan stands.
  const headers = codingHeaders(await services.meter.state(credential.workspaceId, credential.plan));
  try {
    return await completeChat(services, state, request, headers);
  } catch (error) {
    if (isApiError(error)) for (const [name, value] of Object.entries(headers)) error.headers[name] ??= value;
    throw error;
  }
}

async function completeChat(
  services: AiServices,
  state: RequestState,
  request: Request,
  before: Record<string, string>,
): Promise<Response> {
  const credential = state.credential!;
  const body = await jsonObject(request);
  const model = checkModel(body, credential, services.catalog);
  const upstream = services.upstream;
  if (!upstream) throw aiUnavailable();
  const { state: plan, end } = await services.meter.begin(credential.workspaceId, credential.plan, state.id);
  const headers = { ...before, ...codingHeaders(plan) };
  let logged!: (usage: { model: string; input_tokens: number; output_tokens: number } | null) => void;
  state.aiUsage = new Promise((resolve) => (logged = resolve));
  let recorded = false;
  /** Gives the slot back and counts the tokens; resolves once both are done (never rejects). */
  const record = async (usage: { input_tokens: number; output_tokens: number } | null): Promise<void> => {
    if (recorded) return;
    recorded = true;
    const failed = (error: unknown) =>
      log("error", "coding-plan metering failed", { request_id: state.id, ...describeError(error) });
    logged(usage && { model, ...usage });
    await Promise.all([
      end().catch(failed),
      usage
        ? services.meter
            .record(credential.workspaceId, usage.input_tokens + usage.output_tokens)
            .catch(failed)
        : undefined,
    ]);
  };
  try {
    const streaming = body.stream === true;
    const options = (body.stream_options ?? {}) as Record<string, unknown>;
    const keepUsage = options.include_usage === true;
    // What was checked, serialised again: one `model`, one `stream`, those the plan and meter saw.
    const sent =
      streaming && !keepUsage ? { ...body, stream_options: { ...options, include_usage: true } } : body;
    const answer = await upstream.chat(sent, request.signal);
    if (!answer.ok) throw await providerFailure(answer);
    if (streaming && /text\/event-stream/i.test(answer.headers.get("content-type") ?? "") && answer.body) {
      const stream = passStream(answer.body, keepUsage, (usage) => void record(usage));
      return new Response(stream, {
        status: 200,
        headers: {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          ...headers,
        },
      });
    }
    // Read up to MAX_ANSWER_BYTES, no further: a larger answer is a 502.
    const text = await readAnswer(answer);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw upstreamError("The AI provider answered something that is not JSON.");
    }
    // Counted before the answer leaves: the caller's next request already sees these tokens.
    await record(chatUsage(parsed));
    return new Response(text, { status: 200, headers: { "content-type": "application/json", ...headers } });
  } catch (error) {
    await record(null);
    if (isApiError(error)) for (const [name, value] of Object.entries(headers)) error.headers[name] = value;
    throw error;
  }
}

/** Which use a /responses request is: general AI (ai.responses) when the credential may, else coding (ai.coding). */
export function responsesUse(credential: Credential): "general" | "coding" | null {
  if (credential.scopes.has("ai.responses")) return "general";
  if (credential.scopes.has("ai.coding")) return "coding";
  return null;
}

/**
 * POST /v1/responses: OpenAI's Responses shape, grounded in the workspace through read-only tools
 * made from the schema's queries, each run as the caller. General use counts against the plan's
 * AI requests per minute (the rate-limit plugin) and the workspace's daily token budget; coding
 * use against the coding plan's tokens. Every answer, a refusal included, says where the budget
 * (x-ai-daily-*) or the coding plan (x-codingplan-*) stands.
 */
async function responses(
  services: AiServices,
  state: RequestState,
  request: Request,
  context: Context,
): Promise<Response> {
  const credential = state.credential!;
  const use = responsesUse(credential);
  if (!use) throw scopeRefused(credential, "ai.responses");
  const { workspaceId, plan } = credential;
  const before =
    use === "general"
      ? dailyHeaders(await services.budget.state(workspaceId, plan))
      : codingHeaders(await services.meter.state(workspaceId, plan));
  try {
    return await respond(services, state, request, context, use, before);
  } catch (error) {
    if (isApiError(error)) for (const [name, value] of Object.entries(before)) error.headers[name] ??= value;
    throw error;
  }
}

const total = (usage: TokenUsage) => usage.input_tokens + usage.output_tokens;

async function respond(
  services: AiServices,
  state: RequestState,
  request: Request,
  context: Context,
  use: "general" | "coding",
  before: Record<string, string>,
): Promise<Response> {
  const credential = state.credential!;
  const { workspaceId, plan } = credential;
  // The server adapter's own signal does not always show `aborted` once fired; one that follows it does.
  const clientLeft = AbortSignal.any([request.signal]);
  const body = await jsonObject(request);
  const model = checkModel(body, credential, services.catalog);
  const upstream = services.upstream;
  if (!upstream) throw aiUnavailable();
  const coding = use === "coding" ? await services.meter.begin(workspaceId, plan, state.id) : undefined;
  // docs/api/ai.md: general use reserves an estimate of its cost before the provider sees anything.
  const reserved =
    use === "general"
      ? await services.budget.reserve(
          workspaceId,
          plan,
          state.id,
          reservationOf(
            Buffer.byteLength(JSON.stringify(body)),
            body.max_output_tokens,
            services.budget.limit(plan),
          ),
        )
      : undefined;
  let headers = {
    ...before,
    ...(coding && codingHeaders(coding.state)),
    ...(reserved && dailyHeaders(reserved.state)),
  };
  /** Where the day stands once this request has settled (its headers, for a JSON answer or a refusal). */
  const settledHeaders = async () => {
    if (!reserved) return headers;
    return {
      ...headers,
      ...dailyHeaders(await services.budget.state(workspaceId, plan).catch(() => reserved.state)),
    };
  };
  let logged!: (usage: { model: string; input_tokens: number; output_tokens: number } | null) => void;
  state.aiUsage = new Promise((resolve) => (logged = resolve));
  let settled = false;
  /**
   * Once, however the request ends: the request log's tokens, the coding slot and pools, and the
   * budget's reservation settled with what the provider reported, or at least the reservation when
   * the client left before the end (the provider may have spent more than it told).
   */
  const settle = async (usage: TokenUsage | null, spent: TokenUsage, abandoned: boolean): Promise<void> => {
    if (settled) return;
    settled = true;
    const failed = (error: unknown) =>
      log("error", "AI metering failed", { request_id: state.id, ...describeError(error) });
    coding?.end().catch(failed);
    logged(usage && { model, input_tokens: usage.input_tokens, output_tokens: usage.output_tokens });
    if (coding && usage) services.meter.record(workspaceId, total(usage)).catch(failed);
    await reserved?.settle(Math.max(total(spent), abandoned ? reserved.tokens : 0)).catch(failed);
  };
  let partial: TokenUsage = { input_tokens: 0, output_tokens: 0 };
  try {
    const tools = toolsFor(workspaceTools(schema), credential.scopes);
    const made = await createResponse({
      body,
      tools,
      upstream,
      signal: request.signal,
      run: (tool, args) => runTool(tool, args, context, schema),
      onFailure: (usage) => (partial = usage),
      requestId: state.id,
    });
    if (body.stream === true) {
      made.usage.then(
        (usage) => settle(usage, usage, usage.abandoned),
        () => settle(null, partial, true),
      );
    } else {
      // Settled before the answer leaves: its headers, and the caller's next request, see what it cost.
      const usage = await made.usage;
      await settle(usage, usage, usage.abandoned);
      headers = await settledHeaders();
    }
    for (const [name, value] of Object.entries(headers)) made.response.headers.set(name, value);
    return made.response;
  } catch (error) {
    // A failure releases the reservation but for the rounds that did complete; a client that left keeps it charged.
    await settle(null, partial, clientLeft.aborted);
    if (isApiError(error))
      for (const [name, value] of Object.entries(await settledHeaders())) error.headers[name] ??= value;
    throw error;
  }
}

/**
 * The AI routes, which speak OpenAI's shapes rather than GraphQL's: GET /v1/models, POST
 * /v1/chat/completions, POST /v1/responses. They run after authentication and the rate limit, as
 * every route does.
 */
export function useAi(services: AiServices, contextFor: (state: RequestState) => Context): Plugin {
  const answer = async (
    request: Request,
    pathname: string,
    state: RequestState,
    run: () => Promise<Response>,
  ): Promise<Response> => {
    try {
      return await run();
    } catch (error) {
      // The client left mid-request (which aborted the provider's request): nobody reads this answer, and nothing failed.
      if (!isApiError(error) && request.signal.aborted) return errorResponse(clientGone(), pathname, state);
      return errorResponse(
        isApiError(error) ? error : (maskError(error, state.id) as ApiError),
        pathname,
        state,
      );
    }
  };
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const state = stateOf(serverContext);
      const path = url.pathname.replace(/\/$/, "");
      if (!state.credential) return;
      const ai =
        path === AI_ROUTES.models ||
        path === AI_ROUTES.chat ||
        path === AI_ROUTES.responses ||
        MODEL_PATH.test(path);
      const stray = ai ? [...url.searchParams.keys()][0] : undefined;
      if (stray !== undefined)
        return endResponse(
          errorResponse(
            validationFailed(stray, `${stray} is not a parameter of ${path}, which takes none.`),
            path,
            state,
          ),
        );
      if (path === AI_ROUTES.models) {
        state.route = AI_ROUTES.models;
        if (request.method !== "GET")
          return endResponse(errorResponse(methodNotAllowed(request.method, path, "GET"), path, state));
        return endResponse(
          Response.json({ object: "list", data: services.catalog.forPlan(state.credential.plan) }),
        );
      }
      const model = MODEL_PATH.exec(path);
      if (model) {
        state.route = "/v1/models/{model}";
        if (request.method !== "GET")
          return endResponse(errorResponse(methodNotAllowed(request.method, path, "GET"), path, state));
        const id = safeDecode(model[1]!);
        const problem = textProblem(id, MODEL_ID_LENGTH);
        if (problem)
          return endResponse(errorResponse(validationFailed("model", `model ${problem}.`), path, state));
        const found = services.catalog.forPlan(state.credential.plan).find((m) => m.id === id);
        if (!found)
          return endResponse(errorResponse(modelNotAvailable(id, state.credential.plan), path, state));
        return endResponse(Response.json(found));
      }
      if (path === AI_ROUTES.chat) {
        state.route = AI_ROUTES.chat;
        if (request.method !== "POST")
          return endResponse(errorResponse(methodNotAllowed(request.method, path, "POST"), path, state));
        return endResponse(
          await answer(request, path, state, () => chatCompletions(services, state, request)),
        );
      }
      if (path === AI_ROUTES.responses) {
        state.route = AI_ROUTES.responses;
        if (request.method !== "POST")
          return endResponse(errorResponse(methodNotAllowed(request.method, path, "POST"), path, state));
        return endResponse(
          await answer(request, path, state, () => responses(services, state, request, contextFor(state))),
        );
      }
    },
  };
}
