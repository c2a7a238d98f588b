import { ApiError, validationFailed } from "./errors.ts";
import { maxTextLength, textProblem } from "./limits.ts";

/** RFC 6838 names: `type/subtype`, then `; name=value` parameters (values may be quoted). */
const TOKEN = "[A-Za-z0-9!#$&^_.+-]{1,127}";
const MIME = new RegExp(`^(${TOKEN})/(${TOKEN})((?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\x00-\\x1f\\x7f]*"))*)\\s*$`);
/** The API's bound for a `content_type` (schema/lib/limits.ts). */
const MIME_LENGTH = maxTextLength("Mutation.uploadFile", "content_type");

/** The MIME type as stored: type and subtype in lower case, parameters as sent; null when it is not one. */
export function normalMimeType(text: string): string | null {
  const match = text.length <= MIME_LENGTH ? MIME.exec(text.trim()) : null;
  if (!match) return null;
  return `${match[1]!.toLowerCase()}/${match[2]!.toLowerCase()}${match[3]!.replace(/\s*;\s*/g, "; ")}`;
}

export function mimeType(param: string, text: string): string {
  const normal = normalMimeType(text);
  if (normal === null) {
    throw validationFailed(param, `${param} must be a MIME type such as application/pdf or text/plain; charset=utf-8 (at most ${MIME_LENGTH} characters).`);
  }
  return normal;
}

/** A file name as stored: trimmed, not empty, no path separators. */
export function fileName(param: string, text: string): string {
  const name = text.trim();
  const problem = textProblem(name, maxTextLength("Mutation.uploadFile", "file_name"));
  if (problem) throw validationFailed(param, `${param} ${problem}.`);
  if (name === "") throw validationFailed(param, `${param} cannot be empty.`);
  if (/[/\\]/.test(name)) throw validationFailed(param, `${param} is a name, not a path: it cannot contain / or \\.`);
  return name;
}

/** Standard base64 with padding and nothing else (no line breaks, no URL alphabet, no stray bits). */
export function strictBase64(param: string, text: string): Buffer {
  // Node's decoder skips what it does not know; only canonical, padded, standard base64 encodes back
  // to the same text ("QR==" has stray bits, "-_8=" the URL alphabet, "aGVs bG8=" a space).
  const bytes = Buffer.from(text, "base64");
  if (bytes.toString("base64") !== text) {
    throw validationFailed(param, `${param} must be standard base64 (A–Z, a–z, 0–9, + and /, padded with =), without spaces or line breaks.`);
  }
  return bytes;
}

/** Where a new object's bytes go: made from ids, never from anything a caller sent. */
export const storeKey = (workspaceId: string, objectId: string) => `${workspaceId}/${objectId}`.toLowerCase();

/** "1 GB", "250 MB", "512 bytes": decimal units, as the plans are sold. */
export function bytesLabel(bytes: number): string {
  const units: [number, string][] = [
    [1e12, "TB"],
    [1e9, "GB"],
    [1e6, "MB"],
    [1e3, "kB"],
  ];
  for (const [size, unit] of units) {
    if (bytes >= size) return `${Number((bytes / size).toFixed(2))} ${unit}`;
  }
  return `${bytes} bytes`;
}

export const quotaExceeded = (left: number, quota: number) =>
  new ApiError(
    403,
    "permission_error",
    "storage_quota_exceeded",
    `The upload would take the workspace past its storage quota of ${bytesLabel(quota)} (${Math.max(left, 0)} bytes left): ` +
      "delete objects or upgrade the plan.",
  );
