import {
  getNamedType,
  getNullableType,
  isCompositeType,
  isEnumType,
  isInterfaceType,
  isListType,
  isObjectType,
  Kind,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
} from "graphql";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../schema/lib/cursor.ts";
import { maxOutputItems, maxOutputTextBytes } from "../schema/lib/limits.ts";

/**
 * What a query can produce at most: field values (work) and bytes of JSON (the response), from
 * the page sizes it asks for, the most items every other list can hold and the longest value
 * every field can have (schema/lib/limits.ts). A text of n characters is priced at 4n bytes:
 * UTF-8 needs at most 4 bytes a code point, and stored text carries no control character that
 * JSON would escape longer (input-limits.ts refuses them).
 */
export interface Estimate {
  /** Field values. */
  cost: number;
  /** Bytes of the JSON answer. */
  bytes: number;
  /** The most list fields on one path below this selection set, and that path. */
  lists: number;
  path: string[];
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

/** The page size a field with a `limit` argument returns: the literal, the default, or the maximum for a variable. */
export function pageSize(node: FieldNode, variables?: Record<string, unknown>): number {
  const arg = node.arguments?.find((a) => a.name.value === "limit");
  if (!arg) return DEFAULT_LIMIT;
  let value: number = MAX_LIMIT;
  if (arg.value.kind === Kind.INT) value = Number(arg.value.value);
  else if (arg.value.kind === Kind.VARIABLE && typeof variables?.[arg.value.name.value] === "number") {
    value = variables[arg.value.name.value] as number;
  }
  return Math.min(MAX_LIMIT, Math.max(1, Number.isFinite(value) ? value : MAX_LIMIT));
}

/** Bytes of one leaf value (a scalar or enum) of `field` on `owner`. */
function leafBytes(schema: GraphQLSchema, owner: string, field: GraphQLField<unknown, unknown>, named: GraphQLNamedType): number {
  if (isEnumType(named)) return 2 + Math.max(...named.getValues().map((v) => v.name.length));
  if (named.name === "JSONObject") return largestObjectBytes(schema);
  return SCALAR_BYTES[named.name] ?? maxOutputTextBytes(owner, field.name);
}

/** How many items a list field holds at most: a page's `limit`, else the field's own maximum. */
function listItems(owner: string, field: GraphQLField<unknown, unknown>, page: number | undefined): number {
  return page ?? maxOutputItems(owner, field.name);
}

export type FragmentLookup = (name: string) => FragmentDefinitionNode | null | undefined;

/** The estimate of `selectionSet` on `parentType` (variables, when known, size their pages). */
export function estimate(
  schema: GraphQLSchema,
  fragments: FragmentLookup,
  selectionSet: SelectionSetNode,
  parentType: GraphQLCompositeType,
  variables?: Record<string, unknown>,
): Estimate {
  const memo = new Map<string, Estimate>();
  const inProgress = new Set<string>();

  const visit = (set: SelectionSetNode, type: GraphQLCompositeType, page: number | undefined): Estimate => {
    const total: Estimate = { cost: 0, bytes: 2, lists: 0, path: [] };
    const add = (below: Estimate, times = 1) => {
      total.cost += times * below.cost;
      total.bytes += times * below.bytes;
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
        const count = isList ? listItems(type.name, field, page) : 1;
        if (!isCompositeType(named) || !selection.selectionSet) {
          const value = leafBytes(schema, type.name, field, named);
          add({ cost: 1 + (isList ? count : 0), bytes: key + (isList ? 2 + count * (value + 1) : value), lists: 0, path: [] });
          continue;
        }
        const childPage = field.args.some((a) => a.name === "limit") ? pageSize(selection, variables) : undefined;
        const below = visit(selection.selectionSet, named, childPage);
        add({ cost: 1, bytes: key + (isList ? 2 + count : 0), lists: 0, path: [] });
        add(below, count);
        deeper(below.lists + (isList ? 1 : 0), [selection.alias?.value ?? name, ...below.path]);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const condition = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : type;
        const below = visit(selection.selectionSet, isCompositeType(condition) ? condition : type, page);
        add({ ...below, bytes: below.bytes - 2 });
        deeper(below.lists, below.path);
      } else {
        const name = selection.name.value;
        const fragment = fragments(name);
        // Cycles are refused by NoFragmentCycles; here they just cost nothing more.
        if (!fragment || inProgress.has(name)) continue;
        const memoKey = `${name}:${page ?? ""}`;
        let below = memo.get(memoKey);
        if (below === undefined) {
          const condition = schema.getType(fragment.typeCondition.name.value);
          inProgress.add(name);
          below = visit(fragment.selectionSet, isCompositeType(condition) ? condition : type, page);
          inProgress.delete(name);
          memo.set(memoKey, below);
        }
        add({ ...below, bytes: below.bytes - 2 });
        deeper(below.lists, below.path);
      }
    }
    return total;
  };
  return visit(selectionSet, parentType, undefined);
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
    (type): type is GraphQLObjectType => isObjectType(type) && "id" in type.getFields() && "object" in type.getFields(),
  );
  const most = Math.max(...resources.map((type) => whole(type, new Set([type]))));
  largest.set(schema, most);
  return most;
}
