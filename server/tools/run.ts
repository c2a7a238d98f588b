import { execute, type GraphQLError, type GraphQLSchema } from "graphql";
import type { Context } from "../../schema/context.ts";
import { encodeCursor, MAX_LIMIT } from "../../schema/lib/cursor.ts";
import { ApiError, isApiError, validationFailed } from "../../schema/lib/errors.ts";
import { maskError } from "../graphql/errors.ts";
import { findApiError } from "../http/error-response.ts";
import { restVariables } from "../rest/input.ts";
import type { CatalogTool } from "./catalog.ts";

export interface ToolError {
  code: string;
  message: string;
  param?: string;
  required_scope?: string;
}

/** What a tool answers; `JSON.stringify` of it is what the model reads (at most TOOL_OUTPUT_MAX_BYTES). */
export type ToolResult =
  | { ok: true; data: unknown; note?: string }
  | { ok: true; truncated: true; note: string; partial_json: string }
  | { ok: false; error: ToolError };

/** What running a tool came to: its data, or the API error a REST call would have answered. */
export type ToolOutcome = { ok: true; data: unknown } | { ok: false; error: ApiError };

/** The most UTF-8 bytes of JSON one tool call hands back to the model. */
export const TOOL_OUTPUT_MAX_BYTES = 64 * 1024;

/** An API error as a model reads it: its code, message, param and the scope it lacked. */
export function toolError(error: ApiError): ToolError {
  const requiredScope = error.details.required_scope;
  return {
    code: error.code,
    message: error.message,
    ...(error.param !== undefined && { param: error.param }),
    ...(requiredScope !== undefined && { required_scope: requiredScope }),
  };
}

/** The API error behind a GraphQL error; anything else is logged and becomes internal_error (or service_unavailable). */
function apiErrorOf(error: GraphQLError | Error, requestId: string): ApiError {
  return (
    findApiError(error) ??
    findApiError(maskError(error, requestId)) ??
    new ApiError(500, "api_error", "internal_error", "An unexpected error occurred.")
  );
}

const utf8Length = (text: string) => Buffer.byteLength(text, "utf8");

interface ListShape {
  object: "list";
  data: { id?: unknown }[];
  has_more: boolean;
  next_cursor: string | null;
}

const isList = (value: unknown): value is ListShape =>
  typeof value === "object" &&
  value !== null &&
  (value as ListShape).object === "list" &&
  Array.isArray((value as ListShape).data);

/**
 * Keeps a result within `maxBytes` of JSON. A list keeps the items that fit and says where the
 * next page starts; anything else is cut as text, with a note.
 *
 * @example capResult({ ok: true, data: page }, 1024) // → the first items of page that fit, has_more: true, a note
 */
export function capResult(result: ToolResult, maxBytes = TOOL_OUTPUT_MAX_BYTES): ToolResult {
  if (utf8Length(JSON.stringify(result)) <= maxBytes || !result.ok || !("data" in result)) return result;
  const data = result.data;
  if (isList(data)) {
    const items = data.data;
    let low = 1;
    let high = items.length - 1;
    let fitted: ToolResult | undefined;
    // The largest prefix of the page that fits (JSON length grows with the number of items).
    while (low <= high) {
      const count = Math.floor((low + high) / 2);
      const kept = items.slice(0, count);
      const last = kept[kept.length - 1];
      const candidate: ToolResult = {
        ok: true,
        data: {
          ...data,
          data: kept,
          has_more: true,
          next_cursor: typeof last?.id === "string" ? encodeCursor(last.id) : data.next_cursor,
        },
        note: `Only the first ${count} of the ${items.length} items fit in ${maxBytes / 1024} KiB: pass next_cursor as cursor for the rest, or ask for fewer with limit.`,
      };
      if (utf8Length(JSON.stringify(candidate)) <= maxBytes) {
        fitted = candidate;
        low = count + 1;
      } else high = count - 1;
    }
    if (fitted) return fitted;
  }
  const text = JSON.stringify(data);
  const note = `The result was longer than ${maxBytes / 1024} KiB and was cut: partial_json is its beginning. Ask for less (a smaller limit, or one object by id).`;
  let low = 0;
  let high = text.length;
  // The longest beginning whose escaped form still fits.
  while (low < high) {
    const length = Math.ceil((low + high) / 2);
    const fits =
      utf8Length(JSON.stringify({ ok: true, truncated: true, note, partial_json: text.slice(0, length) })) <=
      maxBytes;
    if (fits) low = length;
    else high = length - 1;
  }
  let end = low;
  // Never end on the first half of a surrogate pair.
  if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1]!)) end -= 1;
  return { ok: true, truncated: true, note, partial_json: text.slice(0, end) };
}

/**
 * Runs a tool as the caller: its arguments are checked as its REST route checks them (strict
 * GraphQL input coercion, the route's largest page), then its document is executed against the
 * full schema with the caller's context, so every scope rule, the data quota and the audit log
 * still apply. Never throws for the model's mistakes or the caller's lack of scope: they come back
 * as `{ok: false, error}`. The result is not capped: each surface bounds it its own way.
 *
 * @example await runCatalogTool(tool, { limit: 5 }, context, schema) // → { ok: true, data: { object: "list", … } }
 */
export async function runCatalogTool(
  tool: CatalogTool,
  args: unknown,
  context: Context,
  schema: GraphQLSchema,
): Promise<ToolOutcome> {
  let variables: Record<string, unknown>;
  try {
    const input = args === undefined || args === null ? {} : args;
    if (typeof input !== "object" || Array.isArray(input))
      throw validationFailed("arguments", "The arguments must be a JSON object.");
    variables = restVariables(
      schema,
      tool.route.route.method,
      tool.route,
      {},
      new URLSearchParams(),
      input as Record<string, unknown>,
    );
    const limit = variables.limit;
    const most = tool.maxLimit ?? MAX_LIMIT;
    if ("limit" in variables && typeof limit === "number" && (limit > most || limit < 1)) {
      throw validationFailed("limit", `limit must be from 1 to ${most} for this tool.`);
    }
  } catch (error) {
    if (isApiError(error)) return { ok: false, error };
    throw error;
  }
  let result: Awaited<ReturnType<typeof execute>>;
  try {
    result = await execute({
      schema,
      document: tool.document,
      variableValues: variables,
      contextValue: context,
    });
  } catch (error) {
    return { ok: false, error: apiErrorOf(error as Error, context.requestId) };
  }
  if (result.errors?.length) {
    // As the REST facade answers: the most severe of the errors.
    const worst = result.errors
      .map((error) => apiErrorOf(error, context.requestId))
      .sort((a, b) => b.status - a.status)[0]!;
    return { ok: false, error: worst };
  }
  return { ok: true, data: (result.data as Record<string, unknown> | null | undefined)?.[tool.field] };
}
