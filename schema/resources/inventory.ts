import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type Tx } from "../events.ts";
import type { InventoryItem as ItemRow, Prisma } from "../generated/prisma/client.ts";
import { StockStatus } from "../generated/prisma/enums.ts";
import { listPage, searchWhere } from "../lib/cursor.ts";
import { ApiError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { stockAlert, stockStatus } from "../lib/stock-status.ts";
import { currency, notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Deleted, listType, pageArgs } from "./shared.ts";

/** One entry of the `suppliers` JSON column; cost_price is kept as its exact decimal text. */
interface SupplierShape {
  name: string;
  email: string | null;
  phone: string | null;
  supplier_sku: string | null;
  cost_price: string | null;
}

const StockStatusEnum = builder.enumType(StockStatus, { name: "StockStatus" });

const InventorySupplier = builder.objectRef<SupplierShape>("InventorySupplier").implement({
  fields: (t) => ({
    name: t.exposeString("name"),
    email: t.exposeString("email", { nullable: true }),
    phone: t.exposeString("phone", { nullable: true }),
    supplier_sku: t.exposeString("supplier_sku", { nullable: true }),
    cost_price: t.expose("cost_price", { type: "Money", nullable: true }),
  }),
});

const InventorySupplierInput = builder.inputType("InventorySupplierInput", {
  fields: (t) => ({
    name: t.string({ required: true }),
    email: t.string(),
    phone: t.string(),
    supplier_sku: t.string(),
    cost_price: t.field({ type: "Money" }),
  }),
});

export const InventoryItem = builder.prismaObject("InventoryItem", {
  description: "A stocked article; status follows quantity and min_stock_threshold.",
  authScopes: { readable: "inventory" },
  fields: (t) => ({
    object: t.string({ resolve: () => "inventory_item" }),
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    sku: t.exposeString("sku", { nullable: true, description: "Unique in the workspace." }),
    description: t.exposeString("description", { nullable: true }),
    category: t.exposeString("category", { nullable: true }),
    quantity: t.expose("quantity", { type: "Quantity" }),
    unit_of_measure: t.exposeString("unitOfMeasure"),
    min_stock_threshold: t.expose("minStockThreshold", { type: "Quantity" }),
    cost_price: t.expose("costPrice", { type: "Money", nullable: true }),
    sale_price: t.expose("salePrice", { type: "Money", nullable: true }),
    currency: t.exposeString("currency"),
    suppliers: t.field({ type: [InventorySupplier], resolve: (item) => item.suppliers as unknown as SupplierShape[] }),
    status: t.expose("status", {
      type: StockStatusEnum,
      description: "Computed: out_of_stock when quantity <= 0, low_stock when quantity <= min_stock_threshold, else in_stock.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
  }),
});

const InventoryItemList = listType("InventoryItem", InventoryItem);

const itemFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required }),
    sku: t.string({ description: "Unique in the workspace." }),
    description: t.string(),
    category: t.string(),
    quantity: t.field({ type: "Quantity", description: "Default 0." }),
    unit_of_measure: t.string({ description: "Default pcs." }),
    min_stock_threshold: t.field({ type: "Quantity", description: "Default 0." }),
    cost_price: t.field({ type: "Money" }),
    sale_price: t.field({ type: "Money" }),
    currency: t.string({ description: "ISO 4217, default USD." }),
    suppliers: t.field({ type: [InventorySupplierInput], description: "Replaces the whole list." }),
  }));

type SupplierArgs = { name: string; email?: string | null; phone?: string | null; supplier_sku?: string | null; cost_price?: string | null };

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
    unitOfMeasure: args.unit_of_measure === undefined ? undefined : requiredText("unit_of_measure", args.unit_of_measure),
    minStockThreshold: notNull("min_stock_threshold", args.min_stock_threshold),
    costPrice: args.cost_price,
    salePrice: args.sale_price,
    currency: currency("currency", args.currency),
    suppliers: suppliers(args.suppliers) as Prisma.InputJsonArray | undefined,
  });
}

const skuTaken = (sku: string | null | undefined) =>
  new ApiError(409, "invalid_request_error", "sku_taken", `Another inventory item in this workspace has the sku '${sku}'.`, { param: "sku" });

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
    description: "Inventory items, newest first.",
    extensions: rest("GET /inventory/items", "List inventory items"),
    authScopes: { scope: "inventory.read" },
    args: {
      status: t.arg({ type: StockStatusEnum }),
      category: t.arg.string({ description: "Exact match." }),
      search: t.arg.string({ description: "Case-insensitive substring of name, sku, category or description." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
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
    extensions: rest("GET /inventory/items/:id", "Retrieve an inventory item"),
    authScopes: { scope: "inventory.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("inventory item", args.id, await ctx.db.inventoryItem.findFirst({ ...query, where: where(ctx, args.id) })),
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
    description: "Creates an item; creation at or under the threshold emits inventory.low_stock or inventory.out_of_stock.",
    extensions: rest("POST /inventory/items", "Create an inventory item", 201),
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
    description: "Updates the fields sent (null clears an optional field; suppliers replaces the list) and recomputes status.",
    extensions: rest("PATCH /inventory/items/:id", "Update an inventory item"),
    authScopes: { scope: "inventory.write" },
    args: { id: t.arg.id({ required: true }), ...itemFields(false) },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = itemData(args);
      return uniqueSku(data.sku, () =>
        ctx.db.$transaction(async (tx) => {
          // Status depends on two columns: lock the row so concurrent PATCHes of each cannot leave it stale.
          const [current] = await tx.$queryRaw<StockRow[]>`
            SELECT quantity, min_stock_threshold, status::text AS status FROM inventory_items
            WHERE id = ${id} AND workspace_id = ${ctx.credential.workspaceId} FOR UPDATE`;
          const before = found("inventory item", id, current ?? null);
          const status = stockStatus(data.quantity ?? String(before.quantity), data.minStockThreshold ?? String(before.min_stock_threshold));
          const item = await tx.inventoryItem.update({ ...query, where: where(ctx, id), data: { ...data, status } });
          await emitStockAlert(tx, ctx, before.status, item);
          return item;
        }),
      );
    },
  }),
  deleteInventoryItem: t.field({
    type: Deleted,
    extensions: rest("DELETE /inventory/items/:id", "Delete an inventory item"),
    authScopes: { scope: "inventory.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("inventory item", id, () => ctx.db.inventoryItem.delete({ where: where(ctx, id) }));
      return { id, object: "inventory_item", deleted: true as const };
    },
  }),
}));
