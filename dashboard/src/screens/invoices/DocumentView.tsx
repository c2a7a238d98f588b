import { Link } from "../../router.tsx";
import { formatDateTime, formatDay, formatNumber, formatQuantity } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { type InvoiceDetail, invoicePath, METHOD_TEXT, StatusBadge } from "./invoice-cells.tsx";

type Line = InvoiceDetail["items"][number];
type Payment = InvoiceDetail["payments"][number];

/** The document as the API holds it: facts, lines, totals, payments, dates and notes. */
export function DocumentView({ doc }: { doc: InvoiceDetail }) {
  const invoice = doc.document_type === "invoice";
  const money = (amount: number) => <Money amount={amount} currency={doc.currency} />;
  const timeline = [
    { label: "Created", at: doc.created_at },
    { label: "Sent", at: doc.sent_at },
    { label: "Accepted", at: doc.accepted_at },
    { label: "Declined", at: doc.declined_at },
    { label: "Paid in full", at: doc.paid_at },
    { label: "Voided", at: doc.voided_at },
    { label: "Last changed", at: doc.updated_at },
  ]
    .filter((event): event is { label: string; at: string } => Boolean(event.at))
    .sort((a, b) => a.at.localeCompare(b.at));

  return (
    <>
      <dl className="facts invoices-facts">
        <div>
          <dt>Status</dt>
          <dd>
            <StatusBadge doc={doc} />
          </dd>
        </div>
        <div>
          <dt>Client</dt>
          <dd>{doc.client?.name ?? doc.client_id}</dd>
        </div>
        <div>
          <dt>Issued</dt>
          <dd>{formatDay(doc.issue_date)}</dd>
        </div>
        <div>
          <dt>Due</dt>
          <dd>{doc.due_date ? formatDay(doc.due_date) : "No due date"}</dd>
        </div>
        <div>
          <dt>Currency</dt>
          <dd>{doc.currency}</dd>
        </div>
        {doc.quote_id && (
          <div>
            <dt>Converted from</dt>
            <dd>
              <Link to={invoicePath(doc.quote_id)}>the quote</Link>
            </dd>
          </div>
        )}
        {doc.converted_invoice_id && (
          <div>
            <dt>Converted into</dt>
            <dd>
              <Link to={invoicePath(doc.converted_invoice_id)}>the invoice</Link>
            </dd>
          </div>
        )}
      </dl>

      <Panel title="Lines">
        <Table<Line>
          caption="Lines"
          rows={doc.items}
          rowKey={(line) => `${doc.items.indexOf(line)}`}
          columns={[
            { header: "Description", cell: (line) => line.description },
            { header: "Quantity", nowrap: true, cell: (line) => formatQuantity(line.quantity) },
            { header: "Unit price", nowrap: true, cell: (line) => money(line.unit_price) },
            { header: "Amount", nowrap: true, cell: (line) => money(line.amount) },
          ]}
        />
        <dl className="invoices-totals" aria-label="Totals">
          <div>
            <dt>Subtotal</dt>
            <dd data-testid="subtotal">{money(doc.subtotal)}</dd>
          </div>
          <div>
            <dt>Tax ({formatNumber(doc.tax_rate)} %)</dt>
            <dd data-testid="tax">{money(doc.tax_amount)}</dd>
          </div>
          <div className="invoices-total">
            <dt>Total</dt>
            <dd data-testid="total">{money(doc.total)}</dd>
          </div>
          {invoice && (
            <>
              <div>
                <dt>Amount paid</dt>
                <dd data-testid="amount-paid">{money(doc.amount_paid)}</dd>
              </div>
              <div className="invoices-total">
                <dt>Balance due</dt>
                <dd data-testid="balance-due">{money(doc.balance_due)}</dd>
              </div>
            </>
          )}
        </dl>
      </Panel>

      {invoice && (
        <Panel title="Payments">
          <Table<Payment>
            caption="Payments"
            rows={doc.payments}
            rowKey={(payment) => payment.id}
            empty="No payments recorded yet."
            columns={[
              { header: "Amount", nowrap: true, cell: (payment) => money(payment.amount) },
              { header: "Method", cell: (payment) => METHOD_TEXT[payment.payment_method] },
              { header: "Paid", nowrap: true, cell: (payment) => formatDateTime(payment.paid_at) },
              { header: "Reference", cell: (payment) => payment.reference ?? "—" },
              { header: "Payer", cell: (payment) => payment.payer_email ?? "—" },
              { header: "Notes", cell: (payment) => payment.notes ?? "—" },
              { header: "Recorded", nowrap: true, cell: (payment) => formatDateTime(payment.created_at) },
            ]}
          />
        </Panel>
      )}

      <div className="grid-2 invoices-aside">
        <Panel title="Timeline">
          <ul className="invoices-timeline">
            {timeline.map((event) => (
              <li key={event.label}>
                <span className="invoices-timeline-label">{event.label}</span>{" "}
                <time dateTime={event.at}>{formatDateTime(event.at)}</time>
              </li>
            ))}
            {doc.status === "converted" && (
              <li>
                <span className="invoices-timeline-label">Converted</span> into{" "}
                {doc.converted_invoice_id ? (
                  <Link to={invoicePath(doc.converted_invoice_id)}>an invoice</Link>
                ) : (
                  "an invoice"
                )}
              </li>
            )}
          </ul>
        </Panel>
        <Panel title="Notes">
          {doc.notes ? <p className="invoices-notes">{doc.notes}</p> : <p className="empty">No notes.</p>}
        </Panel>
      </div>
    </>
  );
}
