import { useState } from "react";
import { useMutation, useQuery } from "../../api/hooks.ts";
import {
  AcceptQuoteDocument,
  ConvertQuoteDocument,
  DeclineQuoteDocument,
  InvoiceDocument,
  SendInvoiceDocument,
  VoidInvoiceDocument,
} from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { formatMoney } from "../../ui/money.ts";
import { Loading, Page } from "../../ui/Page.tsx";
import { DocumentView } from "./DocumentView.tsx";
import {
  CANNOT_PAY,
  CANNOT_WRITE,
  type InvoiceDetail as Detail,
  documentName,
  INVOICES_PATH,
  invoicePath,
} from "./invoice-cells.tsx";
import { PaymentDialog } from "./PaymentDialog.tsx";
import { allowed } from "./rules.ts";
import "./invoices.css";

const PATTERN = `${INVOICES_PATH}/:id`;

/**
 * One invoice or quote: its lines and totals, payments and dates, and the actions its status
 * allows (the others are not shown): edit and send a draft, record payments on and void an
 * invoice, accept, decline or convert a quote (converting opens the new invoice).
 */
export default function InvoiceDetailScreen() {
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  // Another document (a converted quote's invoice) starts afresh: no notice or dialog of the last one.
  return <InvoiceDetail key={id} id={id} />;
}

function InvoiceDetail({ id }: { id: string }) {
  const { can } = useSession();
  const detail = useQuery(InvoiceDocument, { id });
  const doc = detail.data?.invoice && detail.data.invoice.id === id ? detail.data.invoice : undefined;
  const [notice, setNotice] = useState("");
  const [paying, setPaying] = useState<Detail | null>(null);
  const [voiding, setVoiding] = useState<Detail | null>(null);
  const [declining, setDeclining] = useState<Detail | null>(null);
  const [send, sending] = useMutation(SendInvoiceDocument);
  const [accept, accepting] = useMutation(AcceptQuoteDocument);
  const [convert, converting] = useMutation(ConvertQuoteDocument);
  const [lastAction, setLastAction] = useState<"send" | "accept" | "convert" | null>(null);
  const actionError =
    lastAction === "send"
      ? sending.error
      : lastAction === "accept"
        ? accepting.error
        : lastAction === "convert"
          ? converting.error
          : undefined;

  const write = can("invoices.write");
  const pay = can("payments.write");

  const run = async (action: "send" | "accept" | "convert", current: Detail) => {
    setNotice("");
    setLastAction(action);
    if (action === "convert") {
      const result = await convert({ id: current.id });
      if (result) navigate(invoicePath(result.convertQuote.id));
      return;
    }
    const result = await (action === "send" ? send : accept)({ id: current.id });
    if (!result) return;
    setNotice(
      action === "send" ? `${documentName(current)} marked as sent.` : `${documentName(current)} accepted.`,
    );
    detail.reload();
  };

  if (!doc)
    return (
      <Page title="Invoice">
        <ErrorBanner error={detail.error} />
        {detail.loading && <Loading />}
        <p>
          <Link to={INVOICES_PATH}>All invoices and quotes</Link>
        </p>
      </Page>
    );

  const may = allowed(doc);
  const actions = (
    <div className="row-actions invoices-actions">
      {may.edit &&
        (write ? (
          <Link to={`${invoicePath(doc.id)}/edit`} className="button button-secondary">
            Edit
          </Link>
        ) : (
          <Button disabled>Edit</Button>
        ))}
      {may.send && (
        <Button disabled={!write} busy={sending.pending} onClick={() => void run("send", doc)}>
          Mark as sent
        </Button>
      )}
      {may.pay && (
        <Button variant="primary" disabled={!pay} onClick={() => setPaying(doc)}>
          Record payment
        </Button>
      )}
      {may.accept && (
        <Button
          variant="primary"
          disabled={!write}
          busy={accepting.pending}
          onClick={() => void run("accept", doc)}
        >
          Accept quote
        </Button>
      )}
      {may.decline && (
        <Button disabled={!write} onClick={() => setDeclining(doc)}>
          Decline quote
        </Button>
      )}
      {may.convert && (
        <Button
          variant="primary"
          disabled={!write}
          busy={converting.pending}
          onClick={() => void run("convert", doc)}
        >
          Convert to invoice
        </Button>
      )}
      {may.void && (
        <Button variant="danger" disabled={!write} onClick={() => setVoiding(doc)}>
          Void invoice
        </Button>
      )}
    </div>
  );
  const anyAction = Object.values(may).some(Boolean);

  return (
    <Page title={documentName(doc)} actions={anyAction ? actions : undefined}>
      <p className="invoices-back">
        <Link to={INVOICES_PATH}>All invoices and quotes</Link>
      </p>
      {anyAction && (!write || (may.pay && !pay)) && (
        <RoleNote>{!write ? CANNOT_WRITE : CANNOT_PAY}</RoleNote>
      )}
      <Notice>{notice}</Notice>
      <ErrorBanner error={actionError} />
      <ErrorBanner error={detail.error} />
      <DocumentView doc={doc} />
      <PaymentDialog
        invoice={paying}
        onClose={() => setPaying(null)}
        onRecorded={(amount, invoice) => {
          setPaying(null);
          setNotice(
            `Payment of ${formatMoney(amount, invoice.currency)} recorded: ${
              invoice.status === "paid"
                ? `${invoice.invoice_number} is paid in full.`
                : `${formatMoney(invoice.balance_due, invoice.currency)} remains due.`
            }`,
          );
          detail.reload();
        }}
      />
      <ConfirmDialog
        subject={voiding}
        title="Void this invoice?"
        label="Void invoice"
        confirm="Void invoice"
        mutation={VoidInvoiceDocument}
        variables={(current) => ({ id: current.id })}
        onClose={() => setVoiding(null)}
        onDone={(_, current) => {
          setVoiding(null);
          setNotice(`${documentName(current)} voided: it takes no more payments.`);
          detail.reload();
        }}
      >
        <p>
          {voiding?.invoice_number} is cancelled for good: it takes no more payments and cannot be edited or
          sent again. The payments recorded stay on it.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={declining}
        title="Decline this quote?"
        label="Decline quote"
        confirm="Decline quote"
        mutation={DeclineQuoteDocument}
        variables={(current) => ({ id: current.id })}
        onClose={() => setDeclining(null)}
        onDone={(_, current) => {
          setDeclining(null);
          setNotice(`${documentName(current)} declined.`);
          detail.reload();
        }}
      >
        <p>
          {declining?.invoice_number} is marked declined for good: it cannot be accepted or converted into an
          invoice afterwards.
        </p>
      </ConfirmDialog>
    </Page>
  );
}
