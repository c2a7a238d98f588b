import { describe, expect, it } from "vitest";
import { decodeCursor, DEFAULT_LIMIT, encodeCursor, MAX_LIMIT, parsePage, toList } from "../../schema/lib/cursor.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { newId } from "../../schema/lib/ids.ts";

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
