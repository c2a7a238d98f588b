import { bodyBytes, concat, decodeBase64, decodeHex, encoder } from "./bytes.js";
import { checkTimestamp, parseEnvelope, parseTimestamp } from "./envelope.js";
import { WebhookVerificationError } from "./errors.js";
import { KONTOR_EVENT_TYPES, type KontorEvent } from "./events.js";
import { headerValue, type WebhookHeaders } from "./headers.js";
import { checkSecret, hmacKey, hmacMatches, standardKeyBytes } from "./secret.js";

export interface VerifyWebhookOptions {
  /** How far (seconds) a delivery's timestamp may be from now, either way. Default 300. */
  toleranceSeconds?: number;
  /** The current time in milliseconds since the epoch, like `Date.now` (the default). */
  now?: () => number;
}

export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** More `webhook-signature` entries than this are not looked at (a delivery carries one). */
const MAX_STANDARD_SIGNATURES = 16;

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
 *
 * @example
 * ```ts
 * // Express, with the body kept raw: app.post("/hooks", express.raw({ type: "application/json" }), …)
 * const event = await verifyWebhook(req.body, req.headers, process.env.KONTOR_WEBHOOK_SECRET!);
 * if (event.type === "invoice.paid" && !event.thin) console.log(event.data.object.total);
 * ```
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
    throw new WebhookVerificationError(
      "missing_header",
      "Pass the request's headers (a Headers object or a plain object of them).",
    );
  }

  const kontorSignature = headerValue(headers, "kontor-signature");
  const kontorTimestamp = headerValue(headers, "kontor-timestamp");
  const standardId = headerValue(headers, "webhook-id");
  const standardTimestamp = headerValue(headers, "webhook-timestamp");
  const standardSignature = headerValue(headers, "webhook-signature");
  const hasKontor = kontorSignature !== undefined;
  const hasStandard =
    standardId !== undefined || standardTimestamp !== undefined || standardSignature !== undefined;

  if (!hasKontor && !hasStandard) {
    throw new WebhookVerificationError(
      "missing_header",
      "No signature: the request carries neither Kontor-Signature nor the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).",
    );
  }
  const timestamps: [number, string][] = [];

  if (hasKontor) {
    if (kontorTimestamp === undefined)
      throw new WebhookVerificationError("missing_header", "Kontor-Signature came without Kontor-Timestamp.");
    const timestamp = parseTimestamp(kontorTimestamp, "Kontor-Timestamp");
    const match = /^sha256=([0-9a-fA-F]{64})$/.exec(kontorSignature.trim());
    const given = match ? decodeHex(match[1]!) : undefined;
    const signed = concat(encoder.encode(`${kontorTimestamp.trim()}.`), body);
    if (!given || !(await hmacMatches(await hmacKey(encoder.encode(key), "verify"), given, signed))) {
      throw new WebhookVerificationError(
        "invalid_signature",
        "Kontor-Signature does not match the body: a wrong secret (was it rotated?), or the body was changed (pass it raw, as received).",
      );
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
    if (missing.length > 0)
      throw new WebhookVerificationError(
        "missing_header",
        `The Standard Webhooks headers are incomplete: ${missing.join(", ")} missing.`,
      );
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
      throw new WebhookVerificationError(
        "invalid_signature",
        "No webhook-signature entry matches the body: a wrong secret (was it rotated?), or the body was changed (pass it raw, as received).",
      );
    }
    timestamps.push([timestamp, "webhook-timestamp"]);
  }

  const now = (options.now ?? Date.now)();
  for (const [timestamp, header] of timestamps) checkTimestamp(timestamp, header, tolerance, now);

  const event = parseEnvelope(body);
  const eventHeader = headerValue(headers, "kontor-event");
  if (eventHeader !== undefined && eventHeader !== event.type) {
    throw new WebhookVerificationError(
      "invalid_header",
      `Kontor-Event (${JSON.stringify(eventHeader)}) is not the body's type (${JSON.stringify(event.type)}).`,
    );
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
