/** The signing secret and HMAC-SHA256 through Web Crypto (`globalThis.crypto.subtle`). */

import { decodeBase64 } from "./bytes.js";
import { WebhookVerificationError } from "./errors.js";

export const SECRET_PREFIX = "whsec_";

/**
 * Web Crypto's `SubtleCrypto`, or an error that says where it is missing (Node before 20, an insecure browser context).
 *
 * @example
 * ```ts
 * const digest = await subtle().digest("SHA-256", bytes);
 * ```
 */
export function subtle(): SubtleCrypto {
  const crypto = (globalThis as { crypto?: Crypto }).crypto;
  if (!crypto?.subtle)
    throw new Error(
      "Web Crypto (globalThis.crypto.subtle) is not available: use Node 20+ or a browser in a secure context.",
    );
  return crypto.subtle;
}

/**
 * An HMAC-SHA256 key of raw bytes, for signing or verifying only.
 *
 * @example
 * ```ts
 * const key = await hmacKey(encoder.encode(secret), "verify");
 * ```
 */
export function hmacKey(key: Uint8Array<ArrayBuffer>, usage: "sign" | "verify"): Promise<CryptoKey> {
  return subtle().importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

/**
 * Constant-time: Web Crypto compares the MAC itself.
 *
 * @example
 * ```ts
 * const ok = await hmacMatches(key, signatureBytes, signedBytes);
 * ```
 */
export function hmacMatches(
  key: CryptoKey,
  signature: Uint8Array<ArrayBuffer>,
  data: Uint8Array<ArrayBuffer>,
): Promise<boolean> {
  return subtle().verify("HMAC", key, signature, data);
}

/**
 * The secret when it is a `whsec_…` signing secret; anything else (an API key, an id) is `invalid_secret`.
 *
 * @example
 * ```ts
 * checkSecret("whsec_…"); // returned as it is
 * checkSecret("ktr_live_…"); // throws invalid_secret
 * ```
 */
export function checkSecret(secret: unknown): string {
  if (
    typeof secret !== "string" ||
    !secret.startsWith(SECRET_PREFIX) ||
    secret.length === SECRET_PREFIX.length
  ) {
    throw new WebhookVerificationError(
      "invalid_secret",
      'The webhook secret must be the endpoint\'s signing secret, a string starting with "whsec_" (returned once when the endpoint is created or its secret rotated), not an API key or its id.',
    );
  }
  return secret;
}

/**
 * The Standard Webhooks key: the base64 part of the secret, decoded.
 *
 * @example
 * ```ts
 * const key = await hmacKey(standardKeyBytes(secret), "verify"); // the Standard Webhooks key
 * ```
 */
export function standardKeyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const bytes = decodeBase64(secret.slice(SECRET_PREFIX.length));
  if (!bytes || bytes.length === 0) {
    throw new WebhookVerificationError(
      "invalid_secret",
      'The part of the webhook secret after "whsec_" is not base64: copy the whole secret as Kontor returned it.',
    );
  }
  return bytes;
}
