/** Formatting shared by the screens: dates in the user's locale, bytes in SI units (1 GB = 10^9 bytes, as the plans). */

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

export function formatNumber(value: number): string {
  return number.format(value);
}

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
