import { MODEL_ID_LENGTH } from "../../schema/lib/limits.ts";
import type { OpenApiExtension } from "../rest/openapi.ts";

const MODEL = {
  type: "object",
  required: ["id", "object", "created", "owned_by"],
  additionalProperties: false,
  properties: {
    id: { type: "string", description: "What to send as `model`." },
    object: { type: "string", enum: ["model"] },
    created: { type: "integer", description: "Unix seconds." },
    owned_by: { type: "string" },
  },
};

const codingHeader = (description: string, schema: Record<string, unknown>) => ({
  description,
  required: true,
  schema,
});

/** docs/api/limits.md: on every coding response, streams included. */
const CODING_HEADERS = {
  "x-codingplan-5h-used-percent": codingHeader("Percent of the 5-hour token pool used.", {
    type: "number",
    minimum: 0,
    maximum: 100,
  }),
  "x-codingplan-5h-reset": codingHeader("When the 5-hour pool refills (ISO 8601).", {
    type: "string",
    format: "date-time",
  }),
  "x-codingplan-weekly-used-percent": codingHeader("Percent of the weekly token pool used.", {
    type: "number",
    minimum: 0,
    maximum: 100,
  }),
  "x-codingplan-weekly-reset": codingHeader("When the weekly pool refills (ISO 8601, a Monday 00:00 UTC).", {
    type: "string",
    format: "date-time",
  }),
};

/** docs/api/ai.md: on every general-AI answer of /responses (ai.responses), streams included. */
const DAILY_HEADERS = {
  "x-ai-daily-tokens-limit": codingHeader(
    "The workspace's general AI budget of tokens per UTC day (its plan's).",
    { type: "integer", minimum: 1 },
  ),
  "x-ai-daily-tokens-remaining": codingHeader(
    "Tokens of the day's budget left: the budget less the tokens settled today and those reserved by requests still running (this one included, on a stream).",
    { type: "integer", minimum: 0 },
  ),
  "x-ai-daily-reset": codingHeader("When the budget refills: the next 00:00 UTC (ISO 8601).", {
    type: "string",
    format: "date-time",
  }),
};

/**
 * The AI routes speak OpenAI's shapes (server/ai/plugin.ts). Bodies passed through to the
 * provider are described as far as Kontor reads them, and left open beyond.
 */
export const aiOpenApi: OpenApiExtension = ({ paths, errors, headers }) => {
  paths["/models"] = {
    get: {
      operationId: "listModels",
      summary: "List the models of the plan",
      description: "OpenAI's list shape: the models the workspace's plan may use. Any valid credential.",
      tags: ["ai"],
      responses: {
        200: {
          description: "The plan's models.",
          headers,
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["object", "data"],
                additionalProperties: false,
                properties: {
                  object: { type: "string", enum: ["list"] },
                  data: { type: "array", items: MODEL },
                },
              },
            },
          },
        },
        ...errors({ method: "GET", hasPathParams: false, declared: [] }),
      },
    },
  };
  paths["/models/{model}"] = {
    get: {
      operationId: "retrieveModel",
      summary: "Retrieve a model of the plan",
      tags: ["ai"],
      parameters: [
        {
          name: "model",
          in: "path",
          required: true,
          description: "A model id.",
          schema: { type: "string", maxLength: MODEL_ID_LENGTH },
        },
      ],
      responses: {
        200: { description: "The model.", headers, content: { "application/json": { schema: MODEL } } },
        ...errors({ method: "GET", hasPathParams: false, declared: ["model_not_available"] }),
      },
    },
  };
  const coding = { ...headers, ...CODING_HEADERS };
  paths["/chat/completions"] = {
    post: {
      operationId: "createChatCompletion",
      summary: "Create a chat completion (OpenAI-compatible)",
      description:
        "Needs ai.coding. The body goes to the AI provider as sent (tools, images, files, response_format and every other parameter) and its answer " +
        "comes back as sent: JSON, or with `stream: true` server-sent events ending with `data: [DONE]`. Metered by the coding plan's tokens.",
      tags: ["ai"],
      parameters: [{ $ref: "#/components/parameters/IdempotencyKey" }],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["model", "messages"],
              additionalProperties: true,
              properties: {
                model: { type: "string", description: "One of GET /models." },
                messages: { type: "array", items: { type: "object", additionalProperties: true } },
                stream: { type: "boolean" },
              },
            },
          },
        },
      },
      responses: {
        200: {
          description: "The provider's completion, or its stream.",
          headers: coding,
          content: {
            "application/json": {
              schema: {
                type: "object",
                additionalProperties: true,
                properties: { object: { type: "string" }, choices: { type: "array" } },
              },
            },
            "text/event-stream": { schema: { type: "string" } },
          },
        },
        ...errors({
          method: "POST",
          hasPathParams: false,
          declared: [
            "model_not_available",
            "concurrency_limit_exceeded",
            "upstream_error",
            "upstream_timeout",
            "ai_unavailable",
          ],
        }),
      },
    },
  };
  // /responses is general AI or coding, by the credential's scopes: each use carries its own headers.
  const optional = Object.fromEntries(
    Object.entries({ ...CODING_HEADERS, ...DAILY_HEADERS }).map(([name, header]) => [
      name,
      { ...header, required: false },
    ]),
  );
  paths["/responses"] = {
    post: {
      operationId: "createResponse",
      summary: "Create a response grounded in the workspace (OpenAI Responses shape)",
      description:
        "Needs ai.responses (general AI: counted against the plan's AI requests per minute and the workspace's daily token budget, with the " +
        "x-ai-daily-* headers; a spent budget is 429 rate_limit_exceeded with Retry-After) or ai.coding (metered by the coding plan's tokens, " +
        "with the x-codingplan-* headers). The model gets read-only tools over the workspace's data, made from the schema's queries and run as " +
        "the caller: a credential without invoices.read has no invoice tool. `input` (a string or message items) or `prompt`; `instructions` " +
        "become the one system message. With `stream: true`, Responses server-sent events.",
      tags: ["ai"],
      parameters: [{ $ref: "#/components/parameters/IdempotencyKey" }],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["model"],
              additionalProperties: true,
              properties: {
                model: { type: "string", description: "One of GET /models." },
                input: {
                  description: "A string, or message items ({role, content}).",
                  oneOf: [{ type: "string" }, { type: "array", items: { type: "object" } }],
                },
                prompt: { type: "string", description: "The plain form: the question as text." },
                instructions: { type: "string" },
                stream: { type: "boolean" },
              },
            },
          },
        },
      },
      responses: {
        200: {
          description: "The response object, or its event stream.",
          headers: { ...headers, ...optional },
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["id", "object", "status", "output"],
                additionalProperties: true,
                properties: {
                  id: { type: "string" },
                  object: { type: "string", enum: ["response"] },
                  status: { type: "string" },
                  output: { type: "array" },
                },
              },
            },
            "text/event-stream": { schema: { type: "string" } },
          },
        },
        ...errors({
          method: "POST",
          hasPathParams: false,
          declared: [
            "model_not_available",
            "concurrency_limit_exceeded",
            "upstream_error",
            "upstream_timeout",
            "ai_unavailable",
          ],
        }),
      },
    },
  };
};
