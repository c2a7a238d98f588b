import { bodyBytes, concat, encoder } from "./bytes.js";
import { isObject } from "./envelope.js";
import { checkSecret, hmacKey, standardKeyBytes, subtle } from "./secret.js";

/**
 * The headers Kontor would send with `rawBody` signed by `secret`: for tests of a receiver.
 * `timestamp` is Unix seconds (default now); `eventId` defaults to the body's `id`.
 *
 * @example
 * ```ts
 * const body = JSON.stringify({ id: "evt_test", object: "event", type: "lead.created", created_at, workspace_id, data });
 * const headers = await signWebhook(body, "whsec_…");
 * await fetch("http://localhost:3000/hooks", { method: "POST", headers, body }); // a signed test delivery
 * ```
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
    new Uint8Array(
      await subtle().sign("HMAC", await hmacKey(keyBytes, "sign"), concat(encoder.encode(prefix), body)),
    );
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
