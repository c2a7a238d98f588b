import { builder } from "../builder.ts";
import type { InvoiceStatus, LeadStage, StockStatus } from "../generated/prisma/enums.ts";
import { todayUtc } from "../lib/invoicing.ts";
import { Decimal } from "../lib/money.ts";
import { rest } from "../lib/rest.ts";
import { StockStatusEnum } from "./inventory.ts";
import { InvoiceStatusEnum } from "./invoice.ts";
import { LeadStageEnum, objectKind } from "./shared.ts";

/**
 * `GET /summary` (`summary` in GraphQL): how the business is doing, computed by the database in
 * one request — what is owed and overdue, what came in this month, the pipeline, stock and open
 * work. Amounts are exact (the same decimals as the objects they sum) and never mixed across
 * currencies: each is a list with one entry per currency.
 */

interface CurrencyTotal {
  currency: string;
  amount: Decimal;
  count: number;
}

interface StatusCount<S> {
  status: S;
  count: number;
}

interface StageSummary {
  stage: LeadStage;
  count: number;
  value: CurrencyTotal[];
}

interface SummaryShape {
  asOf: Date;
  today: Date;
  monthStart: Date;
  invoicesByStatus: StatusCount<InvoiceStatus>[];
  quotesByStatus: StatusCount<InvoiceStatus>[];
  outstanding: CurrencyTotal[];
  overdue: CurrencyTotal[];
  paidThisMonth: CurrencyTotal[];
  leadsByStage: StageSummary[];
  pipeline: CurrencyTotal[];
  stock: StatusCount<StockStatus>[];
  tasksOpen: number;
  tasksOverdue: number;
}

const INVOICE_STATUSES: InvoiceStatus[] = ["draft", "sent", "partially_paid", "paid", "void"];
const QUOTE_STATUSES: InvoiceStatus[] = ["draft", "sent", "accepted", "declined", "converted"];
const LEAD_STAGES: LeadStage[] = ["new", "contacted", "qualified", "proposal", "won", "lost"];
/** The stages of a lead still in play: the pipeline's value is theirs. */
const OPEN_STAGES: LeadStage[] = ["new", "contacted", "qualified", "proposal"];
const STOCK_STATUSES: StockStatus[] = ["in_stock", "low_stock", "out_of_stock"];

const ZERO = new Decimal(0);
const byCurrency = (a: CurrencyTotal, b: CurrencyTotal) => a.currency.localeCompare(b.currency);

const CurrencyTotalRef = builder.objectRef<CurrencyTotal>("CurrencyTotal").implement({
  description: "A sum of money in one currency, and how many objects it sums.",
  fields: (t) => ({
    currency: t.exposeString("currency", { description: "ISO 4217 code, e.g. EUR." }),
    amount: t.expose("amount", { type: "Money", description: "The exact sum." }),
    count: t.exposeInt("count", { description: "The objects summed." }),
  }),
});

const InvoiceStatusCount = builder.objectRef<StatusCount<InvoiceStatus>>("InvoiceStatusCount").implement({
  description: "How many invoices or quotes are in one status.",
  fields: (t) => ({
    status: t.field({ type: InvoiceStatusEnum, description: "The status.", resolve: (row) => row.status }),
    count: t.exposeInt("count", { description: "Documents in this status." }),
  }),
});

const StockStatusCount = builder.objectRef<StatusCount<StockStatus>>("StockStatusCount").implement({
  description: "How many inventory items are in one stock status.",
  fields: (t) => ({
    status: t.field({
      type: StockStatusEnum,
      description: "The stock status.",
      resolve: (row) => row.status,
    }),
    count: t.exposeInt("count", { description: "Items in this status." }),
  }),
});

const LeadStageSummaryRef = builder.objectRef<StageSummary>("LeadStageSummary").implement({
  description: "The leads in one stage.",
  fields: (t) => ({
    stage: t.field({ type: LeadStageEnum, description: "The stage.", resolve: (row) => row.stage }),
    count: t.exposeInt("count", { description: "Leads in this stage." }),
    value: t.field({
      type: [CurrencyTotalRef],
      description: "Their estimated_value, summed per currency (count: the leads that have one).",
      resolve: (row) => row.value,
    }),
  }),
});

const BusinessSummary = builder.objectRef<SummaryShape>("BusinessSummary").implement({
  description:
    "How the business is doing now: money owed, overdue and received, the sales pipeline, stock and open tasks. Every amount is exact and per currency.",
  fields: (t) => ({
    object: objectKind(t, "summary"),
    as_of: t.expose("asOf", { type: "DateTime", description: "When these figures were computed." }),
    today: t.expose("today", {
      type: "Date",
      description: "The UTC day the overdue figures are relative to.",
    }),
    month_start: t.expose("monthStart", {
      type: "Date",
      description: "The first day (UTC) of the month paid_this_month counts from.",
    }),
    invoices_by_status: t.field({
      type: [InvoiceStatusCount],
      description: "Invoices (not quotes) per status, every invoice status listed.",
      resolve: (s) => s.invoicesByStatus,
    }),
    quotes_by_status: t.field({
      type: [InvoiceStatusCount],
      description: "Quotes per status, every quote status listed.",
      resolve: (s) => s.quotesByStatus,
    }),
    outstanding: t.field({
      type: [CurrencyTotalRef],
      description: "What clients owe: the balance_due of invoices sent or partially_paid, per currency.",
      resolve: (s) => s.outstanding,
    }),
    overdue: t.field({
      type: [CurrencyTotalRef],
      description:
        "The balance_due of the invoices whose `overdue` is true (due date passed, balance due, not void), per currency.",
      resolve: (s) => s.overdue,
    }),
    paid_this_month: t.field({
      type: [CurrencyTotalRef],
      description: "Payments recorded with paid_at in this UTC month, per currency.",
      resolve: (s) => s.paidThisMonth,
    }),
    leads_by_stage: t.field({
      type: [LeadStageSummaryRef],
      description: "Leads per stage, every stage listed in pipeline order.",
      resolve: (s) => s.leadsByStage,
    }),
    pipeline: t.field({
      type: [CurrencyTotalRef],
      description:
        "The estimated_value of the leads still in play (new, contacted, qualified, proposal), per currency.",
      resolve: (s) => s.pipeline,
    }),
    stock: t.field({
      type: [StockStatusCount],
      description: "Inventory items per stock status, every status listed.",
      resolve: (s) => s.stock,
    }),
    open_tasks: t.exposeInt("tasksOpen", { description: "Tasks not done (todo or in_progress)." }),
    overdue_tasks: t.exposeInt("tasksOverdue", {
      description: "Of the open tasks, those whose due_date is before today (UTC).",
    }),
  }),
});

/** Each status of `all` with its count in `rows` (0 when absent), in `all`'s order. */
function countsOf<S extends string>(all: S[], rows: { status: S; _count: { _all: number } }[]) {
  return all.map((status) => ({
    status,
    count: rows.find((row) => row.status === status)?._count._all ?? 0,
  }));
}

builder.queryField("summary", (t) =>
  t.field({
    type: BusinessSummary,
    description:
      "How the business is doing: amounts owed and overdue, payments this month, leads per stage and the pipeline's value, stock and open tasks. Needs invoices.read and leads.read and inventory.read and projects.read.",
    extensions: rest("GET /summary", "Retrieve the business summary"),
    authScopes: { scope: ["invoices.read", "leads.read", "inventory.read", "projects.read"] },
    resolve: async (_root, _args, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      const asOf = new Date();
      const today = todayUtc(asOf);
      const monthStart = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1));
      const db = ctx.db;
      const invoice = { workspaceId, documentType: "invoice" as const };
      const [documents, outstanding, overdue, paid, leads, stock, tasksOpen, tasksOverdue] =
        await Promise.all([
          db.invoice.groupBy({
            by: ["documentType", "status"],
            where: { workspaceId },
            _count: { _all: true },
          }),
          db.invoice.groupBy({
            by: ["currency"],
            where: { ...invoice, status: { in: ["sent", "partially_paid"] } },
            _sum: { total: true, amountPaid: true },
            _count: { _all: true },
          }),
          db.invoice.groupBy({
            by: ["currency"],
            where: {
              ...invoice,
              status: { not: "void" },
              dueDate: { lt: today },
              total: { gt: db.invoice.fields.amountPaid },
            },
            _sum: { total: true, amountPaid: true },
            _count: { _all: true },
          }),
          db.payment.groupBy({
            by: ["currency"],
            where: { workspaceId, paidAt: { gte: monthStart } },
            _sum: { amount: true },
            _count: { _all: true },
          }),
          db.lead.groupBy({
            by: ["stage", "currency"],
            where: { workspaceId },
            _sum: { estimatedValue: true },
            _count: { _all: true, estimatedValue: true },
          }),
          db.inventoryItem.groupBy({ by: ["status"], where: { workspaceId }, _count: { _all: true } }),
          db.task.count({ where: { workspaceId, status: { not: "done" } } }),
          db.task.count({ where: { workspaceId, status: { not: "done" }, dueDate: { lt: today } } }),
        ]);
      const balances = (rows: typeof outstanding): CurrencyTotal[] =>
        rows
          .map((row) => ({
            currency: row.currency,
            amount: (row._sum.total ?? ZERO).minus(row._sum.amountPaid ?? ZERO),
            count: row._count._all,
          }))
          .sort(byCurrency);
      const values = (stages: LeadStage[]): CurrencyTotal[] => {
        const totals = new Map<string, CurrencyTotal>();
        for (const row of leads) {
          if (!stages.includes(row.stage) || row._count.estimatedValue === 0) continue;
          const total = totals.get(row.currency) ?? { currency: row.currency, amount: ZERO, count: 0 };
          totals.set(row.currency, {
            currency: row.currency,
            amount: total.amount.plus(row._sum.estimatedValue ?? ZERO),
            count: total.count + row._count.estimatedValue,
          });
        }
        return [...totals.values()].sort(byCurrency);
      };
      const ofType = (type: "invoice" | "quote") =>
        documents
          .filter((row) => row.documentType === type)
          .map((row) => ({ status: row.status, _count: row._count }));
      return {
        asOf,
        today,
        monthStart,
        invoicesByStatus: countsOf(INVOICE_STATUSES, ofType("invoice")),
        quotesByStatus: countsOf(QUOTE_STATUSES, ofType("quote")),
        outstanding: balances(outstanding),
        overdue: balances(overdue),
        paidThisMonth: paid
          .map((row) => ({ currency: row.currency, amount: row._sum.amount ?? ZERO, count: row._count._all }))
          .sort(byCurrency),
        leadsByStage: LEAD_STAGES.map((stage) => ({
          stage,
          count: leads.filter((row) => row.stage === stage).reduce((sum, row) => sum + row._count._all, 0),
          value: values([stage]),
        })),
        pipeline: values(OPEN_STAGES),
        stock: countsOf(STOCK_STATUSES, stock),
        tasksOpen,
        tasksOverdue,
      };
    },
  }),
);
