import { changedFields } from "../../api/changes.ts";
import type { CreateInventoryItemMutationVariables } from "../../generated/graphql.ts";
import { moneyInputText, parseMoneyInput } from "../../ui/money.ts";
import type { Item } from "./inventory-cells.tsx";

/** An item's form as typed: every field a string, the suppliers a list of them. */
export interface ItemDraft {
  name: string;
  sku: string;
  description: string;
  category: string;
  quantity: string;
  unit_of_measure: string;
  min_stock_threshold: string;
  cost_price: string;
  sale_price: string;
  currency: string;
  suppliers: SupplierDraft[];
}

export interface SupplierDraft {
  /** Only for React's list keys: suppliers have no id of their own. */
  key: number;
  name: string;
  email: string;
  phone: string;
  supplier_sku: string;
  cost_price: string;
}

let nextKey = 0;

export const emptySupplier = (): SupplierDraft => ({
  key: ++nextKey,
  name: "",
  email: "",
  phone: "",
  supplier_sku: "",
  cost_price: "",
});

/** The form of a new item (the API's defaults shown), or of an existing one. */
export function itemDraft(item?: Item): ItemDraft {
  return {
    name: item?.name ?? "",
    sku: item?.sku ?? "",
    description: item?.description ?? "",
    category: item?.category ?? "",
    quantity: item ? String(item.quantity) : "0",
    unit_of_measure: item?.unit_of_measure ?? "pcs",
    min_stock_threshold: item ? String(item.min_stock_threshold) : "0",
    cost_price: moneyInputText(item?.cost_price),
    sale_price: moneyInputText(item?.sale_price),
    currency: item?.currency ?? "USD",
    suppliers: (item?.suppliers ?? []).map((supplier) => ({
      key: ++nextKey,
      name: supplier.name,
      email: supplier.email ?? "",
      phone: supplier.phone ?? "",
      supplier_sku: supplier.supplier_sku ?? "",
      cost_price: moneyInputText(supplier.cost_price),
    })),
  };
}

const text = (value: string) => value.trim() || null;

/** Every argument of createInventoryItem, from the form: an empty optional field is null. */
export function itemVariables(draft: ItemDraft): CreateInventoryItemMutationVariables {
  return {
    name: draft.name.trim(),
    sku: text(draft.sku),
    description: text(draft.description),
    category: text(draft.category),
    // Required by the form (cannot be null for the API).
    quantity: Number(draft.quantity),
    unit_of_measure: draft.unit_of_measure.trim(),
    min_stock_threshold: Number(draft.min_stock_threshold),
    cost_price: parseMoneyInput(draft.cost_price),
    sale_price: parseMoneyInput(draft.sale_price),
    currency: draft.currency.trim(),
    suppliers: draft.suppliers.map((supplier) => ({
      name: supplier.name.trim(),
      email: text(supplier.email),
      phone: text(supplier.phone),
      supplier_sku: text(supplier.supplier_sku),
      cost_price: parseMoneyInput(supplier.cost_price),
    })),
  };
}

/**
 * Only the arguments the form changed, for updateInventoryItem: a quantity someone else changed
 * meanwhile is not written back by an edit of the name.
 */
export function changedVariables(
  item: Item,
  draft: ItemDraft,
): Partial<CreateInventoryItemMutationVariables> {
  return changedFields(itemVariables(itemDraft(item)), itemVariables(draft));
}

/** The params of every field the form shows, for the banner to stay silent about them. */
export function itemParams(draft: ItemDraft): string[] {
  return [
    "name",
    "sku",
    "description",
    "category",
    "quantity",
    "unit_of_measure",
    "min_stock_threshold",
    "cost_price",
    "sale_price",
    "currency",
    ...draft.suppliers.flatMap((_, i) =>
      ["name", "email", "phone", "supplier_sku", "cost_price"].map((field) => `suppliers[${i}].${field}`),
    ),
  ];
}
