import { createHmac } from "node:crypto";

export interface SignedHeaders {
  "Kontor-Event": string;
  "Kontor-Delivery": string;
  "Kontor-Timestamp": string;
  "Kontor-Signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** `sha256=<hex>` of HMAC-SHA256 over `"{timestamp}.{body}"`, keyed by the whole secret string. */
export function kontorSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** Standard Webhooks: `v1,<base64>` over `"{id}.{timestamp}.{body}"`, keyed by the bytes after `whsec_`. */
export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/** docs/api/webhooks.md: Kontor's own headers and the Standard Webhooks ones, for one attempt. */
export function signedHeaders(input: {
  secret: string;
  eventId: string;
  eventType: string;
  deliveryId: string;
  body: string;
  timestamp?: number;
}): SignedHeaders {
  const timestamp = input.timestamp ?? Math.floor(Date.now() / 1000);
  return {
    "Kontor-Event": input.eventType,
    "Kontor-Delivery": input.deliveryId,
    "Kontor-Timestamp": String(timestamp),
    "Kontor-Signature": kontorSignature(input.secret, timestamp, input.body),
    "webhook-id": input.eventId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardSignature(input.secret, input.eventId, timestamp, input.body),
  };
}
