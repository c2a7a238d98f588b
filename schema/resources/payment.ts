import { builder } from "../builder.ts";
import { emit } from "../events.ts";
import { PaymentMethod } from "../generated/prisma/enums.ts";
import { validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { applyPayment, assertAllowed } from "../lib/invoicing.ts";
import { Decimal } from "../lib/money.ts";
import { rest } from "../lib/rest.ts";
import { notNull, optionalEmail, optionalText } from "../lib/validate.ts";
import { lockInvoice } from "./invoice.ts";

export const PaymentMethodEnum = builder.enumType(PaymentMethod, { name: "PaymentMethod" });

export const Payment = builder.prismaObject("Payment", {
  description: "A payment recorded by hand against an invoice.",
  authScopes: { readable: "invoices", scope: "payments.write" },
  fields: (t) => ({
    object: t.string({ resolve: () => "payment" }),
    id: t.exposeID("id"),
    invoice_id: t.exposeString("invoiceId"),
    amount: t.expose("amount", { type: "Money" }),
    currency: t.exposeString("currency", { description: "The invoice's currency." }),
    payment_method: t.expose("paymentMethod", { type: PaymentMethodEnum }),
    reference: t.exposeString("reference", { nullable: true }),
    payer_email: t.exposeString("payerEmail", { nullable: true }),
    paid_at: t.expose("paidAt", { type: "DateTime" }),
    notes: t.exposeString("notes", { nullable: true }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
    invoice: t.relation("invoice", { description: "The invoice paid, as it is now." }),
  }),
});

builder.mutationFields((t) => ({
  recordPayment: t.prismaField({
    type: "Payment",
    description:
      "Records a payment on an invoice in draft, sent or partially_paid; the invoice becomes partially_paid, or paid (paid_at) when nothing is left to pay.",
    extensions: rest("POST /invoices/:invoice_id/payments", "Record a payment on an invoice", 201),
    authScopes: { scope: "payments.write" },
    args: {
      invoice_id: t.arg.id({ required: true }),
      amount: t.arg({ type: "Money", required: true, description: "Greater than 0, at most the balance due." }),
      payment_method: t.arg({ type: PaymentMethodEnum, required: true }),
      reference: t.arg.string(),
      payer_email: t.arg.string(),
      paid_at: t.arg({ type: "DateTime", description: "Default now." }),
      notes: t.arg.string(),
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
        const latest = paid ? await tx.payment.aggregate({ where: { invoiceId: invoice.id }, _max: { paidAt: true } }) : undefined;
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
