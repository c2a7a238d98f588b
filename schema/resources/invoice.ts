import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type EventType, type Tx } from "../events.ts";
import { DocumentType, InvoiceStatus } from "../generated/prisma/enums.ts";
import type { Prisma } from "../generated/prisma/client.ts";
import { listPage } from "../lib/cursor.ts";
import { notFound, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import {
  assertAllowed,
  balanceDue,
  documentNumber,
  isOverdue,
  linesTotals,
  priceLines,
  todayUtc,
  totals,
  type DocumentAction,
} from "../lib/invoicing.ts";
import { defined, found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, notNull, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { listType, pageArgs } from "./shared.ts";

export const DocumentTypeEnum = builder.enumType(DocumentType, { name: "DocumentType" });
export const InvoiceStatusEnum = builder.enumType(InvoiceStatus, {
  name: "InvoiceStatus",
  description: "Invoices: draft, sent, partially_paid, paid, void. Quotes: draft, sent, accepted, declined, converted.",
});

const InvoiceItem = builder.prismaObject("InvoiceItem", {
  description: "A line of an invoice or quote.",
  fields: (t) => ({
    description: t.exposeString("description"),
    quantity: t.expose("quantity", { type: "Quantity" }),
    unit_price: t.expose("unitPrice", { type: "Money" }),
    amount: t.expose("amount", { type: "Money", description: "quantity × unit_price, rounded half-up to the cent." }),
  }),
});

export const Invoice = builder.prismaObject("Invoice", {
  description: "An invoice or a quote (document_type); both are `object: \"invoice\"`.",
  // Whoever may record a payment sees the invoice it pays.
  authScopes: { readable: "invoices", scope: "payments.write" },
  fields: (t) => ({
    object: t.string({ resolve: () => "invoice" }),
    id: t.exposeID("id"),
    document_type: t.expose("documentType", { type: DocumentTypeEnum }),
    invoice_number: t.exposeString("number", { description: "INV-<year>-<seq> or QUO-<year>-<seq>; the year is that of issue_date." }),
    status: t.expose("status", { type: InvoiceStatusEnum }),
    client_id: t.exposeString("clientId"),
    issue_date: t.expose("issueDate", { type: "Date" }),
    due_date: t.expose("dueDate", { type: "Date", nullable: true }),
    tax_rate: t.expose("taxRate", { type: "Percent" }),
    currency: t.exposeString("currency"),
    notes: t.exposeString("notes", { nullable: true }),
    items: t.relation("items", { type: InvoiceItem, query: { orderBy: { position: "asc" } } }),
    subtotal: t.expose("subtotal", { type: "Money" }),
    tax_amount: t.expose("taxAmount", { type: "Money", description: "subtotal × tax_rate / 100, rounded half-up to the cent." }),
    total: t.expose("total", { type: "Money" }),
    amount_paid: t.expose("amountPaid", { type: "Money" }),
    balance_due: t.field({ type: "Money", resolve: balanceDue }),
    overdue: t.boolean({
      description: "An invoice whose due date has passed (UTC) with a balance due and not void; never a quote.",
      resolve: (doc) => isOverdue(doc),
    }),
    payments: t.relation("payments", {
      description: "The payments recorded on this invoice, oldest first.",
      query: { orderBy: { id: "asc" } },
    }),
    quote_id: t.exposeString("quoteId", { nullable: true, description: "On an invoice converted from a quote: that quote." }),
    converted_invoice_id: t.string({
      nullable: true,
      description: "On a converted quote: the invoice made from it.",
      select: { invoice: { select: { id: true } } },
      resolve: (doc) => doc.invoice?.id ?? null,
    }),
    sent_at: t.expose("sentAt", { type: "DateTime", nullable: true }),
    paid_at: t.expose("paidAt", { type: "DateTime", nullable: true, description: "When the invoice was paid in full." }),
    voided_at: t.expose("voidedAt", { type: "DateTime", nullable: true }),
    accepted_at: t.expose("acceptedAt", { type: "DateTime", nullable: true }),
    declined_at: t.expose("declinedAt", { type: "DateTime", nullable: true }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
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
  fields: (t) => ({
    description: t.string({ required: true }),
    quantity: t.field({ type: "Quantity", required: true, description: "Greater than 0." }),
    unit_price: t.field({ type: "Money", required: true }),
  }),
});

const documentFields = (create: boolean) =>
  builder.args((t) => ({
    client_id: t.string({ required: create, description: "A client of this workspace." }),
    issue_date: t.field({ type: "Date", description: create ? "Default today (UTC); its year numbers the document." : undefined }),
    due_date: t.field({ type: "Date", description: "On or after issue_date." }),
    tax_rate: t.field({ type: "Percent", description: create ? "Percentage of the subtotal, default 0." : undefined }),
    currency: t.string({ description: create ? "ISO 4217, default the client's currency." : undefined }),
    notes: t.string(),
    items: t.field({
      type: [InvoiceItemInput],
      required: create,
      description: create ? "At least one line." : "Replaces every line.",
    }),
  }));

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

/**
 * Locks the document's row until the transaction ends, then reads it: writers of one document
 * (payments, edits, state changes) queue here instead of acting on a stale balance or status.
 */
export async function lockInvoice(tx: Tx, ctx: Context, id: string) {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    select id from invoices where id = ${id} and workspace_id = ${ctx.credential.workspaceId} for update`;
  if (rows.length === 0) throw notFound("invoice", id);
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
  const client = await tx.client.findFirst({ where: where(ctx, clientId), select: { id: true, currency: true } });
  if (!client) throw validationFailed("client_id", `client_id '${clientId}' is not a client of this workspace.`);
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
    description: "Invoices and quotes, newest first.",
    extensions: rest("GET /invoices", "List invoices and quotes"),
    authScopes: { scope: "invoices.read" },
    args: {
      status: t.arg({ type: InvoiceStatusEnum }),
      document_type: t.arg({ type: DocumentTypeEnum }),
      client_id: t.arg.string(),
      ...pageArgs,
    },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
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
    extensions: rest("GET /invoices/:id", "Retrieve an invoice or quote with its items and payments"),
    authScopes: { scope: "invoices.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("invoice", args.id, await ctx.db.invoice.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createInvoice: t.prismaField({
    type: "Invoice",
    description: "Creates a draft invoice, or a quote with document_type quote, and gives it the next number.",
    extensions: rest("POST /invoices", "Create an invoice or quote", 201),
    authScopes: { scope: "invoices.write" },
    args: { document_type: t.arg({ type: DocumentTypeEnum, description: "Default invoice." }), ...documentFields(true) },
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
            items: { create: lines },
          },
        });
        await emit(tx, ctx, `${type}.created`, "Invoice", doc);
        return doc;
      });
    },
  }),
  updateInvoice: t.prismaField({
    type: "Invoice",
    description: "Edits a draft: updates the fields sent (null clears due_date or notes), items replaces every line; totals are recomputed.",
    extensions: rest("PATCH /invoices/:id", "Update a draft invoice or quote"),
    authScopes: { scope: "invoices.write" },
    args: { id: t.arg.id({ required: true }), ...documentFields(false) },
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
          throw validationFailed("issue_date", `issue_date must stay in ${year}: the number ${current.number} belongs to that year.`);
        }
        checkDueDate(issueDate ?? current.issueDate, args.due_date === undefined ? current.dueDate : args.due_date);
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
            ...(lines && { items: { deleteMany: {}, create: lines } }),
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
    description: "A draft invoice or quote becomes sent (sent_at).",
    action: "send",
    change: (now) => ({ status: "sent", sentAt: now }),
    event: (type) => `${type}.sent`,
  },
  {
    name: "voidInvoice",
    route: "POST /invoices/:id/void",
    summary: "Void an invoice",
    description: "An invoice in draft, sent or partially_paid becomes void (voided_at).",
    action: "void",
    change: (now) => ({ status: "void", voidedAt: now }),
    event: () => "invoice.voided",
  },
  {
    name: "acceptQuote",
    route: "POST /invoices/:id/accept",
    summary: "Accept a quote",
    description: "A quote in draft or sent becomes accepted (accepted_at).",
    action: "accept",
    change: (now) => ({ status: "accepted", acceptedAt: now }),
    event: () => "quote.accepted",
  },
  {
    name: "declineQuote",
    route: "POST /invoices/:id/decline",
    summary: "Decline a quote",
    description: "A quote in draft or sent becomes declined (declined_at).",
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
      args: { id: t.arg.id({ required: true }) },
      resolve: (query, _root, { id }, ctx) =>
        ctx.db.$transaction(async (tx) => {
          const current = await lockInvoice(tx, ctx, id);
          assertAllowed(transition.action, current);
          const doc = await tx.invoice.update({ ...query, where: { id }, data: transition.change(new Date()) });
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
      "Turns an accepted quote into a new draft invoice (same client, lines, tax rate, currency and notes; issued today) and marks the quote converted.",
    extensions: rest("POST /invoices/:id/convert", "Convert an accepted quote into an invoice", 201),
    authScopes: { scope: "invoices.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: (query, _root, { id }, ctx) =>
      ctx.db.$transaction(async (tx) => {
        const quote = await lockInvoice(tx, ctx, id);
        assertAllowed("convert", quote);
        const items = await tx.invoiceItem.findMany({ where: { invoiceId: id }, orderBy: { position: "asc" } });
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
            items: { create: items.map(({ invoiceId: _, ...item }) => item) },
          },
        });
        await tx.invoice.update({ where: { id }, data: { status: "converted" } });
        await emit(tx, ctx, "invoice.created", "Invoice", invoice);
        return invoice;
      }),
  }),
);
