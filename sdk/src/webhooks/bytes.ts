/** Bytes and their text encodings, with what the platform offers (no Buffer: browsers too). */

import { WebhookVerificationError } from "./errors.js";

export const encoder = new TextEncoder();

/**
 * The parts, one after the other, in one new array.
 *
 * @example
 * ```ts
 * concat(encoder.encode("1700000000."), body); // the bytes a Kontor-Signature covers
 * ```
 */
export function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/**
 * The bytes of a raw body (a string is UTF-8); parsed JSON is refused, as the signatures cover the bytes as sent.
 *
 * @example
 * ```ts
 * bodyBytes(await request.text()); // UTF-8 bytes
 * bodyBytes(JSON.parse(raw)); // throws invalid_payload: pass the raw body
 * ```
 */
export function bodyBytes(rawBody: unknown): Uint8Array {
  if (typeof rawBody === "string") return encoder.encode(rawBody);
  if (rawBody instanceof Uint8Array) return rawBody;
  if (rawBody instanceof ArrayBuffer) return new Uint8Array(rawBody);
  throw new WebhookVerificationError(
    "invalid_payload",
    "Pass the raw request body (a string or a Uint8Array/Buffer, exactly as received), not parsed JSON: the signatures cover the bytes as sent.",
  );
}

/**
 * The bytes of standard or URL-safe base64, or undefined when the text is not base64.
 *
 * @example
 * ```ts
 * decodeBase64("aGk="); // Uint8Array [104, 105]
 * decodeBase64("not base64!"); // undefined
 * ```
 */
export function decodeBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
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

/**
 * The bytes of an even-length hex string, or undefined when it is not one.
 *
 * @example
 * ```ts
 * decodeHex("6869"); // Uint8Array [104, 105]
 * ```
 */
export function decodeHex(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return undefined;
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
