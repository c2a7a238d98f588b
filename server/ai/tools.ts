import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  astFromValue,
  type DocumentNode,
  execute,
  type GraphQLArgument,
  type GraphQLError,
  type GraphQLField,
  GraphQLID,
  type GraphQLInputField,
  type GraphQLInputType,
  type GraphQLSchema,
  GraphQLString,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  Kind,
  OperationTypeNode,
  valueFromASTUntyped,
} from "graphql";
import { createSofa } from "sofa-api";
import type { Context } from "../../schema/context.ts";
import { DEFAULT_LIMIT, encodeCursor, MAX_LIMIT } from "../../schema/lib/cursor.ts";
import { ApiError, isApiError, validationFailed } from "../../schema/lib/errors.ts";
import { restView } from "../../schema/lib/rest.ts";
import { maskError } from "../graphql/errors.ts";
import { findApiError } from "../http/error-response.ts";
import { restVariables } from "../rest/input.ts";
import { isListRoute } from "../rest/operations.ts";
import { type RouteEntry, routeTable } from "../rest/view.ts";

/** A JSON Schema object (draft 2020-12 subset that function-calling models read). */
export type JsonSchema = Record<string, unknown>;

/**
 * What a credential needs to call a tool, in conjunctive normal form: every group must be
 * satisfied, a group by any one of its scopes. `[]` needs nothing (`workspace`);
 * `[["leads.read"]]` needs leads.read; `{readable: "storage"}` is `[["storage.read", "storage.write"]]`.
 */
export type ScopeRequirement = string[][];

/** One read-only tool over the workspace: a Query field of the REST view, run as the caller. */
export interface ToolDefinition {
  /** The GraphQL field's name (`leads`, `lead`, `workspace`): also the function name the model calls. */
  name: string;
  description: string;
  /** JSON Schema of the arguments: an object with `additionalProperties: false`. */
  parameters: JsonSchema;
  scopes: ScopeRequirement;
  /** A query selecting exactly what the field's REST route answers, with one variable per argument. */
  document: DocumentNode;
}

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

/** The most UTF-8 bytes of JSON one tool call hands back to the model. */
export const TOOL_OUTPUT_MAX_BYTES = 64 * 1024;

/** Resources whose data is not the workspace's business (configuration, traffic, identities, the audit log): never tools. */
const NOT_BUSINESS_DATA = new Set(["webhooks", "logs", "agents", "audit"]);

/** JSON Schemas of the scalars; an unknown scalar is a string (its description says more). */
const SCALARS: Record<string, JsonSchema> = {
  String: { type: "string" },
  ID: { type: "string" },
  Int: { type: "integer" },
  Float: { type: "number" },
  Boolean: { type: "boolean" },
  DateTime: {
    type: "string",
    format: "date-time",
    description: "ISO 8601 with a time zone, e.g. 2026-11-21T10:00:00.000Z.",
  },
  Date: { type: "string", format: "date", description: "YYYY-MM-DD." },
  Money: { type: "number", minimum: 0 },
  Quantity: { type: "number", minimum: 0 },
  Percent: { type: "number", minimum: 0, maximum: 100 },
  JSONObject: { type: "object" },
  ByteCount: { type: "integer", minimum: 0 },
};

// ---------------------------------------------------------------------------------------------
// Scopes, read from the Pothos scope-auth config each built field keeps

const and = (...rules: ScopeRequirement[]): ScopeRequirement => dedupe(rules.flat());

function or(...rules: ScopeRequirement[]): ScopeRequirement {
  // (a ∧ b) ∨ c = (a ∨ c) ∧ (b ∨ c): distribute the clauses; an empty rule (always true) wins.
  return dedupe(
    rules.reduce<ScopeRequirement>(
      (left, right) => left.flatMap((a) => right.map((b) => [...new Set([...a, ...b])])),
      [[]],
    ),
  );
}

function dedupe(rule: ScopeRequirement): ScopeRequirement {
  const seen = new Map<string, string[]>();
  for (const clause of rule) {
    const sorted = [...new Set(clause)].sort();
    seen.set(sorted.join(" "), sorted);
  }
  return [...seen.values()];
}

/**
 * A scope-auth map as a requirement, or undefined when it cannot be known before running (a
 * function, or a scope kind this builder does not define). Like Pothos, the entries of a map are
 * alternatives; `$all` and `$any` nest.
 */
function requirementOf(scopes: unknown, all = false): ScopeRequirement | undefined {
  if (scopes === undefined || scopes === null) return [];
  if (typeof scopes !== "object" || Array.isArray(scopes)) return undefined;
  const parts: ScopeRequirement[] = [];
  for (const [kind, parameter] of Object.entries(scopes)) {
    let part: ScopeRequirement | undefined;
    if (kind === "scope" && typeof parameter === "string") part = [[parameter]];
    else if (kind === "scope" && Array.isArray(parameter) && parameter.every((s) => typeof s === "string"))
      part = parameter.map((s: string) => [s]);
    else if (kind === "readable" && typeof parameter === "string")
      part = [[`${parameter}.read`, `${parameter}.write`]];
    else if (kind === "$all") part = requirementOf(parameter, true);
    else if (kind === "$any") part = requirementOf(parameter, false);
    if (!part) return undefined;
    parts.push(part);
  }
  if (parts.length === 0) return [];
  return all ? and(...parts) : or(...parts);
}

/** The scope-auth config of a built field: Pothos keeps the field's options in its extensions. */
function fieldScopes(field: GraphQLField<unknown, unknown>): ScopeRequirement | undefined {
  const options = (field.extensions as { pothosOptions?: { authScopes?: unknown } } | undefined)
    ?.pothosOptions;
  return requirementOf(options?.authScopes);
}

/** Whether a credential holding `granted` meets `rule`. */
export function allows(rule: ScopeRequirement, granted: ReadonlySet<string>): boolean {
  return rule.every((clause) => clause.some((scope) => granted.has(scope)));
}

const resourceOf = (scope: string) => scope.split(".")[0]!;

// ---------------------------------------------------------------------------------------------
// Arguments as JSON Schema

/** The default of an argument as JSON (enums by name), or undefined when there is none. */
function jsonDefault(input: GraphQLArgument | GraphQLInputField): unknown {
  if (input.defaultValue === undefined) return undefined;
  const ast = astFromValue(input.defaultValue, input.type);
  return ast ? valueFromASTUntyped(ast) : undefined;
}

function limitsOf(extensions: Readonly<Record<string, unknown>> | null | undefined): JsonSchema {
  const number = (value: unknown) =>
    typeof value === "number" && Number.isFinite(value) ? value : undefined;
  const maxLength = number(extensions?.maxLength);
  const maxItems = number(extensions?.maxItems);
  return { ...(maxLength !== undefined && { maxLength }), ...(maxItems !== undefined && { maxItems }) };
}

function typeSchema(type: GraphQLInputType, limits: JsonSchema, depth: number): JsonSchema {
  const inner = getNullableType(type);
  if (isListType(inner)) {
    const { maxItems, ...rest } = limits;
    return {
      type: "array",
      items: typeSchema(inner.ofType, rest, depth),
      ...(maxItems !== undefined && { maxItems }),
    };
  }
  if (isEnumType(inner)) {
    return {
      type: "string",
      enum: inner.getValues().map((value) => value.name),
      ...(inner.description && { description: inner.description }),
    };
  }
  if (isScalarType(inner)) {
    const known = SCALARS[inner.name];
    const schema: JsonSchema = known
      ? { ...known }
      : { type: "string", ...(inner.description && { description: inner.description }) };
    if ((inner === GraphQLString || inner === GraphQLID) && limits.maxLength !== undefined)
      schema.maxLength = limits.maxLength;
    return schema;
  }
  if (isInputObjectType(inner)) {
    // Input objects nest a few levels at most; a self-referencing one stops being described there.
    if (depth > 6) return { type: "object" };
    return objectSchema(Object.values(inner.getFields()), depth + 1, inner.description);
  }
  return {};
}

const isRequired = (input: GraphQLArgument | GraphQLInputField) =>
  isNonNullType(input.type) && input.defaultValue === undefined;

function inputSchema(input: GraphQLArgument | GraphQLInputField, depth: number): JsonSchema {
  const schema = typeSchema(input.type, limitsOf(input.extensions), depth);
  // The argument's own description; its type's (an enum's, a scalar's) when it has none.
  const description =
    input.description || (typeof schema.description === "string" ? schema.description : undefined);
  const defaultValue = jsonDefault(input);
  return {
    ...schema,
    ...(description && { description }),
    ...(defaultValue !== undefined && { default: defaultValue }),
  };
}

function objectSchema(
  inputs: readonly (GraphQLArgument | GraphQLInputField)[],
  depth: number,
  description?: string | null,
): JsonSchema {
  const required = inputs.filter(isRequired).map((input) => input.name);
  return {
    type: "object",
    ...(description && { description }),
    properties: Object.fromEntries(inputs.map((input) => [input.name, inputSchema(input, depth)])),
    ...(required.length > 0 && { required }),
    additionalProperties: false,
  };
}

// ---------------------------------------------------------------------------------------------
// The tools

interface Built {
  definitions: ToolDefinition[];
  /** Per tool name: its route entry (for the REST checks of its arguments) and its largest page. */
  routes: Map<string, { entry: RouteEntry; maxLimit: number | undefined }>;
}

const built = new WeakMap<GraphQLSchema, Built>();

function build(schema: GraphQLSchema): Built {
  const cached = built.get(schema);
  if (cached) return cached;
  const view = restView(schema);
  const queryName = view.getQueryType()?.name;
  const table = routeTable(view).filter((entry) => entry.key.startsWith(`${queryName}.`));
  // Sofa builds each route's operation with these rules; the tools select what REST answers.
  const sofa = createSofa({ basePath: "/v1", schema: view });
  const result: Built = { definitions: [], routes: new Map() };
  for (const entry of table) {
    const field = entry.field;
    const scopes = fieldScopes(field);
    // A rule only known at run time cannot say who may see the tool: such a field is no tool.
    if (!scopes) continue;
    if (scopes.some((clause) => clause.some((scope) => NOT_BUSINESS_DATA.has(resourceOf(scope))))) continue;
    // 1–100 on every list (docs/api/pagination.md): a page of large items stops early by itself.
    const maxLimit = isListRoute(entry) ? MAX_LIMIT : undefined;
    const parameters = objectSchema(field.args, 0);
    const limit = (parameters.properties as Record<string, JsonSchema>).limit;
    if (limit && maxLimit !== undefined) {
      Object.assign(limit, {
        minimum: 1,
        maximum: maxLimit,
        description: `How many objects a page holds: 1–${maxLimit}, default ${Math.min(DEFAULT_LIMIT, maxLimit)}.`,
      });
    }
    const operation = buildOperationNodeForField({
      schema: view,
      kind: OperationTypeNode.QUERY,
      field: field.name,
      models: sofa.models,
      ignore: sofa.ignore,
      circularReferenceDepth: sofa.depthLimit,
    });
    const definition: ToolDefinition = {
      name: field.name,
      description: field.description ?? `Reads ${field.name} (GET /v1${entry.route.path}).`,
      parameters,
      scopes,
      document: { kind: Kind.DOCUMENT, definitions: [operation] },
    };
    result.definitions.push(definition);
    result.routes.set(definition.name, { entry, maxLimit });
  }
  built.set(schema, result);
  return result;
}

/**
 * The workspace's read-only tools: every Query field that has a REST route, except those guarded
 * by a webhooks, logs, agents or audit scope. Built once per schema; a new resource's queries become
 * tools by being in the schema. Scopes are read from the field's scope-auth config
 * (`field.extensions.pothosOptions.authScopes`).
 */
export function workspaceTools(schema: GraphQLSchema): ToolDefinition[] {
  return build(schema).definitions;
}

/** The tools a credential holding `scopes` may call (a tool without a requirement is always there). */
export function toolsFor(
  definitions: readonly ToolDefinition[],
  scopes: ReadonlySet<string>,
): ToolDefinition[] {
  return definitions.filter((definition) => allows(definition.scopes, scopes));
}

// ---------------------------------------------------------------------------------------------
// Running a tool

function toolError(error: ApiError): ToolError {
  const requiredScope = error.details.required_scope;
  return {
    code: error.code,
    message: error.message,
    ...(error.param !== undefined && { param: error.param }),
    ...(requiredScope !== undefined && { required_scope: requiredScope }),
  };
}

/** The API error behind a GraphQL error; anything else is logged and becomes internal_error (or service_unavailable). */
function apiErrorOf(error: GraphQLError | Error): ApiError {
  return (
    findApiError(error) ??
    findApiError(maskError(error)) ??
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
 * full schema with the caller's context, so every scope rule still applies. Never throws for the
 * model's mistakes or the caller's lack of scope: they come back as `{ok: false, error}`.
 */
export async function runTool(
  definition: ToolDefinition,
  args: unknown,
  context: Context,
  schema: GraphQLSchema,
): Promise<ToolResult> {
  const own = build(schema).routes.get(definition.name);
  if (!own)
    return {
      ok: false,
      error: { code: "unknown_tool", message: `There is no tool named '${definition.name}'.` },
    };
  let variables: Record<string, unknown>;
  try {
    const input = args === undefined || args === null ? {} : args;
    if (typeof input !== "object" || Array.isArray(input))
      throw validationFailed("arguments", "The arguments must be a JSON object.");
    variables = restVariables(
      schema,
      "GET",
      own.entry,
      {},
      new URLSearchParams(),
      input as Record<string, unknown>,
    );
    const limit = variables.limit;
    const most = own.maxLimit ?? MAX_LIMIT;
    if ("limit" in variables && typeof limit === "number" && (limit > most || limit < 1)) {
      throw validationFailed("limit", `limit must be from 1 to ${most} for this tool.`);
    }
  } catch (error) {
    if (isApiError(error)) return { ok: false, error: toolError(error) };
    throw error;
  }
  let result: Awaited<ReturnType<typeof execute>>;
  try {
    result = await execute({
      schema,
      document: definition.document,
      variableValues: variables,
      contextValue: context,
    });
  } catch (error) {
    return { ok: false, error: toolError(apiErrorOf(error as Error)) };
  }
  if (result.errors?.length) {
    // As the REST facade answers: the most severe of the errors.
    const worst = result.errors.map(apiErrorOf).sort((a, b) => b.status - a.status)[0]!;
    return { ok: false, error: toolError(worst) };
  }
  const data = (result.data as Record<string, unknown> | null | undefined)?.[definition.name];
  return capResult({ ok: true, data });
}
