import { useState } from "react";
import { maxTextLength } from "../../../../schema/lib/limits.ts";
import { useMutation } from "../../api/hooks.ts";
import { type PaymentMethod, RecordPaymentDocument } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { Dialog } from "../../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField, TextAreaField, TextField } from "../../ui/Field.tsx";
import { Actions, Form } from "../../ui/Form.tsx";
import { fromLocalInput } from "../../ui/format.ts";
import { formatMoney } from "../../ui/money.ts";
import { withParam } from "./form-errors.ts";
import { type InvoiceDetail, METHOD_TEXT } from "./invoice-cells.tsx";
import { fieldText, toNumber } from "./totals.ts";

const FIELDS = ["amount", "payment_method", "reference", "payer_email", "paid_at", "notes"];

/**
 * Records a payment on an invoice: the amount (the balance due to start with), how it was paid,
 * and optionally when, a reference, the payer's e-mail and notes. The API's refusal of a field (an
 * amount over the balance due) is shown under it; the dialog stays open.
 */
export function PaymentDialog({
  invoice,
  onClose,
  onRecorded,
}: {
  invoice: InvoiceDetail | null;
  onClose(): void;
  onRecorded(amount: number, invoice: InvoiceDetail): void;
}) {
  return (
    <Dialog
      open={invoice !== null}
      title={invoice ? `Record a payment on ${invoice.invoice_number}` : "Record a payment"}
      onClose={onClose}
    >
      {invoice && <PaymentForm invoice={invoice} onClose={onClose} onRecorded={onRecorded} />}
    </Dialog>
  );
}

function PaymentForm({
  invoice,
  onClose,
  onRecorded,
}: {
  invoice: InvoiceDetail;
  onClose(): void;
  onRecorded(amount: number, invoice: InvoiceDetail): void;
}) {
  const [amount, setAmount] = useState(fieldText(invoice.balance_due));
  const [method, setMethod] = useState<PaymentMethod>("bank_transfer");
  const [paidAt, setPaidAt] = useState("");
  const [reference, setReference] = useState("");
  const [payerEmail, setPayerEmail] = useState("");
  const [notes, setNotes] = useState("");
  const [record, state] = useMutation(RecordPaymentDocument);
  const error = withParam(state.error);

  const submit = async () => {
    const result = await record({
      invoice_id: invoice.id,
      amount: toNumber(amount),
      payment_method: method,
      // Empty is left out: the API takes it as now.
      paid_at: fromLocalInput(paidAt) ?? undefined,
      reference: reference.trim() || undefined,
      payer_email: payerEmail.trim() || undefined,
      notes: notes.trim() || undefined,
    });
    if (result) onRecorded(result.recordPayment.amount, result.recordPayment.invoice);
  };

  return (
    <Form onSubmit={submit} aria-label="Record a payment">
      <ErrorBanner error={error} fields={FIELDS} />
      <TextField
        label={`Amount (${invoice.currency})`}
        type="number"
        inputMode="decimal"
        min="0"
        step="0.01"
        required
        value={amount}
        error={fieldError(error, "amount")}
        hint={`Balance due: ${formatMoney(invoice.balance_due, invoice.currency)}.`}
        onChange={(event) => setAmount(event.target.value)}
      />
      <SelectField
        label="Method"
        value={method}
        error={fieldError(error, "payment_method")}
        options={optionsOf(METHOD_TEXT)}
        onChange={(event) => setMethod(event.target.value as PaymentMethod)}
      />
      <TextField
        label="Paid at (optional)"
        type="datetime-local"
        value={paidAt}
        error={fieldError(error, "paid_at")}
        hint="Your local time; now when left empty."
        onChange={(event) => setPaidAt(event.target.value)}
      />
      <TextField
        label="Reference (optional)"
        maxLength={maxTextLength("Mutation.recordPayment", "reference")}
        value={reference}
        error={fieldError(error, "reference")}
        hint="The payer's or bank's reference, e.g. a transfer id."
        onChange={(event) => setReference(event.target.value)}
      />
      <TextField
        label="Payer e-mail (optional)"
        type="email"
        maxLength={maxTextLength("Mutation.recordPayment", "payer_email")}
        value={payerEmail}
        error={fieldError(error, "payer_email")}
        onChange={(event) => setPayerEmail(event.target.value)}
      />
      <TextAreaField
        label="Notes (optional)"
        rows={2}
        maxLength={maxTextLength("Mutation.recordPayment", "notes")}
        value={notes}
        error={fieldError(error, "notes")}
        onChange={(event) => setNotes(event.target.value)}
      />
      <Actions>
        <Button onClick={onClose}>Cancel</Button>
        <Button type="submit" variant="primary" busy={state.pending}>
          Record payment
        </Button>
      </Actions>
    </Form>
  );
}
