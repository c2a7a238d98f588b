/**
 * Money as the API gives it (a JSON number with at most 2 decimals, exact on the server), shown
 * and added up without floating point: an amount is read as the decimal it was written as and
 * counted in integer cents (BigInt, so no sum can lose a cent). The one module every screen
 * formats, adds and types in money with; `Money` (ui/Money.tsx) is its table cell.
 */

const formats = new Map<string, Intl.NumberFormat>();

function formatter(currency: string): Intl.NumberFormat {
  let format = formats.get(currency);
  if (!format) {
    try {
      format = new Intl.NumberFormat(undefined, {
        style: "currency",
        currency,
        minimumFractionDigits: 2,
        maximumFractionDigits: 2,
      });
    } catch {
      // Not a code Intl takes (one still being typed): the amount with the code beside it.
      format = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    }
    formats.set(currency, format);
  }
  return format;
}

/**
 * The amount in integer cents, from the decimal the API wrote (String(n) is its shortest
 * round-trip form).
 *
 * @example toCents(1234.5) // 123450n
 */
export function toCents(amount: number): bigint {
  const [whole = "0", fraction = ""] = String(amount).split(".");
  return BigInt(whole) * 100n + BigInt(fraction.padEnd(2, "0").slice(0, 2));
}

/**
 * Cents as the decimal text the API writes, always with 2 decimals (what Intl formats exactly,
 * without a trip through a float).
 *
 * @example centsText(6432n) // "64.32"; centsText(5n) // "0.05"
 */
export function centsText(cents: bigint): string {
  const sign = cents < 0n ? "-" : "";
  const abs = cents < 0n ? -cents : cents;
  return `${sign}${abs / 100n}.${String(abs % 100n).padStart(2, "0")}`;
}

/**
 * The exact decimal of an amount, with 2 decimals: an API number, or a decimal text as it is
 * (a preview's `centsText`).
 *
 * @example exactAmount(0.1) // "0.10"; exactAmount("64.32") // "64.32"
 */
export function exactAmount(amount: number | string): string {
  return typeof amount === "number" ? centsText(toCents(amount)) : amount;
}

/**
 * An amount with its currency, to the cent: the API's number, or an exact decimal text (a
 * preview's `centsText`); `none` (a dash) for no amount. A currency code Intl does not take
 * shows the amount with the code after it.
 *
 * @example
 * formatMoney(1234.5, "USD") // "$1,234.50" in en-US
 * formatMoney("64.32", "EUR") // "€64.32"
 * formatMoney(null, "USD") // "—"
 * formatMoney(null, "USD", "Not estimated") // "Not estimated"
 */
export function formatMoney(
  amount: number | string | null | undefined,
  currency: string,
  none = "—",
): string {
  if (amount === null || amount === undefined) return none;
  const format = formatter(currency);
  // Intl formats a decimal string exactly (ES2023); the lib types of ES2022 know only numbers.
  const text = (format.format as unknown as (value: string) => string)(exactAmount(amount));
  return format.resolvedOptions().style === "currency" ? text : `${text} ${currency}`;
}

/**
 * Cents (a sum of `sumByCurrency`, a preview's total) with their currency.
 *
 * @example formatCents(30n, "USD") // "$0.30" in en-US
 */
export function formatCents(cents: bigint, currency: string): string {
  return formatMoney(centsText(cents), currency);
}

/**
 * The sum of the amounts per currency, in the order the currencies first appear; amounts that
 * are null are left out.
 *
 * @example sumByCurrency([{ amount: 0.1, currency: "USD" }, { amount: 0.2, currency: "USD" }]) // [{ currency: "USD", cents: 30n }]
 */
export function sumByCurrency(
  rows: ReadonlyArray<{ amount: number | null; currency: string }>,
): { currency: string; cents: bigint }[] {
  const sums = new Map<string, bigint>();
  for (const { amount, currency } of rows) {
    if (amount === null) continue;
    sums.set(currency, (sums.get(currency) ?? 0n) + toCents(amount));
  }
  return [...sums].map(([currency, cents]) => ({ currency, cents }));
}

/** The pattern of a money input: what the API's Money takes (at most 12 digits, 2 decimals). */
export const MONEY_PATTERN = "\\d{1,12}(\\.\\d{1,2})?";

/** The pattern of a currency input: an ISO 4217 code in capitals. */
export const CURRENCY_PATTERN = "[A-Z]{3}";

/**
 * What a money input holds (its `MONEY_PATTERN` has checked it), as the API's Money: the JSON
 * number the scalar reads back to the same digits; empty is null.
 *
 * @example parseMoneyInput(" 12.50 ") // 12.5; parseMoneyInput("") // null
 */
export function parseMoneyInput(text: string): number | null {
  const trimmed = text.trim();
  return trimmed === "" ? null : Number(trimmed);
}

/**
 * An amount from the API as a money input's text, with 2 decimals; "" for none.
 *
 * @example moneyInputText(12.5) // "12.50"; moneyInputText(null) // ""
 */
export function moneyInputText(amount: number | null | undefined): string {
  return amount === null || amount === undefined ? "" : exactAmount(amount);
}
