import { describe, expect, it } from "vitest";
import { allowed } from "../../dashboard/src/screens/invoices/rules.ts";
import { divideHalfUp, previewTotals, toUnits } from "../../dashboard/src/screens/invoices/totals.ts";
import { centsText } from "../../dashboard/src/ui/money.ts";
import type { DocumentType, InvoiceStatus } from "../../schema/generated/prisma/enums.ts";
import { assertAllowed, type DocumentAction, linesTotals, priceLines } from "../../schema/lib/invoicing.ts";

/**
 * The invoice form's preview (dashboard/src/screens/invoices/totals.ts, BigInt) against the server's
 * own computation (schema/lib/invoicing.ts, decimals): the same cents for the cases floating point
 * gets wrong and for thousands of random documents; and the detail screen's actions against the
 * server's rules for every type and status.
 */

/** The server's totals for lines and a rate, as the decimals the API then returns. */
function serverTotals(lines: { quantity: string; unit_price: string }[], taxRate: string) {
  const priced = priceLines(lines.map((line) => ({ description: "Work", ...line })));
  const sums = linesTotals(priced, taxRate);
  return {
    lines: priced.map((line) => line.amount.toFixed(2)),
    subtotal: sums.subtotal.toFixed(2),
    tax: sums.taxAmount.toFixed(2),
    total: sums.total.toFixed(2),
  };
}

function previewed(lines: { quantity: string; unit_price: string }[], taxRate: string) {
  const preview = previewTotals(lines, taxRate);
  const text = (cents: bigint | null) => (cents === null ? null : centsText(cents));
  return {
    lines: preview.lines.map(text),
    subtotal: text(preview.subtotal),
    tax: text(preview.tax),
    total: text(preview.total),
  };
}

/** A random decimal with up to `places` decimals and `digits` integer digits, as typed. */
function randomDecimal(random: () => number, digits: number, places: number): string {
  const whole = String(Math.floor(random() * 10 ** Math.ceil(random() * digits)));
  const decimals = Math.floor(random() * (places + 1));
  const fraction = Array.from({ length: decimals }, () => Math.floor(random() * 10)).join("");
  return fraction ? `${whole}.${fraction}` : whole;
}

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function seeded(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("the invoice form's exact totals", () => {
  it("reads decimals as integers of their places, refusing more places or anything else", () => {
    expect(toUnits("19.99", 2)).toBe(1999n);
    expect(toUnits("3", 3)).toBe(3000n);
    expect(toUnits("0.005", 3)).toBe(5n);
    expect(toUnits(" 7.25 ", 3)).toBe(7250n);
    expect(toUnits("1.", 2)).toBe(100n);
    for (const bad of ["1.005", "-1", "1e3", "", "abc", "1,5"]) expect(toUnits(bad, 2)).toBeNull();
    expect(divideHalfUp(5n, 10n)).toBe(1n);
    expect(divideHalfUp(4n, 10n)).toBe(0n);
    expect(centsText(5n)).toBe("0.05");
    expect(centsText(6432n)).toBe("64.32");
  });

  it.each([
    ["3 × 19.99 at 7.25 %", [{ quantity: "3", unit_price: "19.99" }], "7.25"],
    ["1.005 × 1.00, half a cent floating point rounds down", [{ quantity: "1.005", unit_price: "1" }], "0"],
    ["0.005 × 1.00", [{ quantity: "0.005", unit_price: "1" }], "0"],
    ["10.05 at 10 %: a tax of 1.005", [{ quantity: "1", unit_price: "10.05" }], "10"],
    ["1.15 at 50 %", [{ quantity: "1", unit_price: "1.15" }], "50"],
    ["the largest storable total", [{ quantity: "99999999999.999", unit_price: "9.99" }], "0"],
  ])("%s: the server's cents", (_label, lines, rate) => {
    expect(previewed(lines, rate)).toEqual(serverTotals(lines, rate));
  });

  it("equals the server's computation for 5,000 random documents", () => {
    const random = seeded(20_260_501);
    for (let n = 0; n < 5_000; n++) {
      const lines = Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({
        quantity: randomDecimal(random, 4, 3),
        unit_price: randomDecimal(random, 5, 2),
      })).filter((line) => Number(line.quantity) > 0);
      if (lines.length === 0) continue;
      const rate = String(Math.min(100, Number(randomDecimal(random, 2, 3))));
      expect(previewed(lines, rate), JSON.stringify({ lines, rate })).toEqual(serverTotals(lines, rate));
    }
  });

  it("shows nothing for a line or rate that is not a valid number yet", () => {
    const preview = previewTotals(
      [
        { quantity: "2", unit_price: "" },
        { quantity: "1", unit_price: "5" },
      ],
      "7.25",
    );
    expect(preview).toEqual({ lines: [null, 500n], subtotal: null, tax: null, total: null });
    expect(previewTotals([{ quantity: "1", unit_price: "5" }], "").total).toBe(500n);
    expect(previewTotals([{ quantity: "1", unit_price: "5" }], "7.2500").total).toBeNull();
  });
});

describe("the invoice detail's actions", () => {
  const TYPES: DocumentType[] = ["invoice", "quote"];
  const STATUSES: InvoiceStatus[] = [
    "draft",
    "sent",
    "partially_paid",
    "paid",
    "void",
    "accepted",
    "declined",
    "converted",
  ];
  const ACTIONS: Record<DocumentAction, keyof ReturnType<typeof allowed>> = {
    edit: "edit",
    send: "send",
    void: "void",
    accept: "accept",
    decline: "decline",
    convert: "convert",
    pay: "pay",
  };

  it("offers exactly what the server allows, for every type and status", () => {
    for (const type of TYPES)
      for (const status of STATUSES) {
        const shown = allowed({ document_type: type, status });
        for (const [action, key] of Object.entries(ACTIONS) as [DocumentAction, keyof typeof shown][]) {
          let serverAllows = true;
          try {
            assertAllowed(action, { documentType: type, status, number: "X" });
          } catch {
            serverAllows = false;
          }
          expect(shown[key], `${action} on a ${status} ${type}`).toBe(serverAllows);
        }
      }
  });
});
