import { builder } from "../builder.ts";
import { emit } from "../events.ts";
import { PaymentMethod } from "../generated/prisma/enums.ts";
import { invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { applyPayment, assertAllowed } from "../lib/invoicing.ts";
import { MAX_PAYMENTS_PER_INVOICE } from "../lib/limits.ts";
import { Decimal } from "../lib/money.ts";
import { rest } from "../lib/rest.ts";
import { notNull, optionalEmail, optionalText } from "../lib/validate.ts";
import { lockInvoice } from "./invoice.ts";
import { objectKind } from "./shared.ts";

export const PaymentMethodEnum = builder.enumType(PaymentMethod, {
  name: "PaymentMethod",
  description: "How a payment was made.",
  values: {
    bank_transfer: { description: "A bank transfer." },
    card: { description: "A debit or credit card." },
    cash: { description: "Cash." },
    check: { description: "A check (cheque)." },
    mobile_money: { description: "A mobile money transfer." },
    other: { description: "Any other way; say which in reference or notes." },
  },
});

export const Payment = builder.prismaObject("Payment", {
  description:
    "A payment recorded by hand against an invoice. Visible with invoices.read, invoices.write or payments.write.",
  authScopes: { readable: "invoices", scope: "payments.write" },
  fields: (t) => ({
    object: objectKind(t, "payment"),
    id: t.exposeID("id", { description: "`pay_…`." }),
    invoice_id: t.exposeString("invoiceId", { description: "The invoice paid (`inv_…`)." }),
    amount: t.expose("amount", { type: "Money", description: "The amount paid, in `currency`." }),
    currency: t.exposeString("currency", { description: "ISO 4217 code: the invoice's currency." }),
    payment_method: t.expose("paymentMethod", { type: PaymentMethodEnum, description: "How it was paid." }),
    reference: t.exposeString("reference", {
      nullable: true,
      description: "The payer's or bank's reference, e.g. a transfer id.",
    }),
    payer_email: t.exposeString("payerEmail", {
      nullable: true,
      description: "The payer's e-mail address, in lower case.",
    }),
    paid_at: t.expose("paidAt", {
      type: "DateTime",
      description: "When the money was paid (as given; default the time it was recorded).",
    }),
    notes: t.exposeString("notes", { nullable: true, description: "Free-text notes." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the payment was recorded." }),
    updated_at: t.expose("updatedAt", {
      type: "DateTime",
      description: "When the payment record last changed.",
    }),
    invoice: t.relation("invoice", { description: "The invoice paid, as it is now." }),
  }),
});

builder.mutationFields((t) => ({
  recordPayment: t.prismaField({
    type: "Payment",
    description:
      "Records a payment on an invoice in draft, sent or partially_paid; the invoice becomes partially_paid, or paid (paid_at) when nothing is left to pay. Emits payment.recorded, and invoice.paid when paid in full. A quote, or a void or paid invoice, is invalid_state. Needs payments.write.",
    extensions: rest("POST /invoices/:invoice_id/payments", "Record a payment on an invoice", 201),
    authScopes: { scope: "payments.write" },
    args: {
      invoice_id: t.arg.id({
        required: true,
        description: "The invoice to pay (`inv_…`; the {invoice_id} of the REST path).",
      }),
      amount: t.arg({
        type: "Money",
        required: true,
        description:
          "Greater than 0, at most the balance due (more is amount_exceeds_balance); in the invoice's currency.",
      }),
      payment_method: t.arg({ type: PaymentMethodEnum, required: true, description: "How it was paid." }),
      reference: t.arg.string({ description: "The payer's or bank's reference, e.g. a transfer id." }),
      payer_email: t.arg.string({ description: "The payer's e-mail address." }),
      paid_at: t.arg({
        type: "DateTime",
        description: "When the money was paid, with a time zone; default now.",
      }),
      notes: t.arg.string({ description: "Free-text notes." }),
    },
    resolve: (query, _root, args, ctx) => {
      const amount = new Decimal(args.amount);
      if (amount.lte(0)) throw validationFailed("amount", "amount must be greater than 0.");
      const details = {
        paymentMethod: args.payment_method,
        reference: optionalText(args.reference) ?? null,
        payerEmail: optionalEmail("payer_email", args.payer_email) ?? null,
        paidAt: notNull("paid_at", args.paid_at) ?? new Date(),
        notes: optionalText(args.notes) ?? null,
      };
      return ctx.db.$transaction(async (tx) => {
        // The lock makes concurrent payments on one invoice take turns reading its balance.
        const invoice = await lockInvoice(tx, ctx, args.invoice_id);
        assertAllowed("pay", invoice);
        if ((await tx.payment.count({ where: { invoiceId: invoice.id } })) >= MAX_PAYMENTS_PER_INVOICE) {
          throw invalidState(
            `Invoice '${invoice.id}' already has ${MAX_PAYMENTS_PER_INVOICE} payments, the most one invoice takes.`,
          );
        }
        const settled = applyPayment(invoice, amount);
        const payment = await tx.payment.create({
          data: {
            id: newId("payment"),
            workspaceId: ctx.credential.workspaceId,
            invoiceId: invoice.id,
            amount,
            currency: invoice.currency,
            ...details,
          },
        });
        const paid = settled.status === "paid";
        const latest = paid
          ? await tx.payment.aggregate({ where: { invoiceId: invoice.id }, _max: { paidAt: true } })
          : undefined;
        const updated = await tx.invoice.update({
          where: { id: invoice.id },
          data: { ...settled, ...(latest && { paidAt: latest._max.paidAt }) },
        });
        await emit(tx, ctx, "payment.recorded", "Payment", payment);
        if (paid) await emit(tx, ctx, "invoice.paid", "Invoice", updated);
        // Read last, so that an `invoice` in the answer is the updated one.
        return tx.payment.findUniqueOrThrow({ ...query, where: { id: payment.id } });
      });
    },
  }),
}));
