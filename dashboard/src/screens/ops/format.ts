/**
 * Money, quantities and days of the inventory and projects screens, shown exactly as the API returns
 * them: a `Money` is a JSON number with at most 2 decimals (12 integer digits, so 14 significant
 * digits at most, which a double holds exactly enough to print back), shown with its currency and
 * always 2 fraction digits. Amounts typed in are checked by the same pattern as the API's scalar,
 * so none is rounded on its way.
 */

const money = new Map<string, Intl.NumberFormat | null>();

function moneyFormat(currency: string): Intl.NumberFormat | null {
  if (!money.has(currency)) {
    let format: Intl.NumberFormat | null = null;
    try {
      format = new Intl.NumberFormat(undefined, {
        style: "currency",
        currency,
        minimumFractionDigits: 2,
        maximumFractionDigits: 2,
      });
    } catch {
      // A code Intl does not know: shown as digits and code below.
    }
    money.set(currency, format);
  }
  return money.get(currency) ?? null;
}

/**
 * An amount with its currency, or "—" for none.
 *
 * @example formatMoney(1234.5, "EUR") // "€1,234.50" in en-US
 */
export function formatMoney(amount: number | null | undefined, currency: string): string {
  if (amount === null || amount === undefined) return "—";
  return moneyFormat(currency)?.format(amount) ?? `${amount.toFixed(2)} ${currency}`;
}

const quantity = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });

/** A quantity (at most 3 decimals) with its unit: "12.5 kg". */
export function formatQuantity(value: number, unit?: string): string {
  return unit ? `${quantity.format(value)} ${unit}` : quantity.format(value);
}

/** The `Money` scalar's shape, for an input's `pattern`: up to 12 digits, then up to 2 decimals. */
export const MONEY_PATTERN = String.raw`\d{1,12}(\.\d{1,2})?`;
/** The `Quantity` scalar's shape: up to 11 digits, then up to 3 decimals. */
export const QUANTITY_PATTERN = String.raw`\d{1,11}(\.\d{1,3})?`;
/** An ISO 4217 code in capitals. */
export const CURRENCY_PATTERN = "[A-Z]{3}";

/** A typed amount (already matched by its pattern) as the JSON number the API takes; "" is null. */
export function numberOrNull(text: string): number | null {
  const trimmed = text.trim();
  return trimmed === "" ? null : Number(trimmed);
}

/** An amount from the API as a money input's text: "12.50", or "" for none. */
export function moneyText(amount: number | null | undefined): string {
  return amount === null || amount === undefined ? "" : amount.toFixed(2);
}

const day = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

/**
 * A calendar date of the API (`Date`, YYYY-MM-DD) as the day it names, whatever the browser's
 * time zone (read as a time, 2026-05-01 would be April 30 west of Greenwich); "—" for none.
 */
export function formatDay(date: string | null | undefined): string {
  if (!date) return "—";
  const parsed = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(parsed.getTime()) ? date : day.format(parsed);
}

/** The days the API's `Date` takes (years 1–9999), for a date input's min and max. */
export const FIRST_DAY = "0001-01-01";
export const LAST_DAY = "9999-12-31";
