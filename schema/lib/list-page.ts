import { collectSubFields, type VariableValues } from "@graphql-tools/utils";
import { queryFromInfo } from "@pothos/plugin-prisma";
import {
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isLeafType,
  isListType,
  isObjectType,
} from "graphql";
import {
  cursorFrom,
  encodeCursor,
  type ListEnvelope,
  type PageArgs,
  type PageQuery,
  parsePage,
  toList,
} from "./cursor.ts";
import { ApiError } from "./errors.ts";
import { RESPONSE_BUDGET_BYTES } from "./limits.ts";
import { estimate, fieldBytes, leafBytes } from "./response-cost.ts";

/**
 * Pages stop at the response budget (docs/api/pagination.md and "Limits"): `limit` is an upper bound, and
 * a page holds the items that fit in what the response may still carry, so a request is never
 * refused for what its items could weigh. Each item is weighed before it is kept, from the row the
 * page read and the selection the request made of it:
 *
 * - a text, an id or a JSON value the row holds is counted as the exact bytes of its JSON;
 * - a list or an object the page read with the row (Invoice.items, Project.tasks, a delivery's
 *   event: the page's query loads every relation the selection asks for, Pothos's queryFromInfo)
 *   is weighed the same way, item by item;
 * - anything else (numbers, dates, enums, computed fields) at its largest, as the GraphQL cost rule
 *   prices it (schema/lib/response-cost.ts);
 * - an object that the caller may lack the scope to see (a relation to another resource) counts
 *   at least as much as the error that would replace it.
 *
 * Every figure is at least what JSON.stringify makes of the value, so the sum never underestimates.
 * What the response holds outside its pages is priced at its largest before the first page is cut
 * (the same estimate), plus a reserve for the GraphQL envelope and errors: the pages of one
 * execution share what is left, in the order they are read.
 */

/** Kept for the GraphQL envelope (`{"data": …}`) and errors outside the pages. */
export const RESPONSE_RESERVE_BYTES = 16 * 1024;
/** An error in place of a value, besides its path: message, locations and extensions. */
const ERROR_BYTES = 512;

/** What a page needs of the request's context. */
export interface PageContext {
  /** The most one response carries; RESPONSE_BUDGET_BYTES unless a test lowered it. */
  responseBudgetBytes?: number;
}

interface Execution {
  /** Bytes the pages of this execution may still add. */
  remaining: number;
  /** The execution's variables as @graphql-tools/utils reads them (one object, so its memos hold). */
  variables: VariableValues;
}

/**
 * One execution of a document, keyed by its coerced variables: graphql coerces them into a new
 * object for every execution (a GraphQL request, a REST route, an AI tool call), so two executions
 * never share a budget and the state goes with the execution.
 */
const executions = new WeakMap<object, Execution>();

function executionOf(ctx: PageContext, info: GraphQLResolveInfo): Execution {
  let state = executions.get(info.variableValues);
  if (!state) {
    const root = info.schema.getRootType(info.operation.operation)!;
    const outside = estimate(
      info.schema,
      (name) => info.fragments[name],
      info.operation.selectionSet,
      root,
      info.variableValues,
    ).bytes;
    const remaining = (ctx.responseBudgetBytes ?? RESPONSE_BUDGET_BYTES) - RESPONSE_RESERVE_BYTES - outside;
    state = { remaining, variables: { coerced: info.variableValues, sources: {} } };
    executions.set(info.variableValues, state);
  }
  return state;
}

/** Leaf types whose values are weighed as they are: texts and JSON. */
const TEXT = new Set(["String", "ID", "JSONObject"]);
/** Plain ASCII that JSON writes as it is: the common text, counted without serializing it. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const jsonBytes = (value: unknown) =>
  typeof value === "string" && PLAIN.test(value)
    ? value.length + 2
    : Buffer.byteLength(JSON.stringify(value) ?? "null");

const scopeRules = new WeakMap<GraphQLObjectType, string | null>();
/** A type's scope rule, as text (null when it has none); the rules only read the credential. */
function scopesOf(type: GraphQLObjectType): string | null {
  let rule = scopeRules.get(type);
  if (rule === undefined) {
    const scopes = (type.extensions?.pothosOptions as { authScopes?: unknown } | undefined)?.authScopes;
    rule = scopes === undefined ? null : JSON.stringify(scopes);
    scopeRules.set(type, rule);
  }
  return rule;
}

/** Where a field's value comes from when the row alone tells it; undefined when it does not. */
type Source = (row: Record<string, unknown>) => { value: unknown } | undefined;

function sourceOf(field: GraphQLField<unknown, unknown>): Source {
  const extensions = field.extensions ?? {};
  const literal = extensions.literal;
  if (typeof literal === "string") return () => ({ value: literal });
  const exposed = extensions.pothosExposedField;
  if (typeof exposed === "string") return (row) => (exposed in row ? { value: row[exposed] } : undefined);
  const relation = (extensions.pothosPrismaRelationField as { name?: string } | undefined)?.name;
  if (relation) return (row) => (row[relation] === undefined ? undefined : { value: row[relation] });
  // A computed field may name the function of the row it resolves with (Event.data).
  const measure = extensions.measure as ((row: unknown) => unknown) | undefined;
  if (typeof measure === "function") return (row) => ({ value: measure(row) });
  return () => undefined;
}

/** One response key of an object, ready to weigh on every row. */
interface Slot {
  /** `"key":` and a comma. */
  keyBytes: number;
  nodes: FieldNode[];
  /** Undefined for `__typename`. */
  field: GraphQLField<unknown, unknown> | undefined;
  source: Source;
  /** A number, date, enum or other leaf that is not text: the same bytes on every row (null is fewer). */
  fixed: number | undefined;
  /** The field at its largest, once asked for. */
  largest?: number;
}

/** The bytes every value of a leaf field that is not text takes at most, or undefined for other fields. */
function fixedBytes(
  schema: GraphQLSchema,
  owner: GraphQLObjectType,
  field: GraphQLField<unknown, unknown>,
): number | undefined {
  const inner = getNullableType(field.type);
  if (!isLeafType(inner) || TEXT.has(inner.name)) return undefined;
  return Math.max(4, leafBytes(schema, owner.name, field, inner));
}

/** Weighs rows of one page against the selection `info` made of its items. */
class Scale {
  /** The slots of each (type, field nodes), built once per execution. */
  private readonly slots = new Map<GraphQLObjectType, Map<readonly FieldNode[], Slot[]>>();

  constructor(
    private readonly info: GraphQLResolveInfo,
    private readonly state: Execution,
  ) {}

  private slotsOf(type: GraphQLObjectType, nodes: readonly FieldNode[]): Slot[] {
    let ofType = this.slots.get(type);
    if (!ofType) this.slots.set(type, (ofType = new Map()));
    let slots = ofType.get(nodes);
    if (!slots) {
      const { fields, patches } = collectSubFields(
        this.info.schema,
        this.info.fragments,
        this.state.variables,
        type,
        nodes as FieldNode[],
      );
      slots = [...fields, ...patches.flatMap((patch) => [...patch.fields])].map(([key, keyNodes]) => {
        const name = keyNodes[0]!.name.value;
        const field = name === "__typename" ? undefined : type.getFields()[name];
        const fixed = field && fixedBytes(this.info.schema, type, field);
        return {
          keyBytes: key.length + 4,
          nodes: keyNodes,
          field,
          source: field ? sourceOf(field) : () => undefined,
          fixed,
        };
      });
      ofType.set(nodes, slots);
    }
    return slots;
  }

  /**
   * Bytes of `row` as an object of `type` under `nodes`; `path` is the bytes of an error's path to
   * it. An object whose type has a scope rule other than the object holding it (`parent`'s) may
   * be refused in its place: it counts at least as much as that error.
   */
  object(
    type: GraphQLObjectType,
    row: Record<string, unknown>,
    nodes: readonly FieldNode[],
    path: number,
    parent: GraphQLObjectType,
  ) {
    let bytes = 2;
    for (const slot of this.slotsOf(type, nodes)) bytes += this.slot(type, row, slot, path + slot.keyBytes);
    const scopes = scopesOf(type);
    return scopes !== null && scopes !== scopesOf(parent) ? Math.max(bytes, ERROR_BYTES + path) : bytes;
  }

  /** Bytes of one response key of `row`: `"key":` and its value, and a comma. */
  private slot(type: GraphQLObjectType, row: Record<string, unknown>, slot: Slot, path: number): number {
    if (!slot.field) return slot.keyBytes + jsonBytes(type.name);
    if (slot.fixed !== undefined) return slot.keyBytes + slot.fixed;
    const source = slot.source(row);
    const value = source && this.value(type, slot.field, slot.field.type, source.value, slot.nodes, path);
    if (value !== undefined) return slot.keyBytes + value;
    slot.largest ??= fieldBytes(
      this.info.schema,
      (name) => this.info.fragments[name],
      type,
      slot.nodes,
      this.info.variableValues,
    );
    return slot.largest;
  }

  /** Bytes of `value` of `field`; undefined when it is not the shape the type says (then the field counts at its largest). */
  private value(
    owner: GraphQLObjectType,
    field: GraphQLField<unknown, unknown>,
    type: GraphQLOutputType,
    value: unknown,
    nodes: FieldNode[],
    path: number,
  ): number | undefined {
    if (value === null || value === undefined) return 4;
    const inner = getNullableType(type);
    if (isListType(inner)) {
      if (!Array.isArray(value)) return undefined;
      let bytes = 2;
      for (const item of value) {
        const one = this.value(owner, field, inner.ofType, item, nodes, path + 4);
        if (one === undefined) return undefined;
        bytes += one + 1;
      }
      return bytes;
    }
    if (isLeafType(inner)) {
      const exact =
        TEXT.has(inner.name) &&
        (typeof value === "string" || (typeof value === "object" && inner.name === "JSONObject"));
      return exact ? jsonBytes(value) : leafBytes(this.info.schema, owner.name, field, getNamedType(inner));
    }
    if (isObjectType(inner) && typeof value === "object")
      return this.object(inner, value as Record<string, unknown>, nodes, path, owner);
    return undefined;
  }
}

/** What a page's items are asked for: their type, and the field nodes of each response key its `data` has. */
interface ItemSelection {
  type: GraphQLObjectType;
  keys: FieldNode[][];
}

function itemSelection(info: GraphQLResolveInfo, state: Execution): ItemSelection | undefined {
  const envelope = getNamedType(info.returnType);
  const data = isObjectType(envelope) ? envelope.getFields().data : undefined;
  const type = data && getNamedType(data.type);
  if (!isObjectType(envelope) || !type || !isObjectType(type)) return undefined;
  const { fields } = collectSubFields(
    info.schema,
    info.fragments,
    state.variables,
    envelope,
    info.fieldNodes as FieldNode[],
  );
  return {
    type,
    keys: [...fields].filter(([, nodes]) => nodes[0]!.name.value === "data").map(([, nodes]) => nodes),
  };
}

/** How many of `rows` fit in what the execution may still answer (taken from it), and what the first row weighs. */
function fitting(
  info: GraphQLResolveInfo,
  state: Execution,
  selection: ItemSelection | undefined,
  rows: readonly object[],
): { kept: number; first: number } {
  if (!selection || selection.keys.length === 0) return { kept: rows.length, first: 0 };
  const scale = new Scale(info, state);
  // An error's path: the page's own, then `data` and an index.
  const path = JSON.stringify(info.path.key).length + 16;
  let kept = 0;
  let first = 0;
  for (const row of rows) {
    let bytes = 0;
    // The page's own items are as visible as the page: the field's scope is their type's.
    for (const nodes of selection.keys) {
      bytes += scale.object(selection.type, row as Record<string, unknown>, nodes, path, selection.type) + 1;
    }
    if (kept === 0) first = bytes;
    if (bytes > state.remaining) break;
    state.remaining -= bytes;
    kept += 1;
  }
  return { kept, first };
}

const mebibytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/**
 * The relations the selection asks of the page's items, loaded with the page in one query (and
 * then served from the rows by Pothos): the items are weighed with them before being kept.
 */
async function relationsOf(
  ctx: PageContext,
  info: GraphQLResolveInfo,
  selection: ItemSelection | undefined,
): Promise<object> {
  if (!selection?.keys.length || !selection.type.extensions?.pothosPrismaModel) return {};
  return (await queryFromInfo({ context: ctx, info, path: ["data"], awaitSelections: true })) as object;
}

/**
 * Runs one newest-first page of a list: `fetch` spreads the PageQuery into its findMany (with the
 * relations the selection needs), and the page keeps the rows that fit the response budget. When
 * it stops early, `has_more` is true and `next_cursor` continues right after its last item (or at
 * its first row, should not even one fit beside the other pages of the document). An item that no
 * response could hold with this selection is a query_too_costly error instead.
 */
export async function listPage<T extends { id: string }>(
  args: PageArgs,
  ctx: PageContext,
  info: GraphQLResolveInfo,
  fetch: (query: PageQuery) => Promise<T[]>,
): Promise<ListEnvelope<T>> {
  const page = parsePage(args);
  const state = executionOf(ctx, info);
  const selection = itemSelection(info, state);
  const rows = await fetch({
    // Typed as PageQuery alone: the include (or select) only adds relations to the rows.
    ...(await relationsOf(ctx, info, selection)),
    cursor: page.before ? { id: { lt: page.before } } : {},
    orderBy: { id: "desc" },
    take: page.take + 1,
  });
  const candidates = rows.slice(0, page.take);
  const { kept, first } = fitting(info, state, selection, candidates);
  if (kept === candidates.length) return toList(rows, page);
  const budget = ctx.responseBudgetBytes ?? RESPONSE_BUDGET_BYTES;
  if (kept === 0 && first > budget - RESPONSE_RESERVE_BYTES) {
    // No response could ever hold this item with this selection (the same large fields under many
    // aliases): an empty page would send the caller round for ever.
    throw new ApiError(
      400,
      "invalid_request_error",
      "query_too_costly",
      `The next item of ${info.path.key} alone would take ${mebibytes(first)}, over the ${mebibytes(budget)} a response may carry. ` +
        "Select fewer of its fields.",
    );
  }
  const data = candidates.slice(0, kept);
  const next = kept > 0 ? encodeCursor(data[kept - 1]!.id) : cursorFrom(candidates[0]!.id);
  return { object: "list", data, has_more: true, next_cursor: next };
}
