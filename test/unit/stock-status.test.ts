import { describe, expect, it } from "vitest";
import { Decimal } from "../../schema/lib/money.ts";
import { stockAlert, stockStatus } from "../../schema/lib/stock-status.ts";

describe("stockStatus", () => {
  it.each([
    ["0", "0", "out_of_stock"],
    ["0", "5", "out_of_stock"],
    ["0.000", "0", "out_of_stock"],
    ["0.001", "0", "in_stock"],
    ["0.001", "0.001", "low_stock"],
    ["5", "5", "low_stock"],
    ["5.000", "5", "low_stock"],
    ["4.999", "5", "low_stock"],
    ["5.001", "5", "in_stock"],
    ["2.5", "2.499", "in_stock"],
    ["99999999999.999", "99999999999.998", "in_stock"],
    ["99999999999.998", "99999999999.999", "low_stock"],
  ])("quantity %s with threshold %s is %s", (quantity, threshold, status) => {
    expect(stockStatus(quantity, threshold)).toBe(status);
  });

  it("compares exactly where binary floating point would not", () => {
    // 0.1 + 0.2 is 0.30000000000000004 as a double: in_stock against 0.3 if computed in floats.
    expect(stockStatus(new Decimal("0.1").plus("0.2"), "0.3")).toBe("low_stock");
  });

  it("reads a negative quantity (never stored, but computed) as out of stock", () => {
    expect(stockStatus("-1", "0")).toBe("out_of_stock");
  });
});

describe("stockAlert", () => {
  it("alerts on creation in a warning status, not in stock", () => {
    expect(stockAlert(undefined, "low_stock")).toBe("inventory.low_stock");
    expect(stockAlert(undefined, "out_of_stock")).toBe("inventory.out_of_stock");
    expect(stockAlert(undefined, "in_stock")).toBeUndefined();
  });

  it("alerts on every move into low_stock or out_of_stock", () => {
    expect(stockAlert("in_stock", "low_stock")).toBe("inventory.low_stock");
    expect(stockAlert("in_stock", "out_of_stock")).toBe("inventory.out_of_stock");
    expect(stockAlert("low_stock", "out_of_stock")).toBe("inventory.out_of_stock");
    expect(stockAlert("out_of_stock", "low_stock")).toBe("inventory.low_stock");
  });

  it("stays silent when the status does not change or recovers", () => {
    for (const status of ["in_stock", "low_stock", "out_of_stock"] as const)
      expect(stockAlert(status, status)).toBeUndefined();
    expect(stockAlert("low_stock", "in_stock")).toBeUndefined();
    expect(stockAlert("out_of_stock", "in_stock")).toBeUndefined();
  });
});
