import {
  astFromValue,
  type GraphQLArgument,
  GraphQLID,
  type GraphQLInputField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  GraphQLString,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from "graphql";

/** A JSON Schema object (the draft 2020-12 subset that function-calling models and MCP clients read). */
export type JsonSchema = Record<string, unknown>;

/** JSON Schemas of the scalars as arguments; an unknown scalar is a string (its description says more). */
const INPUT_SCALARS: Record<string, JsonSchema> = {
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

/**
 * JSON Schemas of the scalars as answered: their argument schemas' bare types. No `format` and no
 * bounds: a client validates a result against them, and a validator that knows no formats refuses
 * the schema instead.
 */
const OUTPUT_SCALARS: Record<string, JsonSchema> = Object.fromEntries(
  Object.entries(INPUT_SCALARS).map(([name, schema]) => [name, { type: schema.type }]),
);

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

function inputTypeSchema(type: GraphQLInputType, limits: JsonSchema, depth: number): JsonSchema {
  const inner = getNullableType(type);
  if (isListType(inner)) {
    const { maxItems, ...rest } = limits;
    return {
      type: "array",
      items: inputTypeSchema(inner.ofType, rest, depth),
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
    const known = INPUT_SCALARS[inner.name];
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
    return argumentsSchema(Object.values(inner.getFields()), depth + 1, inner.description);
  }
  return {};
}

const isRequired = (input: GraphQLArgument | GraphQLInputField) =>
  isNonNullType(input.type) && input.defaultValue === undefined;

function inputSchema(input: GraphQLArgument | GraphQLInputField, depth: number): JsonSchema {
  const schema = inputTypeSchema(input.type, limitsOf(input.extensions), depth);
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

/**
 * The JSON Schema of a field's arguments (or an input object's fields): an object with
 * `additionalProperties: false`, required where GraphQL requires a value.
 *
 * @example argumentsSchema(schema.getQueryType()!.getFields().lead!.args)
 * // → { type: "object", properties: { id: { type: "string", … } }, required: ["id"], additionalProperties: false }
 */
export function argumentsSchema(
  inputs: readonly (GraphQLArgument | GraphQLInputField)[],
  depth = 0,
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

const nullable = (schema: JsonSchema): JsonSchema =>
  typeof schema.type === "string" && schema.enum === undefined
    ? { ...schema, type: [schema.type, "null"] }
    : { anyOf: [schema, { type: "null" }] };

/** The schema of a value of `type` as `selection` selects it; nullable where GraphQL allows null. */
function outputTypeSchema(type: GraphQLOutputType, selection: SelectionSetNode | undefined): JsonSchema {
  const inner = getNullableType(type);
  let schema: JsonSchema;
  if (isListType(inner)) schema = { type: "array", items: outputTypeSchema(inner.ofType, selection) };
  else if (isEnumType(inner)) schema = { type: "string", enum: inner.getValues().map((value) => value.name) };
  else if (isScalarType(inner)) schema = { ...(OUTPUT_SCALARS[inner.name] ?? {}) };
  else if (isObjectType(inner) && selection) schema = selectedObject(inner.getFields(), selection);
  else schema = {};
  return isNonNullType(type) ? schema : nullable(schema);
}

/** An object of the selected fields, each required (GraphQL answers every selected field, null or not). */
function selectedObject(
  fields: ReturnType<GraphQLObjectType["getFields"]>,
  selection: SelectionSetNode,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const node of selection.selections) {
    if (node.kind !== Kind.FIELD || node.name.value === "__typename") continue;
    const field = fields[node.name.value];
    if (!field) continue;
    // No descriptions: the field names say enough, and a tool list is read into a model's context.
    properties[node.alias?.value ?? node.name.value] = outputTypeSchema(field.type, node.selectionSet);
  }
  return { type: "object", properties, required: Object.keys(properties) };
}

/**
 * The JSON Schema of what `operation` answers for its one root field: exactly the fields it
 * selects, each as GraphQL types it (null allowed where GraphQL allows it).
 *
 * @example outputSchema(view, operationFor("lead")) // → { type: "object", properties: { object: …, id: … }, required: […] }
 */
export function outputSchema(view: GraphQLSchema, operation: OperationDefinitionNode): JsonSchema {
  const root = operation.operation === "mutation" ? view.getMutationType() : view.getQueryType();
  const node = operation.selectionSet.selections[0];
  if (!root || node?.kind !== Kind.FIELD) return { type: "object" };
  const type = getNullableType(root.getFields()[node.name.value]?.type);
  // The answer itself is never null: a missing object is a not_found error instead.
  return isObjectType(type) && node.selectionSet
    ? selectedObject(type.getFields(), node.selectionSet)
    : { type: "object" };
}
