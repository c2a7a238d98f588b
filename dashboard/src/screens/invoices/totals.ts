/**
 * The invoice form's numbers. Its totals preview in integer arithmetic (BigInt): the same sums the
 * server makes with decimals (schema/lib/invoicing.ts), so the preview never differs from what the
 * API answers by a cent. Quantities are held in thousandths, prices and amounts in cents, tax rates
 * in thousandths of a percent; cents are shown with ui/money.ts (`centsText`, `Money`).
 */

/** Places of each kind of number, as the API's scalars allow them (Money 2, Quantity 3, Percent 3). */
export const PLACES = { money: 2, quantity: 3, percent: 3 } as const;

const DECIMAL = /^(\d+)(?:\.(\d*))?$/;

/**
 * A decimal typed in (`"19.99"`, `"0.005"`, `"3"`) as an integer of `places` decimal places, or
 * null when it is not a plain non-negative decimal with at most that many places.
 *
 * @example toUnits("19.99", 2) // 1999n; toUnits("1.005", 2) // null
 */
export function toUnits(text: string, places: number): bigint | null {
  const match = DECIMAL.exec(text.trim());
  if (!match) return null;
  const fraction = match[2] ?? "";
  if (fraction.length > places) return null;
  return BigInt(match[1]! + fraction.padEnd(places, "0"));
}

/** `numerator / denominator` rounded half-up (both at least 0), as the server's ROUND_HALF_UP. */
export function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  return (2n * numerator + denominator) / (2n * denominator);
}

/** A line's amount in cents: quantity × unit_price, rounded half-up to the cent. */
export function lineCents(quantityThousandths: bigint, unitPriceCents: bigint): bigint {
  return divideHalfUp(quantityThousandths * unitPriceCents, 1000n);
}

export interface PreviewTotals {
  /** Each line's amount in cents; null for a line whose quantity or price is not a valid number. */
  lines: (bigint | null)[];
  /** Null while a line or the tax rate is not a valid number. */
  subtotal: bigint | null;
  tax: bigint | null;
  total: bigint | null;
}

/**
 * The document's totals as the server computes them: each line rounded to the cent, the
 * subtotal their sum, tax = subtotal × rate / 100 rounded half-up to the cent, total = subtotal + tax.
 *
 * @example previewTotals([{ quantity: "3", unit_price: "19.99" }], "7.25").total // 6432n (64.32)
 */
export function previewTotals(
  lines: readonly { quantity: string; unit_price: string }[],
  taxRate: string,
): PreviewTotals {
  const amounts = lines.map((line) => {
    const quantity = toUnits(line.quantity, PLACES.quantity);
    const price = toUnits(line.unit_price, PLACES.money);
    return quantity === null || price === null ? null : lineCents(quantity, price);
  });
  const complete = amounts.every((amount) => amount !== null);
  const subtotal = complete ? amounts.reduce<bigint>((sum, amount) => sum + (amount ?? 0n), 0n) : null;
  // An empty rate is the API's default, 0.
  const rate = taxRate.trim() === "" ? 0n : toUnits(taxRate, PLACES.percent);
  const tax = subtotal === null || rate === null ? null : divideHalfUp(subtotal * rate, 100_000n);
  const total = subtotal === null || tax === null ? null : subtotal + tax;
  return { lines: amounts, subtotal, tax, total };
}

/** A number the API returned (Money, Quantity, Percent), as text for a form field. */
export const fieldText = (value: number): string => String(value);

/**
 * A typed decimal as the JSON number the API's scalars take. The scalar reads it back with
 * String(number), which gives the same digits for any value it accepts (at most 15 significant).
 */
export const toNumber = (text: string): number => Number(text.trim());
