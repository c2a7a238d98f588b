import type { Prisma } from "../generated/prisma/client.ts";
import { ApiError, validationFailed } from "./errors.ts";
import { maxTextLength, textProblem } from "./limits.ts";

/** RFC 6838 names: `type/subtype`, then `; name=value` parameters (values may be quoted). */
const TOKEN = "[A-Za-z0-9!#$&^_.+-]{1,127}";
const MIME = new RegExp(
  `^(${TOKEN})/(${TOKEN})((?:\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\x00-\\x1f\\x7f]*"))*)\\s*$`,
);
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
    throw validationFailed(
      param,
      `${param} must be a MIME type such as application/pdf or text/plain; charset=utf-8 (at most ${MIME_LENGTH} characters).`,
    );
  }
  return normal;
}

/** A file name as stored: trimmed, not empty, no path separators. */
export function fileName(param: string, text: string): string {
  const name = text.trim();
  const problem = textProblem(name, maxTextLength("Mutation.uploadFile", "file_name"));
  if (problem) throw validationFailed(param, `${param} ${problem}.`);
  if (name === "") throw validationFailed(param, `${param} cannot be empty.`);
  if (/[/\\]/.test(name))
    throw validationFailed(param, `${param} is a name, not a path: it cannot contain / or \\.`);
  return name;
}

/** Standard base64 with padding and nothing else (no line breaks, no URL alphabet, no stray bits). */
export function strictBase64(param: string, text: string): Buffer {
  // Node's decoder skips what it does not know; only canonical, padded, standard base64 encodes back
  // to the same text ("QR==" has stray bits, "-_8=" the URL alphabet, "aGVs bG8=" a space).
  const bytes = Buffer.from(text, "base64");
  if (bytes.toString("base64") !== text) {
    throw validationFailed(
      param,
      `${param} must be standard base64 (A–Z, a–z, 0–9, + and /, padded with =), without spaces or line breaks.`,
    );
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

/** `why` replaces the count of bytes left, when that is not the reason (docs/api/storage.md: older uploads go first). */
export const quotaExceeded = (left: number, quota: number, why?: string) =>
  new ApiError(
    403,
    "permission_error",
    "storage_quota_exceeded",
    `The upload would take the workspace past its storage quota of ${bytesLabel(quota)} (${why ?? `${Math.max(left, 0)} bytes left`}): ` +
      "delete objects or upgrade the plan.",
  );

/**
 * One upload under way (docs/api/storage.md): it holds one of the workspace's upload slots and a
 * reservation of bytes against the quota, grown as its bytes arrive, so uploads running together
 * never pass the quota. `end()` gives both back, whatever happened; it is safe to call twice.
 */
export interface UploadTicket {
  /** The id of the object the upload makes, also its reservation's id. */
  readonly id: string;
  /** Where its bytes go (storeKey). */
  readonly key: string;
  readonly quotaBytes: number;
  /** What the quota left for it when it began: it can never write more. */
  readonly maxBytes: number;
  /** Aborted (with its 403) when an older upload of the workspace needs the room it holds. */
  readonly signal: AbortSignal;
  /** Reserves so that `total` bytes are covered before they are written; else 403 storage_quota_exceeded. */
  cover(total: number): Promise<void>;
  /**
   * In the transaction that records the object: its reservation becomes `size` used bytes. False
   * (nothing changed) when the quota cannot take them, which happens only if the reservation was lost.
   */
  settle(tx: Prisma.TransactionClient, size: number): Promise<boolean>;
  /** Releases what is still reserved and the upload slot. */
  end(): Promise<void>;
}

/** Every upload slot of the workspace is taken (docs/api/limits.md). */
export const uploadsBusy = (limit: number) =>
  new ApiError(
    429,
    "rate_limit_error",
    "concurrency_limit_exceeded",
    `The workspace's plan runs ${limit} uploads at once and they are all under way; retry when one ends.`,
    { headers: { "Retry-After": "1" } },
  );
