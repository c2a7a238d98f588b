import { validationFailed } from "./errors.ts";

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
const VERSION = "v1";

/** Cursors are opaque to callers: base64url of `v1:<id of the last item>`. */
export function encodeCursor(id: string): string {
  return Buffer.from(`${VERSION}:${id}`, "utf8").toString("base64url");
}

/** Crockford's base32, the alphabet of an id's 26 characters, in sort order. */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/**
 * A cursor whose page starts AT `id` (the usual one starts after it): ids are a prefix and 26
 * characters of one alphabet, so the id just after `id` in sort order is `id` with its last
 * character stepped up (carrying), and "older than that" is `id` and everything older.
 */
export function cursorFrom(id: string): string {
  const chars = [...id];
  for (let i = chars.length - 1; i >= chars.length - 26; i--) {
    const next = CROCKFORD.indexOf(chars[i]!) + 1;
    if (next < CROCKFORD.length) {
      chars[i] = CROCKFORD[next]!;
      return encodeCursor(chars.join(""));
    }
    chars[i] = CROCKFORD[0]!;
  }
  // Past the last id there is none: a ULID's first character is at most 7, so this never happens.
  return encodeCursor(id);
}

export function decodeCursor(cursor: string): string {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const [version, id, ...rest] = text.split(":");
  if (version !== VERSION || !id || rest.length > 0 || !/^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) {
    throw validationFailed(
      "cursor",
      "cursor is not a valid cursor; pass the next_cursor of a previous page.",
    );
  }
  return id;
}

export interface PageArgs {
  limit?: number | null;
  cursor?: string | null;
}

export interface Page {
  take: number;
  /** Items with an id below this one (ids sort by creation time, so this is "older than"). */
  before: string | undefined;
}

export function parsePage(args: PageArgs): Page {
  const limit = args.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw validationFailed("limit", `limit must be an integer from 1 to ${MAX_LIMIT}.`);
  }
  return { take: limit, before: args.cursor == null ? undefined : decodeCursor(args.cursor) };
}

export interface ListEnvelope<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

/** `rows` must be fetched with `take: page.take + 1`, newest first. */
export function toList<T extends { id: string }>(rows: T[], page: Page): ListEnvelope<T> {
  const has_more = rows.length > page.take;
  const data = has_more ? rows.slice(0, page.take) : rows;
  const last = data[data.length - 1];
  return { object: "list", data, has_more, next_cursor: has_more && last ? encodeCursor(last.id) : null };
}

/**
 * What a list query adds to its findMany: the cursor condition, the order and one row to spare
 * (listPage in schema/lib/list-page.ts also adds the relations its items' selection needs).
 */
export interface PageQuery {
  cursor: { id?: { lt: string } };
  orderBy: { id: "desc" };
  take: number;
}

/** `search`: a case-insensitive substring match over the given columns (none when blank). */
export function searchWhere<F extends string>(search: string | null | undefined, fields: F[]) {
  const text = search?.trim();
  if (!text) return {};
  return {
    OR: fields.map((field) => ({ [field]: { contains: text, mode: "insensitive" as const } })) as {
      [K in F]?: { contains: string; mode: "insensitive" };
    }[],
  };
}
