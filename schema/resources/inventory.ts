import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type Tx } from "../events.ts";
import type { InventoryItem as ItemRow, Prisma } from "../generated/prisma/client.ts";
import { StockStatus } from "../generated/prisma/enums.ts";
import { searchWhere } from "../lib/cursor.ts";
import { ApiError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { stockAlert, stockStatus } from "../lib/stock-status.ts";
import { currency, notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Deleted, listType, objectKind, pageArgs } from "./shared.ts";

const suppliersOf = (item: { suppliers: unknown }) => item.suppliers as SupplierShape[];

/** One entry of the `suppliers` JSON column; cost_price is kept as its exact decimal text. */
interface SupplierShape {
  name: string;
  email: string | null;
  phone: string | null;
  supplier_sku: string | null;
  cost_price: string | null;
}

export const StockStatusEnum = builder.enumType(StockStatus, {
  name: "StockStatus",
  description: "An item's stock level, recomputed on every write from quantity and min_stock_threshold.",
  values: {
    in_stock: { description: "quantity is above min_stock_threshold." },
    low_stock: { description: "quantity is above 0 but at or below min_stock_threshold." },
    out_of_stock: { description: "quantity is 0." },
  },
});

const InventorySupplier = builder.objectRef<SupplierShape>("InventorySupplier").implement({
  description: "A supplier the item can be bought from.",
  fields: (t) => ({
    name: t.exposeString("name", { description: "The supplier's name." }),
    email: t.exposeString("email", {
      nullable: true,
      description: "The supplier's e-mail address, in lower case.",
    }),
    phone: t.exposeString("phone", {
      nullable: true,
      description: "The supplier's phone number, as entered.",
    }),
    supplier_sku: t.exposeString("supplier_sku", {
      nullable: true,
      description: "The supplier's own code for the item.",
    }),
    cost_price: t.expose("cost_price", {
      type: "Money",
      nullable: true,
      description: "What one unit costs from this supplier, in the item's currency.",
    }),
  }),
});

const InventorySupplierInput = builder.inputType("InventorySupplierInput", {
  description: "A supplier the item can be bought from.",
  fields: (t) => ({
    name: t.string({ required: true, description: "The supplier's name; cannot be empty." }),
    email: t.string({ description: "The supplier's e-mail address." }),
    phone: t.string({ description: "The supplier's phone number." }),
    supplier_sku: t.string({ description: "The supplier's own code for the item." }),
    cost_price: t.field({
      type: "Money",
      description: "What one unit costs from this supplier, in the item's currency.",
    }),
  }),
});

export const InventoryItem = builder.prismaObject("InventoryItem", {
  description:
    "A stocked article; status follows quantity and min_stock_threshold. Visible with inventory.read or inventory.write.",
  authScopes: { readable: "inventory" },
  fields: (t) => ({
    object: objectKind(t, "inventory_item"),
    id: t.exposeID("id", { description: "`item_…`." }),
    name: t.exposeString("name", { description: "The item's name." }),
    sku: t.exposeString("sku", {
      nullable: true,
      description: "Stock keeping unit, unique in the workspace; null when none.",
    }),
    description: t.exposeString("description", { nullable: true, description: "Free-text description." }),
    category: t.exposeString("category", {
      nullable: true,
      description: "A free-text category (the list filters on it exactly).",
    }),
    quantity: t.expose("quantity", { type: "Quantity", description: "Units in stock, in unit_of_measure." }),
    unit_of_measure: t.exposeString("unitOfMeasure", { description: "What one unit is, e.g. pcs, kg, m." }),
    min_stock_threshold: t.expose("minStockThreshold", {
      type: "Quantity",
      description: "At or below this quantity the item is low_stock.",
    }),
    cost_price: t.expose("costPrice", {
      type: "Money",
      nullable: true,
      description: "What one unit costs the workspace, in `currency`.",
    }),
    sale_price: t.expose("salePrice", {
      type: "Money",
      nullable: true,
      description: "What one unit sells for, in `currency`.",
    }),
    currency: t.exposeString("currency", { description: "ISO 4217 code of cost_price and sale_price." }),
    suppliers: t.field({
      type: [InventorySupplier],
      description: "Where the item can be bought; empty when none.",
      resolve: suppliersOf,
      // A page of items weighs each one's suppliers as stored (schema/lib/list-page.ts).
      extensions: { measure: suppliersOf },
    }),
    status: t.expose("status", {
      type: StockStatusEnum,
      description:
        "Computed: out_of_stock when quantity <= 0, low_stock when quantity <= min_stock_threshold, else in_stock.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the item was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the item was last changed." }),
  }),
});

const InventoryItemList = listType("InventoryItem", InventoryItem);

const itemFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required, description: "The item's name; cannot be empty or cleared." }),
    sku: t.string({
      description: "Stock keeping unit, unique in the workspace (a repeat is 409 sku_taken); null clears it.",
    }),
    description: t.string({ description: "Free-text description; null clears it." }),
    category: t.string({ description: "A free-text category; null clears it." }),
    quantity: t.field({ type: "Quantity", description: "Units in stock, default 0; cannot be null." }),
    unit_of_measure: t.string({ description: "What one unit is, default pcs; cannot be empty." }),
    min_stock_threshold: t.field({
      type: "Quantity",
      description: "At or below it the item is low_stock; default 0, cannot be null.",
    }),
    cost_price: t.field({ type: "Money", description: "What one unit costs the workspace; null clears it." }),
    sale_price: t.field({ type: "Money", description: "What one unit sells for; null clears it." }),
    currency: t.string({ description: "ISO 4217 code in capitals, default USD." }),
    suppliers: t.field({
      type: [InventorySupplierInput],
      description: "Where the item can be bought; replaces the whole list (null or [] empties it).",
    }),
  }));

type SupplierArgs = {
  name: string;
  email?: string | null;
  phone?: string | null;
  supplier_sku?: string | null;
  cost_price?: string | null;
};

type ItemArgs = {
  name?: string | null;
  sku?: string | null;
  description?: string | null;
  category?: string | null;
  quantity?: string | null;
  unit_of_measure?: string | null;
  min_stock_threshold?: string | null;
  cost_price?: string | null;
  sale_price?: string | null;
  currency?: string | null;
  suppliers?: SupplierArgs[] | null;
};

function suppliers(list: SupplierArgs[] | null | undefined): SupplierShape[] | undefined {
  if (list === undefined) return undefined;
  return (list ?? []).map((supplier, i) => ({
    name: requiredText(`suppliers[${i}].name`, supplier.name),
    email: optionalEmail(`suppliers[${i}].email`, supplier.email) ?? null,
    phone: optionalText(supplier.phone) ?? null,
    supplier_sku: optionalText(supplier.supplier_sku) ?? null,
    cost_price: supplier.cost_price ?? null,
  }));
}

/** Maps API arguments to columns; absent arguments stay absent so PATCH leaves them alone. */
function itemData(args: ItemArgs) {
  return defined({
    name: args.name === undefined ? undefined : requiredText("name", args.name),
    sku: optionalText(args.sku),
    description: optionalText(args.description),
    category: optionalText(args.category),
    quantity: notNull("quantity", args.quantity),
    unitOfMeasure:
      args.unit_of_measure === undefined ? undefined : requiredText("unit_of_measure", args.unit_of_measure),
    minStockThreshold: notNull("min_stock_threshold", args.min_stock_threshold),
    costPrice: args.cost_price,
    salePrice: args.sale_price,
    currency: currency("currency", args.currency),
    suppliers: suppliers(args.suppliers) as Prisma.InputJsonArray | undefined,
  });
}

const skuTaken = (sku: string | null | undefined) =>
  new ApiError(
    409,
    "invalid_request_error",
    "sku_taken",
    `Another inventory item in this workspace has the sku '${sku}'.`,
    { param: "sku" },
  );

/** The unique index on (workspace_id, sku) is the only one a write can hit: its violation is sku_taken. */
async function uniqueSku<T>(sku: string | null | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if ((error as { code?: string } | null)?.code === "P2002") throw skuTaken(sku);
    throw error;
  }
}

/** Emits inventory.low_stock / inventory.out_of_stock when the item has just moved into that status. */
async function emitStockAlert(tx: Tx, ctx: Context, before: StockStatus | undefined, item: ItemRow) {
  const type = stockAlert(before, item.status);
  if (type) await emit(tx, ctx, type, "InventoryItem", item);
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  inventoryItems: t.field({
    type: InventoryItemList,
    description: "The workspace's inventory items, newest first. Needs inventory.read.",
    extensions: rest("GET /inventory/items", "List inventory items"),
    authScopes: { scope: "inventory.read" },
    args: {
      status: t.arg({ type: StockStatusEnum, description: "Only items with this stock status." }),
      category: t.arg.string({ description: "Only items of this category (exact match)." }),
      search: t.arg.string({
        description: "Case-insensitive substring of name, sku, category or description.",
      }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.inventoryItem.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.status && { status: args.status }),
            ...(args.category != null && { category: args.category }),
            ...cursor,
            ...searchWhere(args.search, ["name", "sku", "category", "description"]),
          },
          ...page,
        }),
      ),
  }),
  inventoryItem: t.prismaField({
    type: "InventoryItem",
    nullable: true,
    description: "One inventory item by id; an unknown id is a not_found error. Needs inventory.read.",
    extensions: rest("GET /inventory/items/:id", "Retrieve an inventory item"),
    authScopes: { scope: "inventory.read" },
    args: { id: t.arg.id({ required: true, description: "The item's id (`item_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "inventory item",
        args.id,
        await ctx.db.inventoryItem.findFirst({ ...query, where: where(ctx, args.id) }),
      ),
  }),
}));

interface StockRow {
  quantity: Prisma.Decimal;
  min_stock_threshold: Prisma.Decimal;
  status: StockStatus;
}

builder.mutationFields((t) => ({
  createInventoryItem: t.prismaField({
    type: "InventoryItem",
    description:
      "Creates an item; creation at or under the threshold emits inventory.low_stock or inventory.out_of_stock. Needs inventory.write.",
    extensions: rest("POST /inventory/items", "Create an inventory item", 201, ["sku_taken"]),
    authScopes: { scope: "inventory.write" },
    args: itemFields(true),
    resolve: (query, _root, args, ctx) => {
      const data = { ...itemData(args), name: requiredText("name", args.name) };
      const status = stockStatus(data.quantity ?? 0, data.minStockThreshold ?? 0);
      return uniqueSku(data.sku, () =>
        ctx.db.$transaction(async (tx) => {
          const item = await tx.inventoryItem.create({
            ...query,
            data: { ...data, status, id: newId("inventoryItem"), workspaceId: ctx.credential.workspaceId },
          });
          await emitStockAlert(tx, ctx, undefined, item);
          return item;
        }),
      );
    },
  }),
  updateInventoryItem: t.prismaField({
    type: "InventoryItem",
    description:
      "Updates the fields sent (null clears an optional field; suppliers replaces the list) and recomputes status; a change into low_stock or out_of_stock emits inventory.low_stock or inventory.out_of_stock. Needs inventory.write.",
    extensions: rest("PATCH /inventory/items/:id", "Update an inventory item", 200, ["sku_taken"]),
    authScopes: { scope: "inventory.write" },
    args: {
      id: t.arg.id({ required: true, description: "The item's id (`item_…`)." }),
      ...itemFields(false),
    },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = itemData(args);
      return uniqueSku(data.sku, () =>
        ctx.db.$transaction(async (tx) => {
          // Status depends on two columns: lock the row so concurrent PATCHes of each cannot leave it stale.
          const [current] = await tx.$queryRaw<StockRow[]>`
            SELECT quantity, min_stock_threshold, status::text AS status FROM inventory_items
            WHERE id = ${id} AND workspace_id = ${ctx.credential.workspaceId} FOR UPDATE`;
          const before = found("inventory item", id, current ?? null);
          const status = stockStatus(
            data.quantity ?? String(before.quantity),
            data.minStockThreshold ?? String(before.min_stock_threshold),
          );
          const item = await tx.inventoryItem.update({
            ...query,
            where: where(ctx, id),
            data: { ...data, status },
          });
          await emitStockAlert(tx, ctx, before.status, item);
          return item;
        }),
      );
    },
  }),
  deleteInventoryItem: t.field({
    type: Deleted,
    description: "Deletes an inventory item for good. Needs inventory.write.",
    extensions: rest("DELETE /inventory/items/:id", "Delete an inventory item"),
    authScopes: { scope: "inventory.write" },
    args: { id: t.arg.id({ required: true, description: "The item's id (`item_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("inventory item", id, () => ctx.db.inventoryItem.delete({ where: where(ctx, id) }));
      return { id, object: "inventory_item", deleted: true as const };
    },
  }),
}));
