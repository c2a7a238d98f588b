import { describe, expect, it } from "vitest";
import { ApiError } from "../../schema/lib/errors.ts";
import {
  applyPayment,
  assertAllowed,
  balanceDue,
  type DocumentAction,
  documentNumber,
  isOverdue,
  linesTotals,
  priceLines,
  todayUtc,
  totals,
} from "../../schema/lib/invoicing.ts";

function thrown(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error("expected an ApiError");
}

const line = (quantity: string, unit_price: string, description = "Work") => ({
  description,
  quantity,
  unit_price,
});

describe("priceLines", () => {
  it("prices each line exactly, half-up to the cent, and trims descriptions", () => {
    const lines = priceLines([
      line("3", "0.1", "  Trap  "),
      line("0.5", "0.05"),
      line("1.005", "1"),
      line("0.001", "0.01"),
    ]);
    expect(lines.map((l) => l.amount.toFixed(2))).toEqual(["0.30", "0.03", "1.01", "0.00"]);
    expect(lines.map((l) => l.position)).toEqual([0, 1, 2, 3]);
    expect(lines[0]!.description).toBe("Trap");
  });

  it.each([
    ["no lines", [], "items"],
    ["a zero quantity", [line("1", "1"), line("0", "1")], "items[1].quantity"],
    ["an empty description", [line("1", "1", "   ")], "items[0].description"],
  ])("rejects %s", (_label, items, param) => {
    const error = thrown(() => priceLines(items));
    expect(error).toMatchObject({ status: 400, code: "validation_failed", param });
  });

  it("allows a free line (unit_price 0)", () => {
    expect(priceLines([line("2", "0")])[0]!.amount.toString()).toBe("0");
  });
});

describe("totals", () => {
  it.each([
    // subtotal, rate, tax, total
    ["1200", "7.5", "90.00", "1290.00"],
    ["0.30", "5", "0.02", "0.32"], // 0.015 exactly: half-up
    ["1874.88", "8.875", "166.40", "2041.28"],
    ["100", "0", "0.00", "100.00"],
    ["100", "100", "100.00", "200.00"],
    ["0.01", "49.999", "0.00", "0.01"],
    ["0.01", "50", "0.01", "0.02"],
  ])("subtotal %s at %s %% → tax %s, total %s", (subtotal, rate, tax, total) => {
    const result = totals(subtotal, rate);
    expect(result.taxAmount.toFixed(2)).toBe(tax);
    expect(result.total.toFixed(2)).toBe(total);
  });

  it("sums the lines", () => {
    const result = linesTotals(priceLines([line("10", "100"), line("2", "100")]), "7.5");
    expect([result.subtotal, result.taxAmount, result.total].map((d) => d.toFixed(2))).toEqual([
      "1200.00",
      "90.00",
      "1290.00",
    ]);
  });

  it("refuses a total a numeric(14,2) column cannot hold", () => {
    expect(totals("999999999999.99", "0").total.toFixed(2)).toBe("999999999999.99");
    expect(thrown(() => totals("999999999999.99", "0.001"))).toMatchObject({
      code: "validation_failed",
      param: "items",
    });
  });
});

describe("documentNumber", () => {
  it("pads the sequence to 4 digits and prefixes by type", () => {
    expect(documentNumber("invoice", 2026, 1)).toBe("INV-2026-0001");
    expect(documentNumber("quote", 2027, 42)).toBe("QUO-2027-0042");
    expect(documentNumber("invoice", 2026, 12345)).toBe("INV-2026-12345");
  });
});

describe("isOverdue", () => {
  const today = todayUtc(new Date("2026-06-15T23:59:00Z"));
  const doc = {
    documentType: "invoice" as const,
    status: "sent" as const,
    dueDate: new Date("2026-06-14T00:00:00Z"),
    total: "100",
    amountPaid: "0",
  };

  it("is today at midnight UTC", () => {
    expect(today.toISOString()).toBe("2026-06-15T00:00:00.000Z");
  });

  it.each([
    ["past due with a balance", {}, true],
    ["due today", { dueDate: new Date("2026-06-15T00:00:00Z") }, false],
    ["no due date", { dueDate: null }, false],
    ["paid in full", { amountPaid: "100", status: "paid" as const }, false],
    ["partially paid", { amountPaid: "99.99", status: "partially_paid" as const }, true],
    ["a draft", { status: "draft" as const }, true],
    ["void", { status: "void" as const }, false],
    ["a quote", { documentType: "quote" as const }, false],
  ])("%s → %s", (_label, change, expected) => {
    expect(isOverdue({ ...doc, ...change }, today)).toBe(expected);
  });
});

describe("assertAllowed", () => {
  const invoiceIn = (status: string) => ({
    documentType: "invoice" as const,
    status: status as never,
    number: "INV-2026-0001",
  });
  const quoteIn = (status: string) => ({
    documentType: "quote" as const,
    status: status as never,
    number: "QUO-2026-0001",
  });

  const allowed: Record<DocumentAction, { invoice: string[]; quote: string[] }> = {
    edit: { invoice: ["draft"], quote: ["draft"] },
    send: { invoice: ["draft"], quote: ["draft"] },
    void: { invoice: ["draft", "sent", "partially_paid"], quote: [] },
    accept: { invoice: [], quote: ["draft", "sent"] },
    decline: { invoice: [], quote: ["draft", "sent"] },
    convert: { invoice: [], quote: ["accepted"] },
    pay: { invoice: ["draft", "sent", "partially_paid"], quote: [] },
  };
  const invoiceStatuses = ["draft", "sent", "partially_paid", "paid", "void"];
  const quoteStatuses = ["draft", "sent", "accepted", "declined", "converted"];

  for (const [action, rule] of Object.entries(allowed) as [
    DocumentAction,
    { invoice: string[]; quote: string[] },
  ][]) {
    it(`${action}: allowed exactly where the rules say`, () => {
      for (const status of invoiceStatuses) {
        const run = () => assertAllowed(action, invoiceIn(status));
        if (rule.invoice.includes(status)) expect(run, `invoice ${status}`).not.toThrow();
        else expect(thrown(run), `invoice ${status}`).toMatchObject({ status: 400, code: "invalid_state" });
      }
      for (const status of quoteStatuses) {
        const run = () => assertAllowed(action, quoteIn(status));
        if (rule.quote.includes(status)) expect(run, `quote ${status}`).not.toThrow();
        else expect(thrown(run), `quote ${status}`).toMatchObject({ status: 400, code: "invalid_state" });
      }
    });
  }

  it("says what is wrong", () => {
    expect(thrown(() => assertAllowed("pay", quoteIn("draft"))).message).toBe(
      "Only invoices can be paid; QUO-2026-0001 is a quote.",
    );
    expect(thrown(() => assertAllowed("void", invoiceIn("paid"))).message).toBe(
      "Invoice INV-2026-0001 is paid; it can be voided only while draft, sent or partially_paid.",
    );
    expect(thrown(() => assertAllowed("edit", quoteIn("sent"))).message).toBe(
      "Quote QUO-2026-0001 is sent; it can be edited only while draft.",
    );
  });
});

describe("applyPayment", () => {
  const invoice = { total: "100.00", amountPaid: "60.00", number: "INV-2026-0007" };

  it("moves to partially_paid, or paid when nothing is left", () => {
    expect(applyPayment(invoice, "10")).toMatchObject({ status: "partially_paid" });
    expect(applyPayment(invoice, "10").amountPaid.toFixed(2)).toBe("70.00");
    expect(applyPayment(invoice, "40")).toMatchObject({ status: "paid" });
    expect(applyPayment({ total: "0.30", amountPaid: "0.10", number: "X" }, "0.2").status).toBe("paid");
  });

  it("refuses more than the balance due", () => {
    const error = thrown(() => applyPayment(invoice, "40.01"));
    expect(error).toMatchObject({
      status: 400,
      type: "invalid_request_error",
      code: "amount_exceeds_balance",
      param: "amount",
    });
    expect(error.message).toBe("amount 40.01 exceeds the balance due of 40.00 on INV-2026-0007.");
  });

  it("balance_due = total − amount_paid", () => {
    expect(balanceDue(invoice).toFixed(2)).toBe("40.00");
  });
});
