import type { DocumentType, InvoiceStatus } from "../generated/prisma/enums.ts";
import { ApiError, invalidState, validationFailed } from "./errors.ts";
import { cents, Decimal, type DecimalValue, sum } from "./money.ts";
import { requiredText } from "./validate.ts";

/** The largest amount a numeric(14,2) column holds. */
const MAX_AMOUNT = new Decimal("999999999999.99");

export interface LineInput {
  description: string;
  /** Exact decimal strings, as the Quantity and Money scalars deliver them (never negative). */
  quantity: string;
  unit_price: string;
}

export interface Line {
  position: number;
  description: string;
  quantity: Decimal;
  unitPrice: Decimal;
  amount: Decimal;
}

export interface Totals {
  subtotal: Decimal;
  taxAmount: Decimal;
  total: Decimal;
}

/** Checks the lines of a document and prices each one: amount = quantity × unit_price, to the cent. */
export function priceLines(items: readonly LineInput[]): Line[] {
  if (items.length === 0) throw validationFailed("items", "items must contain at least one line.");
  return items.map((item, position) => {
    const param = `items[${position}]`;
    const description = requiredText(`${param}.description`, item.description);
    const quantity = new Decimal(item.quantity);
    if (quantity.lte(0))
      throw validationFailed(`${param}.quantity`, `${param}.quantity must be greater than 0.`);
    const unitPrice = new Decimal(item.unit_price);
    return { position, description, quantity, unitPrice, amount: cents(quantity.times(unitPrice)) };
  });
}

/** tax_amount = subtotal × tax_rate / 100 to the cent; total = subtotal + tax_amount. */
export function totals(subtotal: DecimalValue, taxRate: DecimalValue): Totals {
  const base = new Decimal(subtotal);
  const taxAmount = cents(base.times(taxRate).dividedBy(100));
  const total = base.plus(taxAmount);
  // Every amount is at most the total, so this one check keeps them all storable.
  if (total.gt(MAX_AMOUNT))
    throw validationFailed("items", `The total cannot exceed ${MAX_AMOUNT.toFixed(2)}.`);
  return { subtotal: base, taxAmount, total };
}

export const linesTotals = (lines: readonly Line[], taxRate: DecimalValue): Totals =>
  totals(sum(lines.map((line) => line.amount)), taxRate);

export function documentNumber(type: DocumentType, year: number, sequence: number): string {
  return `${type === "invoice" ? "INV" : "QUO"}-${year}-${String(sequence).padStart(4, "0")}`;
}

/** Midnight UTC of the current day: what a Date column compares against. */
export function todayUtc(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

interface Balance {
  total: DecimalValue;
  amountPaid: DecimalValue;
}

export const balanceDue = (doc: Balance): Decimal => new Decimal(doc.total).minus(doc.amountPaid);

/** An invoice past its due date with money still owed; quotes and void invoices never are. */
export function isOverdue(
  doc: Balance & { documentType: DocumentType; status: InvoiceStatus; dueDate: Date | null },
  today = todayUtc(),
): boolean {
  return (
    doc.documentType === "invoice" &&
    doc.status !== "void" &&
    doc.dueDate !== null &&
    doc.dueDate.getTime() < today.getTime() &&
    balanceDue(doc).gt(0)
  );
}

export type DocumentAction = "edit" | "send" | "void" | "accept" | "decline" | "convert" | "pay";

interface Rule {
  /** "it can be <verb> only while …" */
  verb: string;
  only?: DocumentType;
  from: readonly InvoiceStatus[];
}

const RULES: Record<DocumentAction, Rule> = {
  edit: { verb: "edited", from: ["draft"] },
  send: { verb: "sent", from: ["draft"] },
  void: { verb: "voided", only: "invoice", from: ["draft", "sent", "partially_paid"] },
  accept: { verb: "accepted", only: "quote", from: ["draft", "sent"] },
  decline: { verb: "declined", only: "quote", from: ["draft", "sent"] },
  convert: { verb: "converted", only: "quote", from: ["accepted"] },
  pay: { verb: "paid", only: "invoice", from: ["draft", "sent", "partially_paid"] },
};

const listed = (items: readonly string[]) =>
  items.length === 1 ? items[0]! : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]!}`;

/** Throws 400 invalid_state when `action` does not apply to this document type or status. */
export function assertAllowed(
  action: DocumentAction,
  doc: { documentType: DocumentType; status: InvoiceStatus; number: string },
): void {
  const rule = RULES[action];
  if (rule.only && doc.documentType !== rule.only) {
    throw invalidState(
      `Only ${rule.only}s can be ${rule.verb}; ${doc.number} is ${doc.documentType === "invoice" ? "an invoice" : "a quote"}.`,
    );
  }
  if (!rule.from.includes(doc.status)) {
    const kind = doc.documentType === "invoice" ? "Invoice" : "Quote";
    throw invalidState(
      `${kind} ${doc.number} is ${doc.status}; it can be ${rule.verb} only while ${listed(rule.from)}.`,
    );
  }
}

export const amountExceedsBalance = (amount: Decimal, balance: Decimal, number: string) =>
  new ApiError(
    400,
    "invalid_request_error",
    "amount_exceeds_balance",
    `amount ${amount.toFixed(2)} exceeds the balance due of ${balance.toFixed(2)} on ${number}.`,
    { param: "amount" },
  );

/** The invoice after a payment of `amount`: never more paid than its total. */
export function applyPayment(
  doc: Balance & { number: string },
  amount: DecimalValue,
): { amountPaid: Decimal; status: "partially_paid" | "paid" } {
  const paying = new Decimal(amount);
  const balance = balanceDue(doc);
  if (paying.gt(balance)) throw amountExceedsBalance(paying, balance, doc.number);
  const amountPaid = new Decimal(doc.amountPaid).plus(paying);
  return { amountPaid, status: amountPaid.eq(doc.total) ? "paid" : "partially_paid" };
}
