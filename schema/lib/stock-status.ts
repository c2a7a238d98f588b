import type { StockStatus } from "../generated/prisma/enums.ts";
import { Decimal, type DecimalValue } from "./money.ts";

export type StockAlert = "inventory.low_stock" | "inventory.out_of_stock";

/** docs/api/README.md: nothing left is out of stock; at or under the threshold is low. */
export function stockStatus(quantity: DecimalValue, minStockThreshold: DecimalValue): StockStatus {
  const left = new Decimal(quantity);
  if (left.lte(0)) return "out_of_stock";
  if (left.lte(minStockThreshold)) return "low_stock";
  return "in_stock";
}

/** The event for a move into a warning status (`before` is undefined on creation); none otherwise. */
export function stockAlert(before: StockStatus | undefined, after: StockStatus): StockAlert | undefined {
  if (after === before || after === "in_stock") return undefined;
  return after === "low_stock" ? "inventory.low_stock" : "inventory.out_of_stock";
}
