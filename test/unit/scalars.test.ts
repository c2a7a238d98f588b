import { GraphQLError, Kind } from "graphql";
import { describe, expect, it } from "vitest";
import {
  parseDate,
  parseDateTime,
  parseMoney,
  parsePercent,
  parseQuantity,
  scalars,
} from "../../schema/scalars.ts";

describe("DateTime", () => {
  it.each([
    ["2026-05-01T09:30:00Z", "2026-05-01T09:30:00.000Z"],
    ["2026-05-01T09:30Z", "2026-05-01T09:30:00.000Z"],
    ["2026-05-01T09:30:00.123Z", "2026-05-01T09:30:00.123Z"],
    ["2026-12-01T10:00:00+02:00", "2026-12-01T08:00:00.000Z"],
    ["2026-12-01T10:00:00-05:30", "2026-12-01T15:30:00.000Z"],
    ["2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00.000Z"],
  ])("parses %s as %s", (input, iso) => {
    expect(parseDateTime(input).toISOString()).toBe(iso);
  });

  it.each([
    ["no time zone", "2026-05-01T09:30:00"],
    ["date only", "2026-05-01"],
    ["space separator", "2026-05-01 09:30:00Z"],
    ["compact offset", "2026-05-01T09:30:00+0200"],
    ["words", "tomorrow"],
    ["empty", ""],
    ["month 13", "2026-13-01T09:30:00Z"],
    ["hour 25", "2026-05-01T25:00:00Z"],
    ["a number", 1_777_000_000_000],
    ["a Date object", new Date()],
    ["null", null],
  ])("rejects %s", (_label, value) => {
    expect(() => parseDateTime(value)).toThrow(GraphQLError);
  });

  it("serializes to UTC ISO and parses literals", () => {
    expect(scalars.DateTime.serialize(new Date("2026-05-01T09:30:00+02:00"))).toBe(
      "2026-05-01T07:30:00.000Z",
    );
    expect(
      scalars.DateTime.parseLiteral({ kind: Kind.STRING, value: "2026-05-01T09:30:00Z" }).toISOString(),
    ).toBe("2026-05-01T09:30:00.000Z");
    expect(() => scalars.DateTime.parseLiteral({ kind: Kind.INT, value: "1" })).toThrow(GraphQLError);
  });
});

describe("Date", () => {
  it.each(["2026-01-31", "2026-12-31", "2024-02-29", "2000-02-29", "2026-02-28"])("accepts %s", (value) => {
    const date = parseDate(value);
    expect(date.toISOString()).toBe(`${value}T00:00:00.000Z`);
  });

  it.each([
    ["February 30", "2026-02-30"],
    ["February 29 of a common year", "2026-02-29"],
    ["February 29 of 1900 (not a leap year)", "1900-02-29"],
    ["April 31", "2026-04-31"],
    ["month 13", "2026-13-01"],
    ["month 00", "2026-00-10"],
    ["day 00", "2026-01-00"],
    ["day/month/year", "31/12/2026"],
    ["single-digit month", "2026-1-05"],
    ["with a time", "2026-05-01T00:00:00Z"],
    ["empty", ""],
    ["a number", 20260501],
    ["null", null],
  ])("rejects %s", (_label, value) => {
    expect(() => parseDate(value)).toThrow(GraphQLError);
  });

  it("serializes a Date to YYYY-MM-DD", () => {
    expect(scalars.Date.serialize(new Date("2026-03-04T00:00:00Z"))).toBe("2026-03-04");
    expect(() => scalars.Date.parseLiteral({ kind: Kind.STRING, value: "2026-02-30" })).toThrow(GraphQLError);
  });
});

describe("Money", () => {
  it.each([
    [0, "0"],
    [100, "100"],
    [1200.5, "1200.5"],
    [10.25, "10.25"],
    [0.01, "0.01"],
    [0.1, "0.1"],
  ])("parses %s as the decimal string %s", (value, text) => {
    expect(parseMoney(value)).toBe(text);
  });

  it.each([
    ["three decimals", 10.123],
    ["a tiny fraction", 0.001],
    ["a string", "100"],
    ["a decimal string", "10.50"],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["exponent notation", 1e21],
    ["null", null],
    ["a boolean", true],
    ["a negative amount", -5],
    ["a negative fraction", -12.34],
  ])("rejects %s", (_label, value) => {
    expect(() => parseMoney(value)).toThrow(GraphQLError);
  });

  it("parses numeric literals but not string literals, and serializes as a number", () => {
    expect(scalars.Money.parseLiteral({ kind: Kind.FLOAT, value: "19.99" })).toBe("19.99");
    expect(scalars.Money.parseLiteral({ kind: Kind.INT, value: "3" })).toBe("3");
    expect(() => scalars.Money.parseLiteral({ kind: Kind.INT, value: "-3" })).toThrow(GraphQLError);
    expect(() => scalars.Money.parseLiteral({ kind: Kind.STRING, value: "19.99" })).toThrow(GraphQLError);
    expect(scalars.Money.serialize("1200.50")).toBe(1200.5);
  });
});

describe("Quantity", () => {
  it.each([
    [0, "0"],
    [2, "2"],
    [1.5, "1.5"],
    [0.125, "0.125"],
  ])("parses %s as %s", (value, text) => {
    expect(parseQuantity(value)).toBe(text);
  });

  it.each([
    ["negative", -1],
    ["four decimals", 1.0001],
    ["a string", "2"],
    ["NaN", Number.NaN],
  ])("rejects %s", (_label, value) => {
    expect(() => parseQuantity(value)).toThrow(GraphQLError);
  });
});

describe("Percent", () => {
  it.each([
    [0, "0"],
    [7.5, "7.5"],
    [100, "100"],
    [12.125, "12.125"],
  ])("parses %s as %s", (value, text) => {
    expect(parsePercent(value)).toBe(text);
  });

  it.each([
    ["over 100", 100.5],
    ["negative", -1],
    ["four decimals", 7.1234],
    ["a string", "7.5"],
  ])("rejects %s", (_label, value) => {
    expect(() => parsePercent(value)).toThrow(GraphQLError);
  });
});
