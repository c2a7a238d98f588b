import { exactAmount, formatMoney } from "./money.ts";
import "./money.css";

/**
 * An amount as a cell of a table or a fact: formatted with its currency on one line, in digits of
 * one width, with its exact decimal in `data-amount` (what tests compare with the API's); a dash
 * for no amount.
 *
 * @example <Money amount={invoice.total} currency={invoice.currency} />
 * @example <Money amount={centsText(preview.total)} currency="EUR" />
 */
export function Money({
  amount,
  currency,
}: {
  amount: number | string | null | undefined;
  currency: string;
}) {
  return (
    <span
      className="money"
      data-amount={amount === null || amount === undefined ? undefined : exactAmount(amount)}
    >
      {formatMoney(amount, currency)}
    </span>
  );
}
