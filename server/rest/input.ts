import {
  coerceInputValue,
  GraphQLBoolean,
  GraphQLFloat,
  type GraphQLInputType,
  GraphQLInt,
  type GraphQLSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
} from "graphql";
import { validationFailed } from "../../schema/lib/errors.ts";
import { explainEnumError } from "../graphql/enum-message.ts";
import type { RouteEntry } from "./view.ts";

/** `address.city`, `items[2].quantity`: how `param` names a value inside the body. */
function paramPath(root: string, path: ReadonlyArray<string | number>): string {
  return path.reduce<string>(
    (out, key) => (typeof key === "number" ? `${out}[${key}]` : `${out}.${key}`),
    root,
  );
}

/** GraphQL coerces a single value into a one-item list; JSON callers must send the array. */
function requireArrays(param: string, value: unknown, type: GraphQLInputType): void {
  const inner = isNonNullType(type) ? type.ofType : type;
  if (value === null || value === undefined) return;
  if (isListType(inner)) {
    if (!Array.isArray(value)) throw validationFailed(param, `${param} must be an array.`);
    for (const [index, item] of value.entries()) requireArrays(`${param}[${index}]`, item, inner.ofType);
  } else if (isInputObjectType(inner) && typeof value === "object" && !Array.isArray(value)) {
    for (const [key, field] of Object.entries(inner.getFields())) {
      requireArrays(`${param}.${key}`, (value as Record<string, unknown>)[key], field.type);
    }
  }
}

/** Strict GraphQL input coercion; the first problem becomes a validation_failed naming the value. */
function check(name: string, value: unknown, type: GraphQLInputType, schema: GraphQLSchema): void {
  requireArrays(name, value, type);
  coerceInputValue(value, type, (path, _invalid, error) => {
    // graphql-js reports an unknown or missing input field at its parent object; name the field itself.
    const field = /^Field "(\w+)" (?:is not defined by type|of required type)/.exec(error.message)?.[1];
    const param = paramPath(name, field ? [...path, field] : path);
    const reason = error.message.replace(/^(Expected type "?[\w![\]]+"?\.?\s*)/, "").trim();
    throw validationFailed(
      param,
      `${param} is invalid: ${explainEnumError(reason || error.message, schema)}`,
    );
  });
}

/** Query strings carry text; read it as the JSON value the argument's type expects. */
function fromQueryString(name: string, text: string, type: GraphQLInputType): unknown {
  const named = getNamedType(type);
  if (isListType(isNonNullType(type) ? type.ofType : type)) {
    throw validationFailed(name, `${name} cannot be sent in the query string.`);
  }
  if (named === GraphQLInt) {
    if (!/^-?\d+$/.test(text)) throw validationFailed(name, `${name} must be an integer.`);
    return Number(text);
  }
  if (named === GraphQLFloat) {
    const number = Number(text);
    if (text.trim() === "" || !Number.isFinite(number))
      throw validationFailed(name, `${name} must be a number.`);
    return number;
  }
  if (named === GraphQLBoolean) {
    if (text !== "true" && text !== "false") throw validationFailed(name, `${name} must be true or false.`);
    return text === "true";
  }
  if (isEnumType(named) || isScalarType(named)) return text;
  throw validationFailed(name, `${name} cannot be sent in the query string.`);
}

/**
 * Validates a REST request against the GraphQL field it maps to and returns the variables for it.
 * Reads take arguments from the query string, writes only from the JSON body.
 * Unknown parameters are refused; values are checked with GraphQL's own strict coercion, so
 * `"limit": "5"` or `"first_name": 12` fail here instead of being coerced, and `null` survives to
 * clear a field on PATCH.
 */
export function restVariables(
  schema: GraphQLSchema,
  method: string,
  entry: RouteEntry,
  pathParams: Record<string, string>,
  query: URLSearchParams,
  body: Record<string, unknown>,
): Record<string, unknown> {
  const args = new Map(entry.field.args.map((arg) => [arg.name, arg]));
  const variables: Record<string, unknown> = { ...pathParams };

  for (const name of new Set(query.keys())) {
    const arg = args.get(name);
    if (!arg || name in pathParams) throw validationFailed(name, `Unknown query parameter '${name}'.`);
    if (method !== "GET")
      throw validationFailed(name, `Send ${name} in the JSON body, not in the query string.`);
    const values = query.getAll(name);
    if (values.length > 1) throw validationFailed(name, `${name} was sent more than once.`);
    variables[name] = fromQueryString(name, values[0]!, arg.type);
  }
  for (const [name, value] of Object.entries(body)) {
    const arg = args.get(name);
    if (!arg || name in pathParams) throw validationFailed(name, `Unknown field '${name}'.`);
    if (name in variables)
      throw validationFailed(name, `${name} was sent in both the query string and the body.`);
    variables[name] = value;
  }
  for (const arg of entry.field.args) {
    const value = variables[arg.name];
    if (value === undefined) {
      if (isNonNullType(arg.type) && arg.defaultValue === undefined) {
        throw validationFailed(arg.name, `${arg.name} is required.`);
      }
      continue;
    }
    check(arg.name, value, arg.type, schema);
  }
  return variables;
}
