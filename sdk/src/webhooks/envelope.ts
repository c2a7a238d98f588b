/** The parts of a delivery besides its signatures: the signed timestamps and the event envelope. */

import { WebhookVerificationError } from "./errors.js";

/**
 * A signed timestamp header as Unix seconds; anything else is an `invalid_header` error.
 *
 * @example
 * ```ts
 * parseTimestamp("1700000000", "Kontor-Timestamp"); // 1700000000
 * parseTimestamp("yesterday", "Kontor-Timestamp"); // throws invalid_header
 * ```
 */
export function parseTimestamp(value: string, header: string): number {
  if (!/^\d{1,12}$/.test(value.trim())) {
    throw new WebhookVerificationError(
      "invalid_header",
      `${header} must be Unix seconds; got ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return Number(value.trim());
}

/**
 * Refuses a timestamp further than `toleranceSeconds` from `nowMs`, either way (a replay, or a clock far off).
 *
 * @example
 * ```ts
 * checkTimestamp(1700000000, "webhook-timestamp", 300, Date.now()); // throws timestamp_too_old today
 * ```
 */
export function checkTimestamp(timestamp: number, header: string, toleranceSeconds: number, nowMs: number) {
  const now = nowMs / 1000;
  if (now - timestamp > toleranceSeconds) {
    throw new WebhookVerificationError(
      "timestamp_too_old",
      `${header} is ${Math.round(now - timestamp)} s old, more than the tolerance of ${toleranceSeconds} s: refused as a possible replay (check the receiver's clock if every delivery fails so).`,
    );
  }
  if (timestamp - now > toleranceSeconds) {
    throw new WebhookVerificationError(
      "timestamp_in_future",
      `${header} is ${Math.round(timestamp - now)} s in the future, more than the tolerance of ${toleranceSeconds} s (check the receiver's clock).`,
    );
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The verified body as an event envelope (`object: "event"`, `id`, `type`, `data.object`, …); anything else is `invalid_payload`.
 *
 * @example
 * ```ts
 * const event = parseEnvelope(new TextEncoder().encode(rawBody)); // { id, object: "event", type, data, … }
 * ```
 */
export function parseEnvelope(bytes: Uint8Array): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new WebhookVerificationError("invalid_payload", "The body is not UTF-8 JSON.");
  }
  const problem = (what: string) =>
    new WebhookVerificationError("invalid_payload", `The body is not a Kontor event: ${what}.`);
  if (!isObject(parsed)) throw problem("not a JSON object");
  if (parsed.object !== "event") throw problem('"object" is not "event"');
  for (const field of ["id", "type", "created_at", "workspace_id"] as const) {
    if (typeof parsed[field] !== "string" || parsed[field] === "")
      throw problem(`"${field}" is missing or not a string`);
  }
  if (!isObject(parsed.data) || !isObject(parsed.data.object))
    throw problem('"data.object" is missing or not an object');
  const resource = parsed.data.object;
  if (typeof resource.object !== "string" || typeof resource.id !== "string")
    throw problem('"data.object" has no "object" and "id"');
  if (parsed.thin !== undefined && (parsed.thin !== true || typeof parsed.event_url !== "string"))
    throw problem('"thin" comes with "event_url"');
  return parsed;
}
