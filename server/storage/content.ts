/** HTTP details of serving stored bytes: ranges, validators and a safe Content-Disposition. */

export interface SatisfiableRange {
  start: number;
  end: number;
}

/**
 * One `bytes=` range of RFC 9110 §14.1.2, resolved against `size`. Null means "serve the whole
 * object" (no Range, a malformed one, or several ranges, which a server may ignore);
 * "unsatisfiable" means 416.
 */
export function parseRange(header: string | null, size: number): SatisfiableRange | "unsatisfiable" | null {
  if (header === null) return null;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match || (match[1] === "" && match[2] === "")) return null;
  const [first, last] = [match[1]!, match[2]!];
  if (first === "") {
    // A suffix: the last N bytes.
    const length = Number(last);
    if (!Number.isSafeInteger(length) || length === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(size - length, 0), end: size - 1 };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Number(last);
  if (!Number.isSafeInteger(start)) return "unsatisfiable";
  if (last !== "" && (!Number.isSafeInteger(end) || end < start)) return null; // invalid: ignored
  if (start >= size) return "unsatisfiable";
  return { start, end: Math.min(end, size - 1) };
}

/** `If-None-Match`: a list of entity tags, compared weakly (RFC 9110 §13.1.2), or `*`. */
export function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header.trim() === "*") return true;
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  return header.split(",").some((tag) => opaque(tag) === opaque(etag));
}

/** `If-Range` with an entity tag: the range applies only to the same bytes (strong comparison). */
export function rangeStillValid(header: string | null, etag: string, lastModified: Date): boolean {
  if (header === null) return true;
  const value = header.trim();
  if (value.startsWith('"')) return value === etag;
  const date = Date.parse(value);
  return !Number.isNaN(date) && Math.floor(lastModified.getTime() / 1000) <= Math.floor(date / 1000);
}

/** RFC 6266: an ASCII fallback in `filename`, the exact name in `filename*`. */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const exact = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}
