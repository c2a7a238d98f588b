/**
 * Formatting shared by the screens: times and the API's calendar dates in the user's locale,
 * date-time inputs, numbers and quantities, bytes in SI units (1 GB = 10^9 bytes, as the plans).
 * Money is ui/money.ts.
 */

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });
const number = new Intl.NumberFormat();

export function formatDateTime(iso: string | null | undefined, never = "Never"): string {
  if (!iso) return never;
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateOnly.format(date);
}

const day = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

/**
 * A calendar date of the API (`Date`, YYYY-MM-DD) as the day it names, whatever the browser's
 * time zone (read as a time, 2026-05-01 would be April 30 west of Greenwich); "—" for none.
 *
 * @example formatDay("2026-05-01") // "May 1, 2026" in en-US, in every time zone
 */
export function formatDay(date: string | null | undefined): string {
  if (!date) return "—";
  const parsed = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(parsed.getTime()) ? date : day.format(parsed);
}

/** The days the API's `Date` takes (years 1–9999), for a date input's min and max. */
export const FIRST_DAY = "0001-01-01";
export const LAST_DAY = "9999-12-31";

const pad = (n: number) => String(n).padStart(2, "0");

/**
 * An ISO time as a `datetime-local` input's value (the browser's time zone), to the minute; ""
 * for none.
 *
 * @example toLocalInput("2031-05-01T09:30:00Z") // "2031-05-01T11:30" in Berlin
 */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/**
 * A `datetime-local` input's value as an ISO time with its zone (what the API's DateTime takes);
 * null for none.
 *
 * @example fromLocalInput("2031-05-01T11:30") // "2031-05-01T09:30:00.000Z" in Berlin
 */
export function fromLocalInput(value: string): string | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

export function formatNumber(value: number): string {
  return number.format(value);
}

const quantity = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });

/**
 * A quantity of the API (`Quantity`, at most 3 decimals), grouped, with its unit when given.
 *
 * @example formatQuantity(12.5, "kg") // "12.5 kg"; formatQuantity(1005) // "1,005"
 */
export function formatQuantity(value: number, unit?: string): string {
  return unit ? `${quantity.format(value)} ${unit}` : quantity.format(value);
}

/** The pattern of a quantity input: what the API's `Quantity` takes (at most 11 digits, 3 decimals). */
export const QUANTITY_PATTERN = "\\d{1,11}(\\.\\d{1,3})?";

const UNITS = ["B", "kB", "MB", "GB", "TB", "PB"];

const byteDigits = (unit: number, value: number) => (unit === 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2);

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  // On the rounded value: 999.9 MB reads "1.00 GB", not "1000 MB".
  while (Number(value.toFixed(byteDigits(unit, value))) >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value.toFixed(byteDigits(unit, value))} ${UNITS[unit]}`;
}

export function formatPercent(value: number): string {
  return `${value.toLocaleString(undefined, { maximumFractionDigits: 2 })} %`;
}
