import {
  type GraphQLObjectType,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
  isObjectType,
  type OperationDefinitionNode,
  parse,
  type SelectionSetNode,
} from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../../schema/index.ts";
import {
  cursorFrom,
  DEFAULT_LIMIT,
  decodeCursor,
  encodeCursor,
  MAX_LIMIT,
  parsePage,
  toList,
} from "../../schema/lib/cursor.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { newId } from "../../schema/lib/ids.ts";
import { RESPONSE_BUDGET_BYTES } from "../../schema/lib/limits.ts";
import { RESPONSE_RESERVE_BYTES } from "../../schema/lib/list-page.ts";
import { estimate } from "../../schema/lib/response-cost.ts";
import { STATS_COST_PER_DAY } from "../../schema/resources/request-log.ts";
import { GRAPHQL_LIMITS } from "../../server/graphql/limits.ts";

function expectValidationFailed(fn: () => unknown, param: string) {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, "expected an ApiError").toBeInstanceOf(ApiError);
  const error = thrown as ApiError;
  expect(error.status).toBe(400);
  expect(error.type).toBe("invalid_request_error");
  expect(error.code).toBe("validation_failed");
  expect(error.param).toBe(param);
}

describe("encodeCursor / decodeCursor", () => {
  it("round-trips ids of every kind", () => {
    for (const kind of ["lead", "client", "workspace", "apiKey"] as const) {
      const id = newId(kind);
      expect(decodeCursor(encodeCursor(id))).toBe(id);
    }
  });

  it("is opaque: URL-safe and not the raw id", () => {
    const id = newId("lead");
    const cursor = encodeCursor(id);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(cursor).not.toContain(id);
    expect(cursor).not.toContain(id.slice(5));
    expect(encodeURIComponent(cursor)).toBe(cursor);
  });

  it.each([
    ["empty", ""],
    ["garbage", "not-a-cursor"],
    ["punctuation", "!!!"],
    ["standard base64 padding", `${Buffer.from(`v1:${newId("lead")}`).toString("base64")}==`],
    ["a raw id", newId("lead")],
    ["an id too short", Buffer.from("v1:lead_x").toString("base64url")],
    ["wrong version", Buffer.from(`v2:${newId("lead")}`).toString("base64url")],
    ["no version", Buffer.from(newId("lead")).toString("base64url")],
    ["extra segment", Buffer.from(`v1:${newId("lead")}:x`).toString("base64url")],
    ["lower-case ulid", Buffer.from(`v1:${newId("lead").toLowerCase()}`).toString("base64url")],
    ["SQL-ish payload", Buffer.from("v1:lead_' OR 1=1 --").toString("base64url")],
  ])("rejects %s with validation_failed on cursor", (_label, cursor) => {
    expectValidationFailed(() => decodeCursor(cursor), "cursor");
  });

  it("rejects a tampered cursor", () => {
    const cursor = encodeCursor(newId("lead"));
    const flip = (c: string) => (c === "A" ? "B" : "A");
    const tampered = [
      flip(cursor[0]!) + cursor.slice(1),
      cursor.slice(0, -1),
      `${cursor}x`,
      `${cursor.slice(0, 4)}${flip(cursor[4]!)}${cursor.slice(5)}`,
    ];
    for (const bad of tampered) {
      expect(bad).not.toBe(cursor);
      expectValidationFailed(() => decodeCursor(bad), "cursor");
    }
  });
});

describe("parsePage", () => {
  it("defaults to 20 and accepts 1 to 100", () => {
    expect(DEFAULT_LIMIT).toBe(20);
    expect(MAX_LIMIT).toBe(100);
    expect(parsePage({})).toEqual({ take: 20, before: undefined });
    expect(parsePage({ limit: null, cursor: null })).toEqual({ take: 20, before: undefined });
    expect(parsePage({ limit: 1 }).take).toBe(1);
    expect(parsePage({ limit: 100 }).take).toBe(100);
  });

  it.each([0, -1, 101, 1000, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("rejects limit %s", (limit) => {
    expectValidationFailed(() => parsePage({ limit }), "limit");
  });

  it("decodes the cursor into `before`, and rejects a bad one", () => {
    const id = newId("lead");
    expect(parsePage({ limit: 5, cursor: encodeCursor(id) })).toEqual({ take: 5, before: id });
    expectValidationFailed(() => parsePage({ cursor: "nope" }), "cursor");
  });
});

describe("toList", () => {
  const rows = (n: number) => Array.from({ length: n }, () => ({ id: newId("lead") }));

  it("reports has_more and a cursor of the last item returned when a row beyond the page exists", () => {
    const fetched = rows(4);
    const list = toList(fetched, { take: 3, before: undefined });
    expect(list.object).toBe("list");
    expect(list.data).toEqual(fetched.slice(0, 3));
    expect(list.has_more).toBe(true);
    expect(list.next_cursor).not.toBeNull();
    expect(decodeCursor(list.next_cursor!)).toBe(fetched[2]!.id);
  });

  it("has no more and no cursor when the page is not full or exactly full", () => {
    for (const n of [0, 2, 3]) {
      const fetched = rows(n);
      const list = toList(fetched, { take: 3, before: undefined });
      expect(list).toEqual({ object: "list", data: fetched, has_more: false, next_cursor: null });
    }
  });
});

describe("cursorFrom", () => {
  const id = (tail: string) => `lead_01J${tail.padStart(23, "0")}`;

  it("starts a page AT an id: its cursor is the very next id in sort order, carrying past Z", () => {
    expect(decodeCursor(cursorFrom(id("0")))).toBe(id("1"));
    expect(decodeCursor(cursorFrom(id("9")))).toBe(id("A"));
    expect(decodeCursor(cursorFrom(id("H")))).toBe(id("J")); // Crockford has no I
    expect(decodeCursor(cursorFrom(id("1Z")))).toBe(id("20"));
    expect(decodeCursor(cursorFrom(id("7ZZ")))).toBe(id("800"));
  });

  it("keeps the id and everything older on the page, and nothing newer", () => {
    const ids = Array.from({ length: 50 }, () => newId("lead"))
      .concat([id("Z"), id("10"), id("ZZ"), id("100")])
      .sort();
    for (const at of ids) {
      const before = decodeCursor(cursorFrom(at));
      expect(ids.filter((other) => other < before)).toEqual(ids.filter((other) => other <= at));
    }
  });
});

describe("the static price of pages (GraphQL cost rule)", () => {
  const price = (document: string, variables?: Record<string, unknown>) => {
    const operation = parse(document).definitions[0] as OperationDefinitionNode;
    return estimate(schema, () => undefined, operation.selectionSet, schema.getQueryType()!, variables);
  };

  it("counts a page at the top with no items in bytes, since it is cut at run time, but full in work", () => {
    const one = price("{ invoices(limit: 1) { data { notes items { description } } has_more next_cursor } }");
    const hundred = price(
      "{ invoices(limit: 100) { data { notes items { description } } has_more next_cursor } }",
    );
    expect(hundred.bytes).toBe(one.bytes);
    expect(hundred.bytes).toBeLessThan(1_000);
    expect(hundred.cost).toBeGreaterThan(90 * one.cost);
  });

  it("counts every other list at its most: a project's tasks outside a page weigh what 100 tasks could", () => {
    const project = price(`{ project(id: "prj_x") { tasks { description } } }`);
    expect(project.bytes).toBeGreaterThan(100 * 40_000);
  });

  it("prices requestLogStats by its days: the literal, 30 by default, 90 for a variable", () => {
    const stats = (args: string) => price(`query($d: Int) { requestLogStats${args} { total } }`).cost;
    expect(stats("(days: 7)")).toBe(2 + 7 * STATS_COST_PER_DAY);
    expect(stats("")).toBe(2 + 30 * STATS_COST_PER_DAY);
    expect(stats("(days: $d)")).toBe(2 + 90 * STATS_COST_PER_DAY);
  });
});

describe("one item of any list fits a response", () => {
  /** Every field of `type`, relations followed as deep as the GraphQL limits allow. */
  function largestSelection(type: GraphQLObjectType, depth: number, lists: number): string {
    const parts: string[] = [];
    for (const field of Object.values(type.getFields())) {
      if (field.args.length > 0) continue;
      const named = getNamedType(field.type);
      const nested = lists + (isListType(getNullableType(field.type)) ? 1 : 0);
      if (!isCompositeType(named)) parts.push(field.name);
      else if (
        isObjectType(named) &&
        depth < GRAPHQL_LIMITS.maxDepth &&
        nested <= GRAPHQL_LIMITS.maxListNesting
      ) {
        parts.push(`${field.name} { ${largestSelection(named, depth + 1, nested)} }`);
      }
    }
    return parts.join(" ");
  }

  it("so that a page asked for alone always holds one: every field once, priced at its largest", () => {
    const query = schema.getQueryType()!;
    const heaviest: [string, number][] = [];
    for (const field of Object.values(query.getFields()).filter((f) =>
      f.args.some((arg) => arg.name === "limit"),
    )) {
      const item = getNamedType(
        (getNamedType(field.type) as GraphQLObjectType).getFields().data!.type,
      ) as GraphQLObjectType;
      // An item of a page: its root field is at depth 1, the page's `data` at 2.
      const set = (parse(`{ ${largestSelection(item, 3, 1)} }`).definitions[0] as OperationDefinitionNode)
        .selectionSet as SelectionSetNode;
      heaviest.push([field.name, estimate(schema, () => undefined, set, item, undefined, true).bytes]);
    }
    expect(heaviest.length).toBeGreaterThanOrEqual(16);
    for (const [name, bytes] of heaviest)
      expect(bytes, name).toBeLessThan(RESPONSE_BUDGET_BYTES - RESPONSE_RESERVE_BYTES);
    // Not by a wide margin: a webhook delivery with its endpoint's 20 deliveries and their events.
    expect(Math.max(...heaviest.map(([, bytes]) => bytes))).toBeGreaterThan(RESPONSE_BUDGET_BYTES / 2);
  });
});
