import type {
  DocumentType,
  InvoiceDetailFieldsFragment,
  InvoiceRowFieldsFragment,
  InvoiceStatus,
  PaymentMethod,
} from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";
import { Tag, Tags, type Tone } from "../../ui/Tag.tsx";

// The invoices screens' shared types, texts and cells (the client screen lists documents with them too).

export type InvoiceRow = InvoiceRowFieldsFragment;
export type InvoiceDetail = InvoiceDetailFieldsFragment;

export const INVOICES_PATH = `${BASE}/invoices`;
export const invoicePath = (id: string) => `${INVOICES_PATH}/${encodeURIComponent(id)}`;

/** Why a form or button is greyed out for a role without the scope (none today: members write invoices too). */
export const CANNOT_WRITE = "Your role in this workspace cannot create or change invoices and quotes.";
export const CANNOT_PAY = "Your role in this workspace cannot record payments.";

export const STATUS_TEXT: Record<InvoiceStatus, string> = {
  draft: "Draft",
  sent: "Sent",
  partially_paid: "Partially paid",
  paid: "Paid",
  void: "Void",
  accepted: "Accepted",
  declined: "Declined",
  converted: "Converted",
};

export const TYPE_TEXT: Record<DocumentType, string> = { invoice: "Invoice", quote: "Quote" };

/** A list's choice of document type ("" for both). */
export const TYPE_OPTIONS = [
  { value: "", label: "Invoices and quotes" },
  { value: "invoice", label: "Invoices" },
  { value: "quote", label: "Quotes" },
];

export const isDocumentType = (value: string): value is DocumentType =>
  value === "invoice" || value === "quote";

export const METHOD_TEXT: Record<PaymentMethod, string> = {
  bank_transfer: "Bank transfer",
  card: "Card",
  cash: "Cash",
  check: "Check",
  mobile_money: "Mobile money",
  other: "Other",
};

const TONE: Partial<Record<InvoiceStatus, Tone>> = {
  sent: "info",
  partially_paid: "warn",
  paid: "ok",
  accepted: "ok",
  void: "bad",
  declined: "bad",
};

/** The status as a badge, and "Overdue" beside it when the API says so. */
export function StatusBadge({ doc }: { doc: Pick<InvoiceRow, "status" | "overdue"> }) {
  return (
    <Tags>
      <Tag tone={TONE[doc.status]}>{STATUS_TEXT[doc.status]}</Tag>
      {doc.overdue && <Tag tone="bad">Overdue</Tag>}
    </Tags>
  );
}

/** "Invoice INV-2026-0001", "Quote QUO-2026-0002". */
export const documentName = (doc: Pick<InvoiceRow, "document_type" | "invoice_number">) =>
  `${TYPE_TEXT[doc.document_type]} ${doc.invoice_number}`;
