import type {
  LogKeysQuery,
  RequestLogFieldsFragment,
  RequestLogStatsQuery,
} from "../../generated/graphql.ts";
import { formatNumber } from "../../ui/format.ts";

// The Logs screen's shared types and formats.

export type Log = RequestLogFieldsFragment;
export type Stats = RequestLogStatsQuery["requestLogStats"];
export type KeyInfo = LogKeysQuery["apiKeys"]["data"][number];

/** The list's filters, as the URL query holds them. */
export interface Filters {
  key: string;
  /** `succeeded` (a status below 400), `failed` (400 or more), or "" for both. */
  outcome: string;
  status: string;
  route: string;
  /** ISO 8601 (UTC) in the URL; shown in the user's time zone. */
  from: string;
  to: string;
}

/** A request's time in a table row, in the detail view, and a day on a chart's axis (UTC, as the stats count days). */
export const timeShort = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});
export const timeLong = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
export const dayLabel = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  timeZone: "UTC",
});

/** A duration in milliseconds ("—" when unknown), and a count with its noun. */
export const formatMs = (ms: number | null | undefined) => (ms == null ? "—" : `${formatNumber(ms)} ms`);
export const plural = (n: number, one: string, many = `${one}s`) =>
  `${formatNumber(n)} ${n === 1 ? one : many}`;

/** `key_01J…WXYZ`: enough to tell keys apart in a table cell. */
export const shortId = (id: string) => (id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id);

/** An HTTP status as a tag, coloured by its class. */
export function StatusTag({ status }: { status: number }) {
  const tone = status >= 500 ? "tag-bad" : status >= 400 ? "tag-warn" : status < 300 ? "tag-ok" : "";
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{status}</span>;
}
