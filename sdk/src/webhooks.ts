/**
 * Verifying Kontor's webhook deliveries (README "Webhooks").
 *
 * Self-contained: Web Crypto (`globalThis.crypto.subtle`), `TextEncoder`/`TextDecoder` and `atob`,
 * which Node 20+ and browsers provide. No Node-only import, no dependency; the only import is the
 * generated route table's types (erased at compile time), which type `data.object`.
 *
 * Every delivery carries two signatures over the raw body:
 * - `Kontor-Signature: sha256=<hex>`: HMAC-SHA256 of `"{Kontor-Timestamp}.{raw body}"`, keyed by the
 *   whole `whsec_…` secret string as UTF-8;
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`):
 *   HMAC-SHA256 of `"{webhook-id}.{webhook-timestamp}.{raw body}"`, keyed by the base64-decoded
 *   part of the secret after `whsec_`.
 */

import type { RestRoutes } from "./generated/routes.js";

// ---------------------------------------------------------------------------------------------
// The event catalog (schema/events.ts EVENT_TYPES, plus the `webhook.test` event).
// ---------------------------------------------------------------------------------------------

/** Every event type a delivery can carry: the subscribable catalog and `webhook.test`. */
export const KONTOR_EVENT_TYPES = [
  "lead.created",
  "lead.stage_changed",
  "client.created",
  "client.updated",
  "invoice.created",
  "invoice.sent",
  "invoice.voided",
  "invoice.paid",
  "quote.created",
  "quote.sent",
  "quote.accepted",
  "quote.declined",
  "payment.recorded",
  "inventory.low_stock",
  "inventory.out_of_stock",
  "task.completed",
  "file.uploaded",
  "file.deleted",
  "webhook.test",
] as const;

export type KontorEventType = (typeof KONTOR_EVENT_TYPES)[number];

/** A `/v1` route's result: the REST representation (the GraphQL type, as the route selects it). */
type Representation<R extends keyof RestRoutes> = RestRoutes[R]["result"];

/**
 * Each resource an event carries, exactly as the REST API returns it (the event is written with
 * the same selection): `data.object` of a full event.
 */
export interface KontorEventResources {
  lead: Representation<"GET /leads/{id}">;
  client: Representation<"GET /clients/{id}">;
  /** Invoices and quotes alike (`document_type`). */
  invoice: Representation<"GET /invoices/{id}">;
  /** The payment with the invoice it paid. */
  payment: Representation<"POST /invoices/{invoice_id}/payments">;
  inventory_item: Representation<"GET /inventory/items/{id}">;
  task: Representation<"GET /tasks/{id}">;
  file: Representation<"GET /objects/{id}">;
  /** The endpoint, without its secret (`webhook.test`). */
  webhook_endpoint: Representation<"GET /webhook-endpoints/{id}">;
}

export type KontorResourceKind = keyof KontorEventResources;

/** A resource of `Kind` as the REST API returns it, its `object` narrowed to the kind. */
export type KontorResource<Kind extends KontorResourceKind> = KontorEventResources[Kind] & { object: Kind };

/** The `object` kind of `data.object` for each event type (quotes are invoices with `document_type: "quote"`). */
export interface KontorEventObjectKinds extends Record<KontorEventType, KontorResourceKind> {
  "lead.created": "lead";
  "lead.stage_changed": "lead";
  "client.created": "client";
  "client.updated": "client";
  "invoice.created": "invoice";
  "invoice.sent": "invoice";
  "invoice.voided": "invoice";
  "invoice.paid": "invoice";
  "quote.created": "invoice";
  "quote.sent": "invoice";
  "quote.accepted": "invoice";
  "quote.declined": "invoice";
  "payment.recorded": "payment";
  "inventory.low_stock": "inventory_item";
  "inventory.out_of_stock": "inventory_item";
  "task.completed": "task";
  "file.uploaded": "file";
  "file.deleted": "file";
  /** The endpoint itself, without its secret. */
  "webhook.test": "webhook_endpoint";
}

interface KontorEventHead<T extends KontorEventType> {
  /** `evt_…`: the same on every attempt and replay (also sent as `webhook-id`); de-duplicate on it. */
  id: string;
  object: "event";
  type: T;
  /** ISO 8601. */
  created_at: string;
  workspace_id: string;
}

/** An event carrying the whole resource, as the API returned it when the event happened. */
export interface KontorFullEvent<T extends KontorEventType> extends KontorEventHead<T> {
  data: { object: KontorResource<KontorEventObjectKinds[T]> };
  thin?: undefined;
  event_url?: undefined;
}

/**
 * An event whose body would have exceeded 256 KiB: `data.object` holds only `object` and `id`;
 * `GET event_url` (a key with `webhooks.read`) returns the full snapshot.
 */
export interface KontorThinEvent<T extends KontorEventType> extends KontorEventHead<T> {
  data: { object: { object: KontorEventObjectKinds[T]; id: string } };
  thin: true;
  event_url: string;
}

/** The event of one type, full or thin. */
export type KontorEventOf<T extends KontorEventType> = KontorFullEvent<T> | KontorThinEvent<T>;

/** A verified delivery: a discriminated union over `type` (and `thin`). */
export type KontorEvent = { [T in KontorEventType]: KontorEventOf<T> }[KontorEventType];

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

export type WebhookVerificationErrorReason =
  /** The secret is not a `whsec_…` string (or its base64 part does not decode). */
  | "invalid_secret"
  /** A signature header or its timestamp is missing. */
  | "missing_header"
  /** A header is malformed (a timestamp that is not Unix seconds, `Kontor-Event` not the body's type). */
  | "invalid_header"
  /** No signature matches: a wrong secret, or a body or timestamp changed on the way. */
  | "invalid_signature"
  /** Signed, but older than the tolerance: possibly a replay. */
  | "timestamp_too_old"
  /** Signed, but further in the future than the tolerance. */
  | "timestamp_in_future"
  /** Signed, but not an event envelope (or not valid UTF-8 JSON), or the body was not passed raw. */
  | "invalid_payload"
  /** Signed and well-formed, but of a type this SDK does not know (a newer server): see `payload`. */
  | "unknown_event_type";

/** Why a delivery was refused. `reason` is stable; `message` explains it to a person. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  readonly reason: WebhookVerificationErrorReason;
  /** Only for `unknown_event_type`: the verified body, parsed. */
  readonly payload?: Record<string, unknown>;

  constructor(reason: WebhookVerificationErrorReason, message: string, payload?: Record<string, unknown>) {
    super(message);
    this.reason = reason;
    if (payload !== undefined) this.payload = payload;
  }
}

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

/** `Headers` (fetch, Request.headers) or a plain object such as Node's `req.headers`; names are case-insensitive. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyWebhookOptions {
  /** How far (seconds) a delivery's timestamp may be from now, either way. Default 300. */
  toleranceSeconds?: number;
  /** The current time in milliseconds since the epoch, like `Date.now` (the default). */
  now?: () => number;
}

export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = "whsec_";
/** More `webhook-signature` entries than this are not looked at (a delivery carries one). */
const MAX_STANDARD_SIGNATURES = 16;

const encoder = new TextEncoder();

function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const wanted = name.toLowerCase();
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === wanted) {
        value = record[key];
        break;
      }
    }
  }
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.join(", ");
  return value;
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function bodyBytes(rawBody: unknown): Uint8Array {
  if (typeof rawBody === "string") return encoder.encode(rawBody);
  if (rawBody instanceof Uint8Array) return rawBody;
  if (rawBody instanceof ArrayBuffer) return new Uint8Array(rawBody);
  throw new WebhookVerificationError(
    "invalid_payload",
    "Pass the raw request body (a string or a Uint8Array/Buffer, exactly as received), not parsed JSON: the signatures cover the bytes as sent.",
  );
}

function decodeBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  const normalized = text.trim().replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(normalized)) return undefined;
  try {
    const binary = atob(normalized);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  } catch {
    return undefined;
  }
}

function decodeHex(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return undefined;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

function subtle(): SubtleCrypto {
  const crypto = (globalThis as { crypto?: Crypto }).crypto;
  if (!crypto?.subtle) throw new Error("Web Crypto (globalThis.crypto.subtle) is not available: use Node 20+ or a browser in a secure context.");
  return crypto.subtle;
}

function hmacKey(key: Uint8Array<ArrayBuffer>, usage: "sign" | "verify"): Promise<CryptoKey> {
  return subtle().importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

/** Constant-time: Web Crypto compares the MAC itself. */
function hmacMatches(key: CryptoKey, signature: Uint8Array<ArrayBuffer>, data: Uint8Array<ArrayBuffer>): Promise<boolean> {
  return subtle().verify("HMAC", key, signature, data);
}

function checkSecret(secret: unknown): string {
  if (typeof secret !== "string" || !secret.startsWith(SECRET_PREFIX) || secret.length === SECRET_PREFIX.length) {
    throw new WebhookVerificationError(
      "invalid_secret",
      "The webhook secret must be the endpoint's signing secret, a string starting with \"whsec_\" (returned once when the endpoint is created or its secret rotated), not an API key or its id.",
    );
  }
  return secret;
}

/** The Standard Webhooks key: the base64 part of the secret, decoded. */
function standardKeyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const bytes = decodeBase64(secret.slice(SECRET_PREFIX.length));
  if (!bytes || bytes.length === 0) {
    throw new WebhookVerificationError("invalid_secret", "The part of the webhook secret after \"whsec_\" is not base64: copy the whole secret as Kontor returned it.");
  }
  return bytes;
}

function parseTimestamp(value: string, header: string): number {
  if (!/^\d{1,12}$/.test(value.trim())) {
    throw new WebhookVerificationError("invalid_header", `${header} must be Unix seconds; got ${JSON.stringify(value.slice(0, 40))}.`);
  }
  return Number(value.trim());
}

function checkTimestamp(timestamp: number, header: string, toleranceSeconds: number, nowMs: number) {
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

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function parseEnvelope(bytes: Uint8Array): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new WebhookVerificationError("invalid_payload", "The body is not UTF-8 JSON.");
  }
  const problem = (what: string) => new WebhookVerificationError("invalid_payload", `The body is not a Kontor event: ${what}.`);
  if (!isObject(parsed)) throw problem("not a JSON object");
  if (parsed.object !== "event") throw problem('"object" is not "event"');
  for (const field of ["id", "type", "created_at", "workspace_id"] as const) {
    if (typeof parsed[field] !== "string" || parsed[field] === "") throw problem(`"${field}" is missing or not a string`);
  }
  if (!isObject(parsed.data) || !isObject(parsed.data.object)) throw problem('"data.object" is missing or not an object');
  const resource = parsed.data.object;
  if (typeof resource.object !== "string" || typeof resource.id !== "string") throw problem('"data.object" has no "object" and "id"');
  if (parsed.thin !== undefined && (parsed.thin !== true || typeof parsed.event_url !== "string")) throw problem('"thin" comes with "event_url"');
  return parsed;
}

/**
 * Verifies a webhook delivery and returns its event.
 *
 * - `rawBody`: the request body exactly as received (before any JSON parsing).
 * - `headers`: the request's headers (`Headers`, or a plain object such as Node's `req.headers`).
 * - `secret`: the endpoint's `whsec_…` signing secret.
 *
 * `Kontor-Signature` (with `Kontor-Timestamp`) is checked when present, and the Standard Webhooks
 * signature (`webhook-id`, `webhook-timestamp`, `webhook-signature`; any of its space-separated
 * `v1,` entries) when its headers are present; at least one of the two must be there, and each
 * present must match. Signatures are compared in constant time (Web Crypto's HMAC verify). Each
 * signed timestamp must be within `toleranceSeconds` (default 300) of now, either way.
 *
 * Throws `WebhookVerificationError` (with a `reason`) when the delivery is refused.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<KontorEvent> {
  const key = checkSecret(secret);
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (typeof tolerance !== "number" || Number.isNaN(tolerance) || tolerance < 0) {
    throw new TypeError("toleranceSeconds must be a number of seconds, 0 or more.");
  }
  const body = bodyBytes(rawBody);
  if (typeof headers !== "object" || headers === null) {
    throw new WebhookVerificationError("missing_header", "Pass the request's headers (a Headers object or a plain object of them).");
  }

  const kontorSignature = headerValue(headers, "kontor-signature");
  const kontorTimestamp = headerValue(headers, "kontor-timestamp");
  const standardId = headerValue(headers, "webhook-id");
  const standardTimestamp = headerValue(headers, "webhook-timestamp");
  const standardSignature = headerValue(headers, "webhook-signature");
  const hasKontor = kontorSignature !== undefined;
  const hasStandard = standardId !== undefined || standardTimestamp !== undefined || standardSignature !== undefined;

  if (!hasKontor && !hasStandard) {
    throw new WebhookVerificationError(
      "missing_header",
      "No signature: the request carries neither Kontor-Signature nor the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).",
    );
  }
  const timestamps: [number, string][] = [];

  if (hasKontor) {
    if (kontorTimestamp === undefined) throw new WebhookVerificationError("missing_header", "Kontor-Signature came without Kontor-Timestamp.");
    const timestamp = parseTimestamp(kontorTimestamp, "Kontor-Timestamp");
    const match = /^sha256=([0-9a-fA-F]{64})$/.exec(kontorSignature.trim());
    const given = match ? decodeHex(match[1]!) : undefined;
    const signed = concat(encoder.encode(`${kontorTimestamp.trim()}.`), body);
    if (!given || !(await hmacMatches(await hmacKey(encoder.encode(key), "verify"), given, signed))) {
      throw new WebhookVerificationError("invalid_signature", "Kontor-Signature does not match the body: a wrong secret (was it rotated?), or the body was changed (pass it raw, as received).");
    }
    timestamps.push([timestamp, "Kontor-Timestamp"]);
  }

  if (hasStandard) {
    const missing = (
      [
        ["webhook-id", standardId],
        ["webhook-timestamp", standardTimestamp],
        ["webhook-signature", standardSignature],
      ] as const
    )
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    if (missing.length > 0) throw new WebhookVerificationError("missing_header", `The Standard Webhooks headers are incomplete: ${missing.join(", ")} missing.`);
    const timestamp = parseTimestamp(standardTimestamp!, "webhook-timestamp");
    const cryptoKey = await hmacKey(standardKeyBytes(key), "verify");
    const signed = concat(encoder.encode(`${standardId}.${standardTimestamp!.trim()}.`), body);
    let matched = false;
    // Space-separated; a comma may trail an entry when several headers were joined with ", ".
    const entries = standardSignature!
      .split(" ")
      .map((entry) => entry.replace(/,+$/, ""))
      .filter(Boolean)
      .slice(0, MAX_STANDARD_SIGNATURES);
    for (const entry of entries) {
      const comma = entry.indexOf(",");
      if (comma === -1 || entry.slice(0, comma) !== "v1") continue;
      const given = decodeBase64(entry.slice(comma + 1));
      if (given && given.length === 32 && (await hmacMatches(cryptoKey, given, signed))) {
        matched = true;
        break;
      }
    }
    if (!matched) {
      throw new WebhookVerificationError("invalid_signature", "No webhook-signature entry matches the body: a wrong secret (was it rotated?), or the body was changed (pass it raw, as received).");
    }
    timestamps.push([timestamp, "webhook-timestamp"]);
  }

  const now = (options.now ?? Date.now)();
  for (const [timestamp, header] of timestamps) checkTimestamp(timestamp, header, tolerance, now);

  const event = parseEnvelope(body);
  const eventHeader = headerValue(headers, "kontor-event");
  if (eventHeader !== undefined && eventHeader !== event.type) {
    throw new WebhookVerificationError("invalid_header", `Kontor-Event (${JSON.stringify(eventHeader)}) is not the body's type (${JSON.stringify(event.type)}).`);
  }
  if (!(KONTOR_EVENT_TYPES as readonly string[]).includes(event.type as string)) {
    throw new WebhookVerificationError(
      "unknown_event_type",
      `The delivery is authentic, but its type ${JSON.stringify(event.type)} is not in this SDK's catalog: upgrade @kontor/sdk (the verified body is in error.payload).`,
      event,
    );
  }
  return event as unknown as KontorEvent;
}

/**
 * The headers Kontor would send with `rawBody` signed by `secret`: for tests of a receiver.
 * `timestamp` is Unix seconds (default now); `eventId` defaults to the body's `id`.
 */
export async function signWebhook(
  rawBody: string | Uint8Array,
  secret: string,
  options: { timestamp?: number; eventId?: string; eventType?: string; deliveryId?: string } = {},
): Promise<Record<string, string>> {
  const key = checkSecret(secret);
  const body = bodyBytes(rawBody);
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  let parsed: Record<string, unknown> = {};
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(body));
    if (isObject(value)) parsed = value;
  } catch {
    // not JSON: the caller names the event
  }
  const eventId = options.eventId ?? (typeof parsed.id === "string" ? parsed.id : undefined);
  if (!eventId) throw new TypeError("signWebhook needs options.eventId when the body has no id.");
  const eventType = options.eventType ?? (typeof parsed.type === "string" ? parsed.type : undefined);

  const sign = async (keyBytes: Uint8Array<ArrayBuffer>, prefix: string) =>
    new Uint8Array(await subtle().sign("HMAC", await hmacKey(keyBytes, "sign"), concat(encoder.encode(prefix), body)));
  const kontor = await sign(encoder.encode(key), `${timestamp}.`);
  const standard = await sign(standardKeyBytes(key), `${eventId}.${timestamp}.`);
  const hex = Array.from(kontor, (byte) => byte.toString(16).padStart(2, "0")).join("");
  const base64 = btoa(String.fromCharCode(...standard));
  return {
    ...(eventType !== undefined && { "Kontor-Event": eventType }),
    ...(options.deliveryId !== undefined && { "Kontor-Delivery": options.deliveryId }),
    "Kontor-Timestamp": timestamp,
    "Kontor-Signature": `sha256=${hex}`,
    "webhook-id": eventId,
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${base64}`,
  };
}
