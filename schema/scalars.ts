import { GraphQLError, Kind, type ValueNode } from "graphql";

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

export function parseDateTime(value: unknown): Date {
  const date = typeof value === "string" && ISO_DATE_TIME.test(value) ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) {
    throw new GraphQLError("must be an ISO 8601 date-time with a time zone, e.g. 2026-05-01T09:30:00Z.");
  }
  return date;
}

export function parseDate(value: unknown): Date {
  const match = typeof value === "string" ? ISO_DATE.exec(value) : null;
  const date = match ? new Date(`${value as string}T00:00:00Z`) : null;
  if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw new GraphQLError("must be a calendar date in the form YYYY-MM-DD.");
  }
  return date;
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

export const parseMoney = (value: unknown) => decimalText(value, MONEY, "a number of at least 0 with at most 2 decimal places");
export const parseQuantity = (value: unknown) => decimalText(value, QUANTITY, "a number of at least 0 with at most 3 decimal places");
export function parsePercent(value: unknown): string {
  const text = decimalText(value, PERCENT, "a percentage from 0 to 100 with at most 3 decimal places");
  if (Number(text) > 100) throw new GraphQLError("must be a percentage from 0 to 100 with at most 3 decimal places.");
  return text;
}

const readOnly = () => {
  throw new GraphQLError("JSONObject is an output type.");
};

export const scalars = {
  JSONObject: {
    description: "A JSON object, as stored (an event's resource is exactly what the API returned for it).",
    serialize: (value: unknown) => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new GraphQLError("JSONObject must be an object.");
      return value;
    },
    parseValue: readOnly,
    parseLiteral: readOnly,
  },
  DateTime: {
    description: "ISO 8601 date-time in UTC, e.g. 2026-05-01T09:30:00.000Z.",
    serialize: (value: unknown) => (value instanceof Date ? value : parseDateTime(value)).toISOString(),
    parseValue: parseDateTime,
    parseLiteral: (node: ValueNode) => parseDateTime(literal(node)),
  },
  Date: {
    description: "Calendar date, YYYY-MM-DD.",
    serialize: (value: unknown) => (value instanceof Date ? value : parseDate(value)).toISOString().slice(0, 10),
    parseValue: parseDate,
    parseLiteral: (node: ValueNode) => parseDate(literal(node)),
  },
  Money: {
    description: "An amount of money (at least 0) as a JSON number with at most 2 decimals, computed exactly.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parseMoney,
    parseLiteral: (node: ValueNode) => parseMoney(literal(node)),
  },
  Quantity: {
    description: "A quantity (at least 0) as a JSON number with at most 3 decimals.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parseQuantity,
    parseLiteral: (node: ValueNode) => parseQuantity(literal(node)),
  },
  Percent: {
    description: "A percentage from 0 to 100 as a JSON number with at most 3 decimals.",
    serialize: (value: unknown) => Number(String(value)),
    parseValue: parsePercent,
    parseLiteral: (node: ValueNode) => parsePercent(literal(node)),
  },
};
