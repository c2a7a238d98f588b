import type { InventoryItemFieldsFragment, StockStatus } from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";
import { Tag, type Tone } from "../../ui/Tag.tsx";

// The inventory screens' shared types, texts and cells.

export type Item = InventoryItemFieldsFragment;
export type Supplier = Item["suppliers"][number];

export const INVENTORY_PATH = `${BASE}/inventory`;
export const itemPath = (id: string) => `${INVENTORY_PATH}/${encodeURIComponent(id)}`;

/** Why a role's write buttons are disabled (no role lacks it today: see schema/lib/roles.ts). */
export const CANNOT_WRITE = "Your role in this workspace can read the inventory but not change it.";

export const STOCK_TEXT: Record<StockStatus, string> = {
  in_stock: "In stock",
  low_stock: "Low stock",
  out_of_stock: "Out of stock",
};

export const STOCK_STATUSES = Object.keys(STOCK_TEXT) as StockStatus[];

const STOCK_TONE: Record<StockStatus, Tone> = { in_stock: "ok", low_stock: "warn", out_of_stock: "bad" };

export const isStockStatus = (value: string): value is StockStatus =>
  (STOCK_STATUSES as string[]).includes(value);

/** The stock status the API computed, as a badge. */
export function StockBadge({ status }: { status: StockStatus }) {
  return (
    <Tag tone={STOCK_TONE[status]} data-status={status}>
      {STOCK_TEXT[status]}
    </Tag>
  );
}

/** A supplier's contact: its e-mail as a link, and its phone. */
export function SupplierContact({ supplier }: { supplier: Supplier }) {
  if (!supplier.email && !supplier.phone) return <span className="muted">No contact</span>;
  return (
    <span className="inventory-contact">
      {supplier.email && <a href={`mailto:${supplier.email}`}>{supplier.email}</a>}
      {supplier.phone && <span>{supplier.phone}</span>}
    </span>
  );
}

/** The first supplier with its contact, and how many more there are. */
export function SupplierCell({ suppliers }: { suppliers: readonly Supplier[] }) {
  const [first, ...others] = suppliers;
  if (!first) return <span className="muted">None</span>;
  return (
    <span className="ops-name">
      <span>{first.name}</span>
      <SupplierContact supplier={first} />
      {others.length > 0 && (
        <span className="muted">
          +{others.length} more supplier{others.length === 1 ? "" : "s"}
        </span>
      )}
    </span>
  );
}
