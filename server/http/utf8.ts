import { ApiError, validationFailed } from "../../schema/lib/errors.ts";

/**
 * Kontor reads text as UTF-8 only, and only as it was sent. This is the one decoder of request text
 * (server/http/request-body.ts runs every buffered body and query string through it, for REST,
 * GraphQL, the agent endpoints and the dashboard's account API alike): it refuses what is not UTF-8
 * — bytes no UTF-8 has (`FF`, `FE`), overlong forms (`C0 AF`), encoded surrogates (`ED A0 80`),
 * truncated sequences (`F0 9F 98`) — where a lenient decoder puts U+FFFD in their place, and the
 * text stored would differ from the text sent.
 */
const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** `bytes` as text, or null when they are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | null {
  try {
    return UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** The WHATWG labels of UTF-8 a client may declare (`charset=UTF-8` in any letter case). */
const UTF8_LABELS = new Set([
  "utf-8",
  "utf8",
  "unicode-1-1-utf-8",
  "unicode11utf8",
  "unicode20utf8",
  "x-unicode20utf8",
]);

/** The `charset` parameter of a Content-Type, unquoted and in lower case; null without one. */
export function declaredCharset(contentType: string | null): string | null {
  const match = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? "");
  return match ? (match[1] ?? match[2] ?? "").trim().toLowerCase() : null;
}

const notUtf8 = () =>
  new ApiError(
    400,
    "invalid_request_error",
    "invalid_json",
    "The request body is not valid UTF-8 (a byte no UTF-8 text has, an overlong or surrogate encoding, or a truncated character): " +
      "Kontor reads bodies as UTF-8 only, and refuses malformed text rather than store it altered.",
  );

const otherCharset = (charset: string) =>
  new ApiError(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    `The body is declared as charset=${JSON.stringify(charset.slice(0, 40))}: Kontor reads request bodies as UTF-8 only. ` +
      "Send UTF-8, with charset=utf-8 or no charset.",
  );

/**
 * The media types a surface of Kontor reads as text: JSON (`application/json`, `…+json`), forms,
 * JWTs (`application/jwt`, `…+jwt`: security event tokens). A body of another type is never decoded:
 * each surface refuses it for its type (415), which stays the answer for bytes of any kind.
 */
function isReadAsText(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return (
    type === "application/json" ||
    type.endsWith("+json") ||
    type === "application/x-www-form-urlencoded" ||
    type === "application/jwt" ||
    type.endsWith("+jwt")
  );
}

/**
 * Why a buffered body cannot be read as the text that was sent: a declared charset other than UTF-8
 * (415 `unsupported_media_type`), or bytes that are not UTF-8 (400 `invalid_json`). Null when it
 * reads as sent, when it is empty, or when its type is none Kontor reads as text.
 */
export function bodyTextProblem(contentType: string | null, bytes: Uint8Array): ApiError | null {
  if (bytes.byteLength === 0 || !isReadAsText(contentType)) return null;
  const charset = declaredCharset(contentType);
  if (charset !== null && !UTF8_LABELS.has(charset)) return otherCharset(charset);
  return decodeUtf8(bytes) === null ? notUtf8() : null;
}

/** A form field or query parameter whose percent-decoded bytes are not UTF-8; `param` is its name as sent. */
export class MalformedFormError extends Error {
  constructor(readonly param: string) {
    super(`${param} is not valid UTF-8 once percent-decoded: Kontor reads text as UTF-8 only.`);
  }
}

const isHex = (byte: number | undefined) =>
  byte !== undefined &&
  ((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66));

/** `+` as a space and `%XX` as a byte, as URLSearchParams decodes (a `%` without two hex digits stays); null when the bytes are not UTF-8. */
function formComponent(text: string): string | null {
  const spaced = text.replaceAll("+", " ");
  if (!spaced.includes("%")) return spaced;
  const bytes = Buffer.from(spaced, "utf8");
  const out = new Uint8Array(bytes.length);
  let length = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 0x25 && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
      out[length++] = parseInt(String.fromCharCode(bytes[i + 1]!, bytes[i + 2]!), 16);
      i += 2;
    } else out[length++] = bytes[i]!;
  }
  return decodeUtf8(out.subarray(0, length));
}

/**
 * The `name=value` pairs of form-encoded text (an `application/x-www-form-urlencoded` body, a query
 * string without its `?`), split and decoded as URLSearchParams does, but strictly: a pair whose
 * percent-escapes are not UTF-8 throws MalformedFormError instead of turning into U+FFFD.
 */
export function formEntries(text: string): [string, string][] {
  const entries: [string, string][] = [];
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const rawName = at === -1 ? pair : pair.slice(0, at);
    const name = formComponent(rawName);
    const value = formComponent(at === -1 ? "" : pair.slice(at + 1));
    if (name === null || value === null) throw new MalformedFormError((name ?? rawName).slice(0, 100));
    entries.push([name, value]);
  }
  return entries;
}

/** Why a query string (`url.search`) cannot be read as sent: 400 `validation_failed` naming the parameter; null when it can. */
export function queryStringProblem(search: string): ApiError | null {
  if (!search.includes("%")) return null;
  try {
    formEntries(search.replace(/^\?/, ""));
    return null;
  } catch (error) {
    if (!(error instanceof MalformedFormError)) throw error;
    return validationFailed(error.param, error.message);
  }
}
