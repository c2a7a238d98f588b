/**
 * Money as the API gives it (a JSON number with at most 2 decimals, exact on the server), shown
 * and added up without floating point: an amount is read as the decimal it was written as and
 * counted in integer cents (BigInt, so no sum can lose a cent).
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
      // A code the browser does not know: the amount with the code beside it.
      format = new Intl.NumberFormat(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 2 });
    }
    formats.set(currency, format);
  }
  return format;
}

/** The amount in integer cents, from the decimal the API wrote (String(n) is its shortest round-trip form). */
export function toCents(amount: number): bigint {
  const [whole = "0", fraction = ""] = String(amount).split(".");
  return BigInt(whole) * 100n + BigInt(fraction.padEnd(2, "0").slice(0, 2));
}

/** Cents as the decimal text "1234.50" (what Intl formats exactly, without a trip through a float). */
export function centsText(cents: bigint): string {
  const sign = cents < 0n ? "-" : "";
  const abs = cents < 0n ? -cents : cents;
  return `${sign}${abs / 100n}.${String(abs % 100n).padStart(2, "0")}`;
}

/**
 * An amount with its currency, to the cent.
 *
 * @example formatMoney(1234.5, "USD") // "$1,234.50" in en-US
 */
export function formatMoney(amount: number | null | undefined, currency: string, none = "—"): string {
  if (amount === null || amount === undefined) return none;
  return formatCents(toCents(amount), currency);
}

export function formatCents(cents: bigint, currency: string): string {
  const format = formatter(currency);
  // Intl formats a decimal string exactly (ES2023); the lib types of ES2022 know only numbers.
  const text = (format.format as unknown as (value: string) => string)(centsText(cents));
  return format.resolvedOptions().style === "currency" ? text : `${text} ${currency}`;
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

/** What a money input holds, as the API's Money (a number); empty is null. The input's pattern has checked it. */
export function parseMoneyInput(text: string): number | null {
  const trimmed = text.trim();
  return trimmed === "" ? null : Number(trimmed);
}

/** The pattern of a money input: what the API's Money takes (at most 12 digits, 2 decimals). */
export const MONEY_PATTERN = "\\d{1,12}(\\.\\d{1,2})?";
