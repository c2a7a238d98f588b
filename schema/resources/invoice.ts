import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { type EventType, emit, type Tx } from "../events.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { DocumentType, InvoiceStatus } from "../generated/prisma/enums.ts";
import { validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import {
  assertAllowed,
  balanceDue,
  type DocumentAction,
  documentNumber,
  isOverdue,
  linesTotals,
  priceLines,
  todayUtc,
  totals,
} from "../lib/invoicing.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned, lockRow } from "../lib/locks.ts";
import { defined, found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, notNull, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

export const DocumentTypeEnum = builder.enumType(DocumentType, {
  name: "DocumentType",
  description: "Whether a document is an invoice or a quote; fixed when it is created.",
  values: {
    invoice: { description: "A bill, numbered INV-<year>-<seq>; it takes payments." },
    quote: { description: "An offer, numbered QUO-<year>-<seq>; once accepted it converts into an invoice." },
  },
});
export const InvoiceStatusEnum = builder.enumType(InvoiceStatus, {
  name: "InvoiceStatus",
  description:
    "Invoices: draft, sent, partially_paid, paid, void. Quotes: draft, sent, accepted, declined, converted.",
  values: {
    draft: { description: "Being prepared: the only status in which the document can be edited." },
    sent: { description: "Sent to the client (sent_at)." },
    partially_paid: { description: "Invoice: paid in part; balance_due remains." },
    paid: { description: "Invoice: paid in full (paid_at)." },
    void: { description: "Invoice: cancelled (voided_at); it takes no more payments." },
    accepted: { description: "Quote: accepted (accepted_at); it can now be converted into an invoice." },
    declined: { description: "Quote: declined (declined_at)." },
    converted: { description: "Quote: converted into an invoice (converted_invoice_id)." },
  },
});

const InvoiceItem = builder.prismaObject("InvoiceItem", {
  description: "A line of an invoice or quote.",
  fields: (t) => ({
    description: t.exposeString("description", { description: "What the line bills or offers." }),
    quantity: t.expose("quantity", { type: "Quantity", description: "How many units; greater than 0." }),
    unit_price: t.expose("unitPrice", {
      type: "Money",
      description: "The price of one unit, in the document's currency.",
    }),
    amount: t.expose("amount", {
      type: "Money",
      description: "quantity × unit_price, rounded half-up to the cent.",
    }),
  }),
});

export const Invoice = builder.prismaObject("Invoice", {
  description:
    'An invoice or a quote (document_type); both are `object: "invoice"`. Visible with invoices.read, invoices.write or payments.write (a payment shows the invoice it pays).',
  // Whoever may record a payment sees the invoice it pays.
  authScopes: { readable: "invoices", scope: "payments.write" },
  fields: (t) => ({
    object: objectKind(t, "invoice"),
    id: t.exposeID("id", { description: "`inv_…`, for invoices and quotes alike." }),
    document_type: t.expose("documentType", { type: DocumentTypeEnum, description: "invoice or quote." }),
    invoice_number: t.exposeString("number", {
      description:
        "INV-<year>-<seq> or QUO-<year>-<seq> (seq of 4 digits or more), gapless per workspace, type and year; the year is that of issue_date.",
    }),
    status: t.expose("status", {
      type: InvoiceStatusEnum,
      description: "Where the document is in its life; the statuses differ for invoices and quotes.",
    }),
    client_id: t.exposeString("clientId", { description: "The client billed (`cli_…`)." }),
    issue_date: t.expose("issueDate", { type: "Date", description: "The date of issue." }),
    due_date: t.expose("dueDate", {
      type: "Date",
      nullable: true,
      description: "When payment is due; null when none was set.",
    }),
    tax_rate: t.expose("taxRate", {
      type: "Percent",
      description: "Tax as a percentage of the subtotal (7.5 means 7.5 %).",
    }),
    currency: t.exposeString("currency", { description: "ISO 4217 code of every amount of the document." }),
    notes: t.exposeString("notes", { nullable: true, description: "Free-text notes." }),
    items: t.relation("items", {
      type: InvoiceItem,
      description: "The lines, in the order they were given.",
      query: { orderBy: { position: "asc" } },
    }),
    subtotal: t.expose("subtotal", { type: "Money", description: "The sum of the lines' amounts." }),
    tax_amount: t.expose("taxAmount", {
      type: "Money",
      description: "subtotal × tax_rate / 100, rounded half-up to the cent.",
    }),
    total: t.expose("total", { type: "Money", description: "subtotal + tax_amount." }),
    amount_paid: t.expose("amountPaid", {
      type: "Money",
      description: "The sum of the payments recorded; 0 on a quote.",
    }),
    balance_due: t.field({ type: "Money", description: "total − amount_paid.", resolve: balanceDue }),
    overdue: t.boolean({
      description:
        "An invoice whose due date has passed (UTC) with a balance due and not void; never a quote.",
      resolve: (doc) => isOverdue(doc),
    }),
    payments: t.relation("payments", {
      description: "The payments recorded on this invoice, oldest first.",
      query: { orderBy: { id: "asc" } },
    }),
    quote_id: t.exposeString("quoteId", {
      nullable: true,
      description: "On an invoice converted from a quote: that quote.",
    }),
    converted_invoice_id: t.string({
      nullable: true,
      description: "On a converted quote: the invoice made from it.",
      select: { invoice: { select: { id: true } } },
      resolve: (doc) => doc.invoice?.id ?? null,
    }),
    sent_at: t.expose("sentAt", {
      type: "DateTime",
      nullable: true,
      description: "When the document was marked sent; null before.",
    }),
    paid_at: t.expose("paidAt", {
      type: "DateTime",
      nullable: true,
      description: "When the invoice was paid in full (its latest payment's paid_at); null until then.",
    }),
    voided_at: t.expose("voidedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the invoice was voided; null unless void.",
    }),
    accepted_at: t.expose("acceptedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the quote was accepted; null unless it was.",
    }),
    declined_at: t.expose("declinedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the quote was declined; null unless it was.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the document was created." }),
    updated_at: t.expose("updatedAt", {
      type: "DateTime",
      description: "When the document was last changed.",
    }),
    client: t.relation("client", {
      type: Client,
      nullable: true,
      extensions: { rest: false },
      description: "The client billed (needs clients.read).",
    }),
  }),
});

const InvoiceList = listType("Invoice", Invoice);

const InvoiceItemInput = builder.inputType("InvoiceItemInput", {
  description: "A line of an invoice or quote; its amount is computed.",
  fields: (t) => ({
    description: t.string({ required: true, description: "What the line bills or offers; cannot be empty." }),
    quantity: t.field({
      type: "Quantity",
      required: true,
      description: "How many units: greater than 0, at most 3 decimals.",
    }),
    unit_price: t.field({
      type: "Money",
      required: true,
      description: "The price of one unit, in the document's currency.",
    }),
  }),
});

const documentFields = (create: boolean) =>
  builder.args((t) => ({
    client_id: t.string({
      required: create,
      description: "The client billed (`cli_…`): a client of this workspace.",
    }),
    issue_date: t.field({
      type: "Date",
      description: create
        ? "Default today (UTC); its year numbers the document."
        : "Must stay in the same year: the document's number belongs to it.",
    }),
    due_date: t.field({
      type: "Date",
      description: "When payment is due: on or after issue_date; null means no due date.",
    }),
    tax_rate: t.field({
      type: "Percent",
      description: create
        ? "Percentage of the subtotal, default 0."
        : "Percentage of the subtotal; the totals are recomputed.",
    }),
    currency: t.string({
      description: create
        ? "ISO 4217 code in capitals, default the client's currency."
        : "ISO 4217 code in capitals.",
    }),
    notes: t.string({ description: "Free-text notes; null clears them." }),
    items: t.field({
      type: [InvoiceItemInput],
      required: create,
      description: create
        ? "The lines, at least one."
        : "Replaces every line (at least one); cannot be null.",
    }),
  }));

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

/**
 * Locks the document's row until the transaction ends, then reads it: writers of one document
 * (payments, edits, state changes) queue here instead of acting on a stale balance or status.
 */
export async function lockInvoice(tx: Tx, ctx: Context, id: string) {
  await lockOwned(tx, "invoice", id, ctx.credential.workspaceId);
  return tx.invoice.findUniqueOrThrow({ where: { id } });
}

/**
 * The next number of the workspace's sequence for this type and year, in one statement. The
 * sequence row stays locked until the transaction ends: concurrent creators queue on it, and a
 * rolled-back creation gives its number back, so numbers are unique and gapless.
 */
async function nextNumber(tx: Tx, ctx: Context, type: DocumentType, issueDate: Date): Promise<string> {
  const year = issueDate.getUTCFullYear();
  const [row] = await tx.$queryRaw<{ last_value: number }[]>`
    insert into document_sequences (workspace_id, document_type, year, last_value)
    values (${ctx.credential.workspaceId}, ${type}::"DocumentType", ${year}, 1)
    on conflict (workspace_id, document_type, year)
    do update set last_value = document_sequences.last_value + 1
    returning last_value`;
  return documentNumber(type, year, Number(row!.last_value));
}

/** client_id is a body field: a client that is not the caller's is bad input, not a missing resource. */
async function clientOf(tx: Tx, ctx: Context, clientId: string) {
  // A share lock: the client cannot be deleted before the document referring to it commits.
  const shared = await lockRow(tx, "client", clientId, ctx.credential.workspaceId, "share");
  const client = shared
    ? await tx.client.findUniqueOrThrow({ where: { id: clientId }, select: { id: true, currency: true } })
    : null;
  if (!client)
    throw validationFailed("client_id", `client_id '${clientId}' is not a client of this workspace.`);
  return client;
}

function checkDueDate(issueDate: Date, dueDate: Date | null | undefined): void {
  if (dueDate && dueDate.getTime() < issueDate.getTime()) {
    throw validationFailed("due_date", "due_date cannot be before issue_date.");
  }
}

builder.queryFields((t) => ({
  invoices: t.field({
    type: InvoiceList,
    description: "The workspace's invoices and quotes, newest first. Needs invoices.read.",
    extensions: rest("GET /invoices", "List invoices and quotes"),
    authScopes: { scope: "invoices.read" },
    args: {
      status: t.arg({ type: InvoiceStatusEnum, description: "Only documents in this status." }),
      document_type: t.arg({ type: DocumentTypeEnum, description: "Only invoices, or only quotes." }),
      client_id: t.arg.string({ description: "Only documents of this client (`cli_…`)." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.invoice.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.status && { status: args.status }),
            ...(args.document_type && { documentType: args.document_type }),
            ...(args.client_id != null && { clientId: args.client_id }),
            ...cursor,
          },
          ...page,
        }),
      ),
  }),
  invoice: t.prismaField({
    type: "Invoice",
    nullable: true,
    description:
      "One invoice or quote by id, with its items and payments; an unknown id is a not_found error. Needs invoices.read.",
    extensions: rest("GET /invoices/:id", "Retrieve an invoice or quote with its items and payments"),
    authScopes: { scope: "invoices.read" },
    args: { id: t.arg.id({ required: true, description: "The document's id (`inv_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("invoice", args.id, await ctx.db.invoice.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createInvoice: t.prismaField({
    type: "Invoice",
    description:
      "Creates a draft invoice, or a quote with document_type quote, and gives it the next number (emits invoice.created or quote.created). Needs invoices.write.",
    extensions: rest("POST /invoices", "Create an invoice or quote", 201),
    authScopes: { scope: "invoices.write" },
    args: {
      document_type: t.arg({
        type: DocumentTypeEnum,
        description: "invoice (the default) or quote; it cannot change later.",
      }),
      ...documentFields(true),
    },
    resolve: (query, _root, args, ctx) => {
      const type = notNull("document_type", args.document_type) ?? "invoice";
      const clientId = requiredText("client_id", args.client_id);
      const lines = priceLines(args.items ?? []);
      const taxRate = notNull("tax_rate", args.tax_rate) ?? "0";
      const issueDate = notNull("issue_date", args.issue_date) ?? todayUtc();
      checkDueDate(issueDate, args.due_date);
      const sums = linesTotals(lines, taxRate);
      const chosenCurrency = currency("currency", args.currency);
      return ctx.db.$transaction(async (tx) => {
        const number = await nextNumber(tx, ctx, type, issueDate);
        const client = await clientOf(tx, ctx, clientId);
        const doc = await tx.invoice.create({
          ...query,
          data: {
            id: newId("invoice"),
            workspaceId: ctx.credential.workspaceId,
            documentType: type,
            number,
            clientId: client.id,
            issueDate,
            dueDate: args.due_date ?? null,
            taxRate,
            currency: chosenCurrency ?? client.currency,
            notes: optionalText(args.notes) ?? null,
            ...sums,
            items: { createMany: { data: lines } },
          },
        });
        await emit(tx, ctx, `${type}.created`, "Invoice", doc);
        return doc;
      });
    },
  }),
  updateInvoice: t.prismaField({
    type: "Invoice",
    description:
      "Edits a draft: updates the fields sent (null clears due_date or notes), items replaces every line; totals are recomputed. A document that is not a draft is invalid_state. Needs invoices.write.",
    extensions: rest("PATCH /invoices/:id", "Update a draft invoice or quote"),
    authScopes: { scope: "invoices.write" },
    args: {
      id: t.arg.id({ required: true, description: "The document's id (`inv_…`)." }),
      ...documentFields(false),
    },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const items = notNull("items", args.items);
      const lines = items && priceLines(items);
      const clientId = args.client_id === undefined ? undefined : requiredText("client_id", args.client_id);
      const taxRate = notNull("tax_rate", args.tax_rate);
      const issueDate = notNull("issue_date", args.issue_date);
      const data = defined({
        dueDate: args.due_date,
        currency: currency("currency", args.currency),
        notes: optionalText(args.notes),
        taxRate,
        issueDate,
      });
      return ctx.db.$transaction(async (tx) => {
        const current = await lockInvoice(tx, ctx, id);
        assertAllowed("edit", current);
        const year = current.issueDate.getUTCFullYear();
        if (issueDate && issueDate.getUTCFullYear() !== year) {
          throw validationFailed(
            "issue_date",
            `issue_date must stay in ${year}: the number ${current.number} belongs to that year.`,
          );
        }
        checkDueDate(
          issueDate ?? current.issueDate,
          args.due_date === undefined ? current.dueDate : args.due_date,
        );
        const rate = taxRate ?? current.taxRate;
        const sums = lines ? linesTotals(lines, rate) : totals(current.subtotal, rate);
        const client = clientId === undefined ? undefined : await clientOf(tx, ctx, clientId);
        return tx.invoice.update({
          ...query,
          where: { id },
          data: {
            ...data,
            ...sums,
            ...(client && { clientId: client.id }),
            ...(lines && { items: { deleteMany: {}, createMany: { data: lines } } }),
          },
        });
      });
    },
  }),
}));

interface Transition {
  name: string;
  route: `POST /invoices/:id/${string}`;
  summary: string;
  description: string;
  action: DocumentAction;
  change: (now: Date) => Prisma.InvoiceUpdateInput;
  event: (type: DocumentType) => EventType;
}

/** State changes that only stamp a status and a time, and announce it. */
const TRANSITIONS: Transition[] = [
  {
    name: "sendInvoice",
    route: "POST /invoices/:id/send",
    summary: "Mark an invoice or quote as sent",
    description:
      "A draft invoice or quote becomes sent (sent_at); emits invoice.sent or quote.sent. Other statuses: invalid_state. Needs invoices.write.",
    action: "send",
    change: (now) => ({ status: "sent", sentAt: now }),
    event: (type) => `${type}.sent`,
  },
  {
    name: "voidInvoice",
    route: "POST /invoices/:id/void",
    summary: "Void an invoice",
    description:
      "An invoice in draft, sent or partially_paid becomes void (voided_at); emits invoice.voided. Quotes and other statuses: invalid_state. Needs invoices.write.",
    action: "void",
    change: (now) => ({ status: "void", voidedAt: now }),
    event: () => "invoice.voided",
  },
  {
    name: "acceptQuote",
    route: "POST /invoices/:id/accept",
    summary: "Accept a quote",
    description:
      "A quote in draft or sent becomes accepted (accepted_at); emits quote.accepted. Invoices and other statuses: invalid_state. Needs invoices.write.",
    action: "accept",
    change: (now) => ({ status: "accepted", acceptedAt: now }),
    event: () => "quote.accepted",
  },
  {
    name: "declineQuote",
    route: "POST /invoices/:id/decline",
    summary: "Decline a quote",
    description:
      "A quote in draft or sent becomes declined (declined_at); emits quote.declined. Invoices and other statuses: invalid_state. Needs invoices.write.",
    action: "decline",
    change: (now) => ({ status: "declined", declinedAt: now }),
    event: () => "quote.declined",
  },
];

for (const transition of TRANSITIONS) {
  builder.mutationField(transition.name, (t) =>
    t.prismaField({
      type: "Invoice",
      description: transition.description,
      extensions: rest(transition.route, transition.summary),
      authScopes: { scope: "invoices.write" },
      args: { id: t.arg.id({ required: true, description: "The document's id (`inv_…`)." }) },
      resolve: (query, _root, { id }, ctx) =>
        ctx.db.$transaction(async (tx) => {
          const current = await lockInvoice(tx, ctx, id);
          assertAllowed(transition.action, current);
          const doc = await tx.invoice.update({
            ...query,
            where: { id },
            data: transition.change(new Date()),
          });
          await emit(tx, ctx, transition.event(doc.documentType), "Invoice", doc);
          return doc;
        }),
    }),
  );
}

builder.mutationField("convertQuote", (t) =>
  t.prismaField({
    type: "Invoice",
    description:
      "Turns an accepted quote into a new draft invoice (same client, lines, tax rate, currency and notes; issued today) and marks the quote converted; returns the new invoice and emits invoice.created. Anything but an accepted quote is invalid_state. Needs invoices.write.",
    extensions: rest("POST /invoices/:id/convert", "Convert an accepted quote into an invoice", 201),
    authScopes: { scope: "invoices.write" },
    args: { id: t.arg.id({ required: true, description: "The quote's id (`inv_…`)." }) },
    resolve: (query, _root, { id }, ctx) =>
      ctx.db.$transaction(async (tx) => {
        const quote = await lockInvoice(tx, ctx, id);
        assertAllowed("convert", quote);
        const items = await tx.invoiceItem.findMany({
          where: { invoiceId: id },
          orderBy: { position: "asc" },
        });
        const issueDate = todayUtc();
        const invoice = await tx.invoice.create({
          ...query,
          data: {
            id: newId("invoice"),
            workspaceId: ctx.credential.workspaceId,
            documentType: "invoice",
            number: await nextNumber(tx, ctx, "invoice", issueDate),
            clientId: quote.clientId,
            issueDate,
            taxRate: quote.taxRate,
            currency: quote.currency,
            notes: quote.notes,
            subtotal: quote.subtotal,
            taxAmount: quote.taxAmount,
            total: quote.total,
            quoteId: quote.id,
            items: { createMany: { data: items.map(({ invoiceId: _, ...item }) => item) } },
          },
        });
        await tx.invoice.update({ where: { id }, data: { status: "converted" } });
        await emit(tx, ctx, "invoice.created", "Invoice", invoice);
        return invoice;
      }),
  }),
);
