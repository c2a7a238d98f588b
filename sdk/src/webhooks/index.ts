/**
 * Verifying Kontor's webhook deliveries (and signing test deliveries).
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
 *
 * One concern per file: `events.ts` (the catalog and event types), `errors.ts`, `headers.ts`,
 * `bytes.ts`, `secret.ts` (the secret and HMAC), `envelope.ts` (timestamps and the event
 * envelope), `verify.ts` and `sign.ts`.
 */
export * from "./errors.js";
export * from "./events.js";
export type { WebhookHeaders } from "./headers.js";
export { signWebhook } from "./sign.js";
export { DEFAULT_WEBHOOK_TOLERANCE_SECONDS, type VerifyWebhookOptions, verifyWebhook } from "./verify.js";
