import { MapperKind, mapSchema } from "@graphql-tools/utils";
import {
  defaultFieldResolver,
  type GraphQLFieldConfigArgumentMap,
  GraphQLID,
  type GraphQLInputType,
  type GraphQLSchema,
  GraphQLString,
  getNullableType,
  isInputObjectType,
  isListType,
} from "graphql";
import { validationFailed } from "./errors.ts";
import { maxListItems, maxTextLength, textProblem } from "./limits.ts";

function isText(type: GraphQLInputType): boolean {
  const inner = getNullableType(type);
  return inner === GraphQLString || inner === GraphQLID || (isListType(inner) && isText(inner.ofType));
}

/** The limits of one argument or input field, published for the OpenAPI document. */
function limitsOf(owner: string, name: string, type: GraphQLInputType): Record<string, number> {
  const inner = getNullableType(type);
  return {
    ...(isText(type) && { maxLength: maxTextLength(owner, name) }),
    ...(isListType(inner) && { maxItems: maxListItems(owner, name) }),
  };
}

/** Checks one coerced value against the limits of its type; the first problem is a validation_failed naming it. */
function check(param: string, owner: string, name: string, value: unknown, type: GraphQLInputType): void {
  if (value === null || value === undefined) return;
  const inner = getNullableType(type);
  if (isListType(inner)) {
    const list = value as unknown[];
    const most = maxListItems(owner, name);
    if (list.length > most) throw validationFailed(param, `${param} must have at most ${most} items.`);
    for (const [index, item] of list.entries()) check(`${param}[${index}]`, owner, name, item, inner.ofType);
  } else if (isInputObjectType(inner)) {
    for (const [field, config] of Object.entries(inner.getFields())) {
      check(`${param}.${field}`, inner.name, field, (value as Record<string, unknown>)[field], config.type);
    }
  } else if ((inner === GraphQLString || inner === GraphQLID) && typeof value === "string") {
    const problem = textProblem(value, maxTextLength(owner, name));
    if (problem) throw validationFailed(param, `${param} ${problem}.`);
  }
}

/**
 * The check every text argument gets, for a text a route outside GraphQL reads itself (a path
 * segment of a byte route): too long (in characters), control characters or a lone surrogate is a
 * validation_failed naming `param`, worded as for an argument.
 */
export function checkText(param: string, value: string, maxLength: number): void {
  const problem = textProblem(value, maxLength);
  if (problem) throw validationFailed(param, `${param} ${problem}.`);
}

/**
 * Every field with arguments checks them before its resolver runs: no string longer than its limit
 * or carrying NUL, control characters or lone surrogates, no list longer than its limit. REST runs
 * the same fields, so both interfaces refuse the same input with the same `param`.
 */
export function withInputLimits(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.INPUT_OBJECT_FIELD]: (config, field, typeName) => ({
      ...config,
      extensions: { ...config.extensions, ...limitsOf(typeName, field, config.type) },
    }),
    [MapperKind.OBJECT_FIELD]: (config, fieldName, typeName) => {
      const entries = Object.entries(config.args ?? {});
      if (entries.length === 0) return config;
      const owner = `${typeName}.${fieldName}`;
      const args: GraphQLFieldConfigArgumentMap = Object.fromEntries(
        entries.map(([name, arg]) => [
          name,
          { ...arg, extensions: { ...arg.extensions, ...limitsOf(owner, name, arg.type) } },
        ]),
      );
      const resolve = config.resolve ?? defaultFieldResolver;
      return {
        ...config,
        args,
        resolve: (source, values, context, info) => {
          for (const [name, arg] of entries) check(name, owner, name, values[name], arg.type);
          return resolve(source, values, context, info);
        },
      };
    },
  });
}
