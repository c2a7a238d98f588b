import { type InputHTMLAttributes, useEffect, useId, useRef } from "react";
import { maxListItems, maxTextLength } from "../../../../schema/lib/limits.ts";
import { Button } from "../../ui/Button.tsx";
import { fieldError } from "../../ui/ErrorBanner.tsx";
import { Money } from "../../ui/Money.tsx";
import { centsText } from "../../ui/money.ts";

/** A line as typed: the numbers are the text of their fields, read exactly by totals.ts. */
export interface LineDraft {
  /** React's key: stays with the line when one above it is removed. */
  key: number;
  description: string;
  quantity: string;
  unit_price: string;
}

const MAX_LINES = maxListItems("Mutation.createInvoice", "items");

let nextKey = 0;
export const newLine = (line: Partial<Omit<LineDraft, "key">> = {}): LineDraft => ({
  key: ++nextKey,
  description: "",
  quantity: "1",
  unit_price: "",
  ...line,
});

/** The params of a line's fields, as the API names them in an error. */
export const lineParams = (index: number) =>
  (["description", "quantity", "unit_price"] as const).map((name) => `items[${index}].${name}`);

function LineField({
  label,
  line,
  error,
  ...input
}: {
  label: string;
  line: number;
  error: string | undefined;
} & InputHTMLAttributes<HTMLInputElement>) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id} className="invoices-line-label">
        {label}
        <span className="visually-hidden"> of line {line}</span>
      </label>
      <input
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        {...input}
      />
      {error && (
        <p className="field-error" id={`${id}-error`} role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

/**
 * The lines of a document: description, quantity and unit price, each line's amount as the server
 * will compute it, and buttons to add and remove lines. A line added takes the focus.
 */
export function LineItems({
  lines,
  amounts,
  currency,
  error,
  onChange,
}: {
  lines: LineDraft[];
  amounts: (bigint | null)[];
  currency: string;
  error: unknown;
  onChange(lines: LineDraft[]): void;
}) {
  const focusKey = useRef<number | null>(null);
  const list = useRef<HTMLDivElement>(null);
  const headerId = useId();
  useEffect(() => {
    if (focusKey.current === null) return;
    list.current?.querySelector<HTMLInputElement>(`[data-line="${focusKey.current}"] input`)?.focus();
    focusKey.current = null;
  });

  const update = (key: number, change: Partial<LineDraft>) =>
    onChange(lines.map((line) => (line.key === key ? { ...line, ...change } : line)));
  const add = () => {
    const line = newLine();
    focusKey.current = line.key;
    onChange([...lines, line]);
  };
  const remove = (index: number) => {
    const next = lines.filter((_, i) => i !== index);
    // The focus goes to the line that took its place, or to the one before it.
    focusKey.current = (next[index] ?? next[index - 1])?.key ?? null;
    onChange(next);
  };

  return (
    <fieldset className="field invoices-lines" aria-describedby={headerId}>
      <legend>Line items</legend>
      <p className="field-hint" id={headerId}>
        Quantities take up to 3 decimals, prices 2; each line's amount is rounded half-up to the cent.
      </p>
      <div className="invoices-line invoices-line-head" aria-hidden="true">
        <span>Description</span>
        <span>Quantity</span>
        <span>Unit price</span>
        <span>Amount</span>
        <span />
      </div>
      <div className="stack" ref={list}>
        {lines.map((line, index) => {
          const number = index + 1;
          const [description, quantity, unitPrice] = lineParams(index).map((param) =>
            fieldError(error, param),
          ) as [string | undefined, string | undefined, string | undefined];
          const amount = amounts[index];
          return (
            // biome-ignore lint/a11y/useSemanticElements: a line is a group of fields inside the items' fieldset; nested fieldsets would repeat the legends.
            <div
              key={line.key}
              className="invoices-line"
              role="group"
              aria-label={`Line ${number}`}
              data-line={line.key}
            >
              <span className="invoices-line-number" aria-hidden="true">
                Line {number}
              </span>
              <LineField
                label="Description"
                line={number}
                required
                maxLength={maxTextLength("InvoiceItemInput", "description")}
                value={line.description}
                error={description}
                onChange={(event) => update(line.key, { description: event.target.value })}
              />
              <LineField
                label="Quantity"
                line={number}
                type="number"
                inputMode="decimal"
                min="0"
                step="0.001"
                required
                value={line.quantity}
                error={quantity}
                onChange={(event) => update(line.key, { quantity: event.target.value })}
              />
              <LineField
                label="Unit price"
                line={number}
                type="number"
                inputMode="decimal"
                min="0"
                step="0.01"
                required
                value={line.unit_price}
                error={unitPrice}
                onChange={(event) => update(line.key, { unit_price: event.target.value })}
              />
              <div className="invoices-line-amount">
                <span className="invoices-line-label" aria-hidden="true">
                  Amount
                </span>
                <output aria-label={`Amount of line ${number}`} data-testid={`line-amount-${number}`}>
                  {amount === null || amount === undefined ? (
                    "—"
                  ) : (
                    <Money amount={centsText(amount)} currency={currency} />
                  )}
                </output>
              </div>
              <Button
                className="invoices-line-remove"
                disabled={lines.length === 1}
                aria-label={`Remove line ${number}`}
                onClick={() => remove(index)}
              >
                Remove
              </Button>
            </div>
          );
        })}
      </div>
      {fieldError(error, "items") && (
        <p className="field-error" role="alert">
          {fieldError(error, "items")}
        </p>
      )}
      <div>
        <Button onClick={add} disabled={lines.length >= MAX_LINES}>
          Add line
        </Button>
        {lines.length >= MAX_LINES && (
          <span className="muted"> A document takes at most {MAX_LINES} lines.</span>
        )}
      </div>
    </fieldset>
  );
}
