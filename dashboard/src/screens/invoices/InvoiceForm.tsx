import { useState } from "react";
import { maxTextLength } from "../../../../schema/lib/limits.ts";
import type { DocumentType, InvoiceItemInput } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { SelectField, TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { Money } from "../../ui/Money.tsx";
import { centsText } from "../../ui/money.ts";
import { ClientPicker, type PickedClient } from "./ClientPicker.tsx";
import { TYPE_TEXT } from "./invoice-cells.tsx";
import { type LineDraft, LineItems, lineParams, newLine } from "./LineItems.tsx";
import { previewTotals, toNumber } from "./totals.ts";

/** The form's fields as typed: dates as YYYY-MM-DD, numbers as their text ("" for none). */
export interface InvoiceValues {
  document_type: DocumentType;
  client: PickedClient | null;
  issue_date: string;
  due_date: string;
  tax_rate: string;
  currency: string;
  notes: string;
  items: LineDraft[];
}

/** Today in the user's own calendar, as YYYY-MM-DD. */
function localToday(): string {
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

export const emptyValues = (document_type: DocumentType = "invoice"): InvoiceValues => ({
  document_type,
  client: null,
  issue_date: localToday(),
  due_date: "",
  tax_rate: "0",
  currency: "",
  notes: "",
  items: [newLine()],
});

/** The lines as the API takes them: exact numbers from the text typed. */
export const itemsInput = (items: readonly LineDraft[]): InvoiceItemInput[] =>
  items.map((line) => ({
    description: line.description,
    quantity: toNumber(line.quantity),
    unit_price: toNumber(line.unit_price),
  }));

const FIELDS = [
  "client_id",
  "document_type",
  "issue_date",
  "due_date",
  "tax_rate",
  "currency",
  "notes",
  "items",
];

/**
 * An invoice or quote's fields and lines, with its totals computed live exactly as the server
 * will (totals.ts). Used to create a document and to edit a draft; the API's refusal of a field
 * (a line's too) is shown under that field.
 */
export function InvoiceForm({
  initial,
  editing,
  error,
  pending,
  disabled,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  initial: InvoiceValues;
  /** A draft being edited: its type is fixed. */
  editing: boolean;
  error: unknown;
  pending: boolean;
  /** Why the role may not save, when it may not. */
  disabled?: string | undefined;
  submitLabel: string;
  onSubmit(values: InvoiceValues): void | Promise<void>;
  onCancel(): void;
}) {
  const [values, setValues] = useState(initial);
  // The client's currency fills the field until the user types one of their own.
  const [currencyTyped, setCurrencyTyped] = useState(editing);
  const set = (change: Partial<InvoiceValues>) => setValues((previous) => ({ ...previous, ...change }));

  const totals = previewTotals(values.items, values.tax_rate);
  const currency = values.currency.trim() || values.client?.currency || "USD";
  const fields = [...FIELDS, ...values.items.flatMap((_, index) => lineParams(index))];
  const label = TYPE_TEXT[values.document_type].toLowerCase();

  return (
    <Form
      className="invoices-form"
      aria-label={editing ? `Edit ${label}` : "New invoice or quote"}
      onSubmit={() => (disabled ? undefined : onSubmit(values))}
    >
      <ErrorBanner error={error} fields={fields} />
      <div className="invoices-form-grid">
        <ClientPicker
          value={values.client?.id ?? ""}
          current={values.client}
          error={fieldError(error, "client_id")}
          onChange={(client) =>
            set({
              client,
              ...(!currencyTyped && { currency: client?.currency ?? "" }),
            })
          }
        />
        {editing ? (
          <div className="field">
            <span className="invoices-fixed-label">Document type</span>
            <span>{TYPE_TEXT[values.document_type]} (fixed when it was created)</span>
          </div>
        ) : (
          <SelectField
            label="Document type"
            value={values.document_type}
            error={fieldError(error, "document_type")}
            hint="An invoice takes payments; a quote can be accepted, then converted into an invoice."
            options={[
              { value: "invoice", label: "Invoice" },
              { value: "quote", label: "Quote" },
            ]}
            onChange={(event) => set({ document_type: event.target.value as DocumentType })}
          />
        )}
        <TextField
          label="Issue date"
          type="date"
          required
          value={values.issue_date}
          error={fieldError(error, "issue_date")}
          hint={editing ? "It must stay in the same year: the number belongs to it." : undefined}
          onChange={(event) => set({ issue_date: event.target.value })}
        />
        <TextField
          label="Due date (optional)"
          type="date"
          value={values.due_date}
          error={fieldError(error, "due_date")}
          onChange={(event) => set({ due_date: event.target.value })}
        />
        <TextField
          label="Tax rate (%)"
          type="number"
          inputMode="decimal"
          min="0"
          max="100"
          step="0.001"
          required
          value={values.tax_rate}
          error={fieldError(error, "tax_rate")}
          hint="Of the subtotal, e.g. 7.25."
          onChange={(event) => set({ tax_rate: event.target.value })}
        />
        <TextField
          label="Currency"
          maxLength={3}
          autoCapitalize="characters"
          spellCheck={false}
          value={values.currency}
          error={fieldError(error, "currency")}
          hint="ISO 4217 code in capitals, e.g. USD; the client's by default."
          onChange={(event) => {
            setCurrencyTyped(true);
            set({ currency: event.target.value });
          }}
        />
      </div>
      <LineItems
        lines={values.items}
        amounts={totals.lines}
        currency={currency}
        error={error}
        onChange={(items) => set({ items })}
      />
      <TextAreaField
        label="Notes (optional)"
        rows={3}
        maxLength={maxTextLength("Mutation.createInvoice", "notes")}
        value={values.notes}
        error={fieldError(error, "notes")}
        onChange={(event) => set({ notes: event.target.value })}
      />
      <dl className="invoices-totals" aria-label="Totals">
        <div>
          <dt>Subtotal</dt>
          <dd data-testid="preview-subtotal">
            {totals.subtotal === null ? (
              "—"
            ) : (
              <Money amount={centsText(totals.subtotal)} currency={currency} />
            )}
          </dd>
        </div>
        <div>
          <dt>Tax{values.tax_rate.trim() ? ` (${values.tax_rate.trim()} %)` : ""}</dt>
          <dd data-testid="preview-tax">
            {totals.tax === null ? "—" : <Money amount={centsText(totals.tax)} currency={currency} />}
          </dd>
        </div>
        <div className="invoices-total">
          <dt>Total</dt>
          <dd data-testid="preview-total">
            {totals.total === null ? "—" : <Money amount={centsText(totals.total)} currency={currency} />}
          </dd>
        </div>
      </dl>
      {disabled && <p className="muted">{disabled}</p>}
      <Actions>
        <Button onClick={onCancel}>Cancel</Button>
        <Button type="submit" variant="primary" busy={pending} disabled={Boolean(disabled)}>
          {submitLabel}
        </Button>
      </Actions>
    </Form>
  );
}
