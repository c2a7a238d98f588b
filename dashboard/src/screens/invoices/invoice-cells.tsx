import type {
  DocumentType,
  InvoiceDetailFieldsFragment,
  InvoiceRowFieldsFragment,
  InvoiceStatus,
  PaymentMethod,
} from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";

// The invoices screens' shared types, texts and cells.

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

export const METHOD_TEXT: Record<PaymentMethod, string> = {
  bank_transfer: "Bank transfer",
  card: "Card",
  cash: "Cash",
  check: "Check",
  mobile_money: "Mobile money",
  other: "Other",
};

const TONE: Partial<Record<InvoiceStatus, string>> = {
  sent: "tag-info",
  partially_paid: "tag-warn",
  paid: "tag-ok",
  accepted: "tag-ok",
  void: "tag-bad",
  declined: "tag-bad",
};

/** The status as a badge, and "Overdue" beside it when the API says so. */
export function StatusBadge({ doc }: { doc: Pick<InvoiceRow, "status" | "overdue"> }) {
  return (
    <span className="invoices-status">
      <span className={["tag", TONE[doc.status]].filter(Boolean).join(" ")}>{STATUS_TEXT[doc.status]}</span>
      {doc.overdue && <span className="tag tag-bad">Overdue</span>}
    </span>
  );
}

const formatters = new Map<string, Intl.NumberFormat>();

function currencyFormat(currency: string): Intl.NumberFormat | null {
  let format = formatters.get(currency);
  if (!format) {
    try {
      format = new Intl.NumberFormat(undefined, {
        style: "currency",
        currency,
        minimumFractionDigits: 2,
        maximumFractionDigits: 2,
      });
    } catch {
      // Not a currency code Intl knows the shape of (a code still being typed): shown plainly.
      return null;
    }
    formatters.set(currency, format);
  }
  return format;
}

/**
 * An amount with its currency, from the API's number or the preview's exact decimal text
 * ("64.32"): Intl formats a decimal string exactly, without going through floating point.
 */
export function formatMoney(amount: number | string, currency: string): string {
  const format = currencyFormat(currency);
  const text = typeof amount === "number" ? String(amount) : amount;
  if (!format) return `${text} ${currency}`;
  return (format.format as unknown as (value: string) => string)(text);
}

/** An amount as a cell: the formatted text, with the exact decimal in `data-amount` (what tests compare). */
export function Money({ amount, currency }: { amount: number | string; currency: string }) {
  const exact = typeof amount === "number" ? amount.toFixed(2) : amount;
  return (
    <span className="invoices-money" data-amount={exact}>
      {formatMoney(amount, currency)}
    </span>
  );
}

const day = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeZone: "UTC" });

/** A calendar date of the API (YYYY-MM-DD) in the user's locale, as that day (not shifted by a time zone). */
export function formatDay(date: string | null | undefined): string {
  if (!date) return "—";
  const parsed = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(parsed.getTime()) ? date : day.format(parsed);
}

/** "Invoice INV-2026-0001", "Quote QUO-2026-0002". */
export const documentName = (doc: Pick<InvoiceRow, "document_type" | "invoice_number">) =>
  `${TYPE_TEXT[doc.document_type]} ${doc.invoice_number}`;
