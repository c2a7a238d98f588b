import {
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isCompositeType,
  isEnumType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type SelectionSetNode,
} from "graphql";
import { DEFAULT_LIMIT, MAX_LIMIT } from "./cursor.ts";
import { maxOutputItems, maxOutputTextBytes } from "./limits.ts";

/**
 * What a query can produce at most (docs/api/limits.md): field values (work) and bytes of JSON (the
 * response), from the page sizes it asks for, the most items every other list can hold and the
 * longest value every field can have (schema/lib/limits.ts). A text of n characters is priced at
 * 4n bytes: UTF-8 needs at most 4 bytes a code point, and stored text carries no control character
 * that JSON would escape longer (input-limits.ts refuses them).
 *
 * Work counts every page full at its `limit`: the rows are read whatever the page ends up holding.
 * Bytes count a page at the top of the document (no list above it) with no item at all: such a
 * page is cut at run time by the bytes its items actually weigh (schema/lib/page-budget.ts), so
 * what is priced here is everything else, which cannot shrink. A page inside a list is counted full.
 */
export interface Estimate {
  /** Field values. */
  cost: number;
  /** Bytes of the JSON answer outside the pages cut at run time. */
  bytes: number;
  /** The most list fields on one path below this selection set, and that path. */
  lists: number;
  path: string[];
}

/** A field priced by an argument: `each` values per unit of `arg` (`default` when absent, `most` when unknown). */
export interface ArgumentCost {
  arg: string;
  each: number;
  default: number;
  most: number;
}

const SCALAR_BYTES: Record<string, number> = {
  Int: 11,
  Float: 24,
  Boolean: 5,
  Money: 16,
  Quantity: 16,
  Percent: 8,
  DateTime: 26,
  Date: 12,
  ByteCount: 16,
};

/** An integer argument of `node`: its literal, its variable's value when known, else `unknown`; `absent` when not given. */
function intArgument(
  node: FieldNode,
  name: string,
  variables: Record<string, unknown> | undefined,
  absent: number,
  unknown: number,
): number {
  const arg = node.arguments?.find((a) => a.name.value === name);
  if (!arg) return absent;
  if (arg.value.kind === Kind.INT) return Number(arg.value.value);
  const known = arg.value.kind === Kind.VARIABLE ? variables?.[arg.value.name.value] : undefined;
  return typeof known === "number" ? known : unknown;
}

/** The page size a field with a `limit` argument returns: the literal, the default, or the maximum for a variable. */
export function pageSize(node: FieldNode, variables?: Record<string, unknown>): number {
  const value = intArgument(node, "limit", variables, DEFAULT_LIMIT, MAX_LIMIT);
  return Math.min(MAX_LIMIT, Math.max(1, Number.isFinite(value) ? value : MAX_LIMIT));
}

/** The work of a field priced by an argument (`extensions.argumentCost`, e.g. requestLogStats by its `days`). */
function argumentCost(
  field: GraphQLField<unknown, unknown>,
  node: FieldNode,
  variables: Record<string, unknown> | undefined,
): number {
  const priced = field.extensions?.argumentCost as ArgumentCost | undefined;
  if (!priced) return 0;
  const units = intArgument(node, priced.arg, variables, priced.default, priced.most);
  return priced.each * Math.min(priced.most, Math.max(1, Number.isFinite(units) ? units : priced.most));
}

/** Bytes of one leaf value (a scalar or enum) of `field` on `owner`. */
export function leafBytes(
  schema: GraphQLSchema,
  owner: string,
  field: GraphQLField<unknown, unknown>,
  named: GraphQLNamedType,
): number {
  const literal = field.extensions?.literal;
  if (typeof literal === "string") return JSON.stringify(literal).length;
  if (isEnumType(named)) return 2 + Math.max(...named.getValues().map((v) => v.name.length));
  if (named.name === "JSONObject") return largestObjectBytes(schema);
  return SCALAR_BYTES[named.name] ?? maxOutputTextBytes(owner, field.name);
}

/** How many items a list field holds at most: a page's `limit`, else the field's own maximum. */
function listItems(owner: string, field: GraphQLField<unknown, unknown>, page: number | undefined): number {
  return page ?? maxOutputItems(owner, field.name);
}

export type FragmentLookup = (name: string) => FragmentDefinitionNode | null | undefined;

/** A page being priced: its size, and whether its items are left to the run-time cut (a page at the top). */
interface Page {
  size: number;
  cut: boolean;
}

/**
 * The estimate of `selectionSet` on `parentType` (variables, when known, size their pages).
 * `insideList`: the selection is an item of a list, so pages below it are counted full.
 */
export function estimate(
  schema: GraphQLSchema,
  fragments: FragmentLookup,
  selectionSet: SelectionSetNode,
  parentType: GraphQLCompositeType,
  variables?: Record<string, unknown>,
  insideList = false,
): Estimate {
  const memo = new Map<string, Estimate>();
  const inProgress = new Set<string>();

  const visit = (
    set: SelectionSetNode,
    type: GraphQLCompositeType,
    page: Page | undefined,
    listed: boolean,
  ): Estimate => {
    const total: Estimate = { cost: 0, bytes: 2, lists: 0, path: [] };
    const add = (below: Estimate, times = 1, bytesTimes = times) => {
      total.cost += times * below.cost;
      total.bytes += bytesTimes * below.bytes;
    };
    const deeper = (lists: number, path: string[]) => {
      if (lists > total.lists) Object.assign(total, { lists, path });
    };
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const name = selection.name.value;
        const key = (selection.alias?.value ?? name).length + 4;
        if (name.startsWith("__")) {
          // Introspection (__schema, __type) is not priced: its size is the schema's, not the data's.
          if (name === "__typename") add({ cost: 1, bytes: key + 40, lists: 0, path: [] });
          continue;
        }
        const field: GraphQLField<unknown, unknown> | undefined =
          isObjectType(type) || isInterfaceType(type) ? type.getFields()[name] : undefined;
        if (!field) continue; // unknown fields are the spec rules' business
        const named = getNamedType(field.type);
        const isList = isListType(getNullableType(field.type));
        const count = isList ? listItems(type.name, field, page?.size) : 1;
        // The items of a page at the top weigh nothing here: the run-time cut bounds them.
        const bytesCount = isList && page?.cut ? 0 : count;
        const work = argumentCost(field, selection, variables);
        if (!isCompositeType(named) || !selection.selectionSet) {
          const value = leafBytes(schema, type.name, field, named);
          add({
            cost: 1 + work + (isList ? count : 0),
            bytes: key + (isList ? 2 + bytesCount * (value + 1) : value),
            lists: 0,
            path: [],
          });
          continue;
        }
        const childPage = field.args.some((a) => a.name === "limit")
          ? { size: pageSize(selection, variables), cut: !listed }
          : undefined;
        const below = visit(selection.selectionSet, named, childPage, listed || isList);
        add({ cost: 1 + work, bytes: key + (isList ? 2 + bytesCount : 0), lists: 0, path: [] });
        add(below, count, bytesCount);
        deeper(below.lists + (isList ? 1 : 0), [selection.alias?.value ?? name, ...below.path]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const condition = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type;
        const below = visit(
          selection.selectionSet,
          isCompositeType(condition) ? condition : type,
          page,
          listed,
        );
        add({ ...below, bytes: below.bytes - 2 });
        deeper(below.lists, below.path);
      } else {
        const name = selection.name.value;
        const fragment = fragments(name);
        // Cycles are refused by NoFragmentCycles; here they just cost nothing more.
        if (!fragment || inProgress.has(name)) continue;
        const memoKey = `${name}:${page?.size ?? ""}:${page?.cut ?? ""}:${listed}`;
        let below = memo.get(memoKey);
        if (below === undefined) {
          const condition = schema.getType(fragment.typeCondition.name.value);
          inProgress.add(name);
          below = visit(fragment.selectionSet, isCompositeType(condition) ? condition : type, page, listed);
          inProgress.delete(name);
          memo.set(memoKey, below);
        }
        add({ ...below, bytes: below.bytes - 2 });
        deeper(below.lists, below.path);
      }
    }
    return total;
  };
  return visit(selectionSet, parentType, undefined, insideList);
}

/** The largest bytes `fieldNodes` (one response key) of `parentType` can weigh inside a list, its key included. */
export function fieldBytes(
  schema: GraphQLSchema,
  fragments: FragmentLookup,
  parentType: GraphQLObjectType,
  fieldNodes: readonly FieldNode[],
  variables?: Record<string, unknown>,
): number {
  const set: SelectionSetNode = { kind: Kind.SELECTION_SET, selections: fieldNodes };
  // Every node of the key is priced: their union never weighs more than their sum.
  return estimate(schema, fragments, set, parentType, variables, true).bytes - 2;
}

const largest = new WeakMap<GraphQLSchema, number>();

/**
 * A JSONObject holds a resource as the REST API returned it (an event's `data`): priced as the
 * largest resource of the schema with every REST field, relations followed as the REST
 * representation follows them (never back to a type already on the path).
 */
function largestObjectBytes(schema: GraphQLSchema): number {
  const known = largest.get(schema);
  if (known !== undefined) return known;
  largest.set(schema, 0); // a JSONObject inside the walk below counts nothing
  const whole = (type: GraphQLObjectType, path: Set<GraphQLObjectType>): number => {
    let bytes = 2;
    for (const field of Object.values(type.getFields())) {
      if (field.extensions?.rest === false) continue;
      const named = getNamedType(field.type);
      const isList = isListType(getNullableType(field.type));
      const count = isList ? listItems(type.name, field, undefined) : 1;
      let value: number;
      if (isObjectType(named)) {
        if (path.has(named) || field.args.length > 0) continue;
        value = whole(named, new Set([...path, named]));
      } else if (isCompositeType(named)) continue;
      else value = leafBytes(schema, type.name, field, named);
      bytes += field.name.length + 4 + (isList ? 2 + count * (value + 1) : value);
    }
    return bytes;
  };
  const resources = Object.values(schema.getTypeMap()).filter(
    (type): type is GraphQLObjectType =>
      isObjectType(type) && "id" in type.getFields() && "object" in type.getFields(),
  );
  const most = Math.max(...resources.map((type) => whole(type, new Set([type]))));
  largest.set(schema, most);
  return most;
}
