import type { RequestLogRow } from "./request-log.ts";

/** PostgreSQL's `integer`: status, latency_ms, input_tokens, output_tokens. */
const INT_MAX = 2_147_483_647;

/**
 * The most UTF-16 units kept of each text column. Bounded so that no row, even of 4-byte
 * characters, outgrows a btree entry (about 2.7 kB): `(workspace_id, route, id)` is indexed.
 */
export const TEXT_LIMITS = {
  id: 64,
  workspaceId: 64,
  credentialId: 64,
  method: 16,
  route: 256,
  errorCode: 64,
  clientIp: 64,
  userAgent: 512,
  model: 256,
  tool: 128,
} as const satisfies Partial<Record<keyof RequestLogRow, number>>;

/** NUL (PostgreSQL's text refuses it) and UTF-16 surrogates, paired or not: the slow path looks closer. */
const SUSPECT = /[\u0000\uD800-\uDFFF]/;
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Text PostgreSQL stores as it was: NUL and lone surrogates become U+FFFD, and it is cut to `max`
 * UTF-16 units, never between the halves of a pair.
 */
export function storableText(value: string, max: number): string {
  let text = SUSPECT.test(value) ? value.replace(UNSTORABLE, "\uFFFD") : value;
  if (text.length > max) {
    text = text.slice(0, max);
    if (/[\uD800-\uDBFF]$/.test(text)) text = text.slice(0, -1);
  }
  return text;
}

const optionalText = (value: string | null | undefined, max: number) =>
  typeof value === "string" ? storableText(value, max) : null;

/** A whole number within `[0, INT_MAX]`; NaN or a non-number is `fallback`, ±Infinity the nearer bound. */
function integer<F extends number | null>(value: unknown, fallback: F): number | F {
  if (typeof value !== "number" || Number.isNaN(value)) return fallback;
  return Math.min(INT_MAX, Math.max(0, Math.round(value)));
}

/** Years 1 to 9999 (what `toISOString` writes as PostgreSQL reads it); anything else, an invalid Date included, is now. */
const FIRST_MS = Date.parse("0001-01-01T00:00:00.000Z");
const LAST_MS = Date.parse("9999-12-31T23:59:59.999Z");
function storableTime(value: unknown): Date {
  if (!(value instanceof Date)) return new Date();
  const ms = value.getTime();
  return ms >= FIRST_MS && ms <= LAST_MS ? value : new Date();
}

/**
 * The row as the request_logs table takes it, whatever it was given: integers within their
 * column's range, texts without what PostgreSQL refuses and within TEXT_LIMITS, a valid time.
 * One value out of range would otherwise fail the whole batch's statement.
 */
export function storableRow(row: RequestLogRow): RequestLogRow {
  return {
    id: storableText(String(row.id), TEXT_LIMITS.id),
    workspaceId: optionalText(row.workspaceId, TEXT_LIMITS.workspaceId),
    credentialId: optionalText(row.credentialId, TEXT_LIMITS.credentialId),
    method: storableText(String(row.method), TEXT_LIMITS.method),
    route: optionalText(row.route, TEXT_LIMITS.route),
    status: integer(row.status, 0),
    latencyMs: integer(row.latencyMs, 0),
    errorCode: optionalText(row.errorCode, TEXT_LIMITS.errorCode),
    clientIp: optionalText(row.clientIp, TEXT_LIMITS.clientIp),
    userAgent: optionalText(row.userAgent, TEXT_LIMITS.userAgent),
    model: optionalText(row.model, TEXT_LIMITS.model),
    inputTokens: integer(row.inputTokens, null),
    outputTokens: integer(row.outputTokens, null),
    tool: optionalText(row.tool, TEXT_LIMITS.tool),
    createdAt: storableTime(row.createdAt),
  };
}
