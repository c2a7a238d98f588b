import { createHash } from "node:crypto";
import type { GraphQLSchema } from "graphql";
import type { Context } from "../../schema/context.ts";
import { type ApiError, validationFailed } from "../../schema/lib/errors.ts";
import { restErrorBody } from "../http/error-response.ts";
import type { RequestState } from "../http/request-state.ts";
import { claimKey, finishClaim } from "../policies/idempotency.ts";
import type { IdempotencyStore, StoredResponse } from "../policies/idempotency-store.ts";
import type { CatalogTool } from "../tools/catalog.ts";
import { capResult, runCatalogTool, TOOL_OUTPUT_MAX_BYTES } from "../tools/run.ts";
import { IDEMPOTENCY_KEY_ARGUMENT } from "./tools.ts";

/** A `tools/call` result as MCP carries it. */
export interface CallResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** Statuses a retry may fix (401, 403, 429, 5xx): such a result is not kept for the key's replays. */
const retryable = (status: number) => status === 401 || status === 403 || status === 429 || status >= 500;

/**
 * A refused or failed call: the API's error body (docs/api/conventions-and-errors.md#errors) as
 * JSON text, never as `structuredContent`, which 2025-era clients validate against the tool's
 * `outputSchema` even on errors.
 */
function errorResult(error: ApiError, state: RequestState): CallResult {
  return { content: [{ type: "text", text: JSON.stringify(restErrorBody(error, state)) }], isError: true };
}

const tooLarge = (bytes: number) =>
  validationFailed(
    "arguments",
    `The result (${bytes} bytes of JSON) is over the ${TOOL_OUTPUT_MAX_BYTES / 1024} KiB a tool answers: ask for less (a smaller limit, or one object by id).`,
  );

/** Runs the tool and shapes its answer: a list that does not fit keeps the items that do. */
async function execute(
  tool: CatalogTool,
  args: Record<string, unknown>,
  state: RequestState,
  context: Context,
  schema: GraphQLSchema,
): Promise<{ result: CallResult; status: number }> {
  const outcome = await runCatalogTool(tool, args, context, schema);
  if (!outcome.ok) return { result: errorResult(outcome.error, state), status: outcome.error.status };
  const json = JSON.stringify(outcome.data);
  // Most answers fit: serialized once. A list that does not keeps the items that do.
  if (Buffer.byteLength(json) <= TOOL_OUTPUT_MAX_BYTES) return answer(outcome.data, json);
  const capped = capResult(outcome);
  if (!capped.ok || !("data" in capped))
    return { result: errorResult(tooLarge(Buffer.byteLength(json)), state), status: 400 };
  return answer(capped.data, JSON.stringify(capped.data) + (capped.note ? `\n\n${capped.note}` : ""));
}

function answer(data: unknown, text: string): { result: CallResult; status: number } {
  return {
    result: { content: [{ type: "text", text }], structuredContent: data as Record<string, unknown> },
    status: 200,
  };
}

/** Key order never changes a payload's fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/**
 * `tools/call` for one catalog tool, as the caller: a write with an `idempotency_key` claims it in
 * the workspace (the same store and rules as the `Idempotency-Key` header), and a repeat with the
 * same arguments answers the first call's result instead of running again.
 *
 * @example await callTool(tool, { first_name: "Ada", idempotency_key: "lead-ada" }, state, context, schema, store)
 */
export async function callTool(
  tool: CatalogTool,
  args: Record<string, unknown>,
  state: RequestState,
  context: Context,
  schema: GraphQLSchema,
  store: IdempotencyStore,
): Promise<CallResult> {
  const { [IDEMPOTENCY_KEY_ARGUMENT]: key, ...rest } = args;
  if (tool.kind === "query" || key === undefined) {
    if (key !== undefined)
      return errorResult(
        validationFailed(
          IDEMPOTENCY_KEY_ARGUMENT,
          `Unknown field '${IDEMPOTENCY_KEY_ARGUMENT}': only writes take one.`,
        ),
        state,
      );
    return (await execute(tool, rest, state, context, schema)).result;
  }
  if (typeof key !== "string")
    return errorResult(
      validationFailed(IDEMPOTENCY_KEY_ARGUMENT, `${IDEMPOTENCY_KEY_ARGUMENT} must be a string.`),
      state,
    );
  const fingerprint = createHash("sha256")
    .update(`mcp ${tool.name}\n${canonical(rest)}`)
    .digest("hex");
  const claimed = await claimKey(store, context.credential, key, fingerprint);
  if ("refused" in claimed) {
    const refused = claimed.refused;
    return errorResult(
      refused.param === "Idempotency-Key"
        ? validationFailed(
            IDEMPOTENCY_KEY_ARGUMENT,
            `${IDEMPOTENCY_KEY_ARGUMENT} must be 1–255 printable ASCII characters.`,
          )
        : refused,
      state,
    );
  }
  if ("stored" in claimed) {
    const replayed = JSON.parse(Buffer.from(claimed.stored.body, "base64").toString("utf8")) as CallResult;
    if (claimed.stored.errorCode) state.errorCode = claimed.stored.errorCode;
    return { ...replayed, _meta: { "kontor/idempotent_replay": true } };
  }
  const { result, status } = await execute(tool, rest, state, context, schema);
  const stored: StoredResponse | null = retryable(status)
    ? null
    : {
        status,
        headers: [],
        body: Buffer.from(JSON.stringify(result)).toString("base64"),
        ...(state.errorCode && { errorCode: state.errorCode }),
      };
  await finishClaim(store, claimed.claim, stored);
  return result;
}
