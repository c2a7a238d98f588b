import { GraphQLError, Kind, type ValueNode } from "graphql";
import { MAX_YEAR, MIN_YEAR } from "./lib/limits.ts";

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MONEY = /^\d{1,12}(\.\d{1,2})?$/;
const QUANTITY = /^\d{1,11}(\.\d{1,3})?$/;
const PERCENT = /^\d{1,3}(\.\d{1,3})?$/;

function literal(node: ValueNode): unknown {
  if (node.kind === Kind.STRING) return node.value;
  if (node.kind === Kind.INT || node.kind === Kind.FLOAT) return Number(node.value);
  return undefined;
}

/** PostgreSQL has no year 0, and years past 9999 do not print as ISO 8601: both are refused, in UTC. */
function inYearRange(date: Date): Date {
  const year = date.getUTCFullYear();
  if (year < MIN_YEAR || year > MAX_YEAR)
    throw new GraphQLError(`must fall in the years ${MIN_YEAR} to ${MAX_YEAR} (UTC).`);
  return date;
}

/** Whether YYYY-MM-DD names a day that exists (JavaScript rolls 2026-02-30 over into March). */
function isCalendarDay(text: string): boolean {
  const [year, month, day] = text.split("-").map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

export function parseDateTime(value: unknown): Date {
  const valid = typeof value === "string" && ISO_DATE_TIME.test(value) && isCalendarDay(value.slice(0, 10));
  const date = valid ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) {
    throw new GraphQLError("must be an ISO 8601 date-time with a time zone, e.g. 2026-05-01T09:30:00Z.");
  }
  return inYearRange(date);
}

export function parseDate(value: unknown): Date {
  const match = typeof value === "string" ? ISO_DATE.exec(value) : null;
  const date = match ? new Date(`${value as string}T00:00:00Z`) : null;
  if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw new GraphQLError("must be a calendar date in the form YYYY-MM-DD.");
  }
  return inYearRange(date);
}

/**
 * A JSON number read as the decimal it was written as (String(n) is the shortest form that
 * round-trips, so 0.1 stays "0.1"), checked against `pattern`. From here on it is a string.
 */
function decimalText(value: unknown, pattern: RegExp, rule: string): string {
  const text = typeof value === "number" && Number.isFinite(value) ? String(value) : null;
  if (text === null || !pattern.test(text)) throw new GraphQLError(`must be ${rule}.`);
  return text;
}

export const parseMoney = (value: unknown) =>
  decimalText(value, MONEY, "a number of at least 0 with at most 2 decimal places");
export const parseQuantity = (value: unknown) =>
  decimalText(value, QUANTITY, "a number of at least 0 with at most 3 decimal places");
export function parsePercent(value: unknown): string {
  const text = decimalText(value, PERCENT, "a percentage from 0 to 100 with at most 3 decimal places");
  if (Number(text) > 100)
    throw new GraphQLError("must be a percentage from 0 to 100 with at most 3 decimal places.");
  return text;
}

const readOnly = () => {
  throw new GraphQLError("JSONObject is an output type.");
};

export const scalars = {
  ByteCount: {
    description:
      "A whole number of bytes, from 0 to 2^53 − 1 (a JSON number; GraphQL's Int stops at 2^31 − 1). Output only.",
    serialize: (value: unknown) => {
      const count = typeof value === "bigint" ? Number(value) : value;
      if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0)
        throw new GraphQLError("ByteCount must be a whole number of bytes.");
      return count;
    },
    parseValue: () => {
      throw new GraphQLError("ByteCount is an output type.");
    },
    parseLiteral: () => {
      throw new GraphQLError("ByteCount is an output type.");
    },
  },
  JSONObject: {
    description:
      "A JSON object, as stored (an event's resource is exactly what the API returned for it). Output only.",
    serialize: (value: unknown) => {
      if (typeof value !== "object" || value === null || Array.isArray(value))
        throw new GraphQLError("JSONObject must be an object.");
      return value;
    },
    parseValue: readOnly,
    parseLiteral: readOnly,
  },
  DateTime: {
    description: `ISO 8601 date-time. Returned in UTC with milliseconds, e.g. 2026-05-01T09:30:00.000Z; accepted with a time zone (Z or ±hh:mm), years ${MIN_YEAR}–${MAX_YEAR}.`,
    serialize: (value: unknown) => (value instanceof Date ? value : parseDateTime(value)).toISOString(),
    parseValue: parseDateTime,
    parseLiteral: (node: ValueNode) => parseDateTime(literal(node)),
  },
  Date: {
    description: `Calendar date, YYYY-MM-DD (an existing day: 2026-02-30 is refused), years ${MIN_YEAR}–${MAX_YEAR}.`,
    serialize: (value: unknown) =>
      (value instanceof Date ? value : parseDate(value)).toISOString().slice(0, 10),
    parseValue: parseDate,
    parseLiteral: (node: ValueNode) => parseDate(literal(node)),
  },
  Money: {
    description:
      "An amount of money as a JSON number (not a string): at least 0, at most 2 decimals and 12 integer digits; computed exactly.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parseMoney,
    parseLiteral: (node: ValueNode) => parseMoney(literal(node)),
  },
  Quantity: {
    description:
      "A quantity as a JSON number (not a string): at least 0, at most 3 decimals and 11 integer digits.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parseQuantity,
    parseLiteral: (node: ValueNode) => parseQuantity(literal(node)),
  },
  Percent: {
    description:
      "A percentage from 0 to 100 as a JSON number (not a string) with at most 3 decimals: 7.5 means 7.5 %.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parsePercent,
    parseLiteral: (node: ValueNode) => parsePercent(literal(node)),
  },
};
