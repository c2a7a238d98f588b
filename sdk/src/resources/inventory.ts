import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  Deleted,
  InventoryItem,
  InventoryItemCreateParams,
  InventoryItemListParams,
  InventoryItemUpdateParams,
} from "../types.js";
import { APIResource } from "./resource.js";

export class InventoryItems extends APIResource {
  /**
   * Items, newest first; filter by `status`, `category` or `search`. Needs `inventory.read`.
   *
   * @example
   * ```ts
   * const page = await kontor.inventory.items.list({ category: "paper", limit: 50 });
   * for (const item of page.data) console.log(item.sku, item.quantity);
   * ```
   */
  list(params?: InventoryItemListParams, options?: RequestOptions): PagePromise<InventoryItem> {
    return this._client._list("GET /inventory/items", [], params, options);
  }

  /**
   * Creates an item; a `sku` in use is a `ConflictError` (`sku_taken`).
   *
   * @example
   * ```ts
   * const item = await kontor.inventory.items.create({ name: "A4 paper", sku: "PAP-A4", quantity: 500, min_stock_threshold: 100 });
   * ```
   */
  create(params: InventoryItemCreateParams, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("POST /inventory/items", [], params, options);
  }

  /**
   * One item by id. Needs `inventory.read`.
   *
   * @example
   * ```ts
   * const item = await kontor.inventory.items.retrieve("inv_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("GET /inventory/items/{id}", [id], undefined, options);
  }

  /**
   * Changes the fields sent; a quantity at or under the threshold emits a stock event. Needs `inventory.write`.
   *
   * @example
   * ```ts
   * await kontor.inventory.items.update("inv_…", { quantity: 420 }); // may emit inventory.low_stock
   * ```
   */
  update(id: string, params: InventoryItemUpdateParams, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("PATCH /inventory/items/{id}", [id], params, options);
  }

  /**
   * Deletes the item. Needs `inventory.write`.
   *
   * @example
   * ```ts
   * await kontor.inventory.items.del("inv_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /inventory/items/{id}", [id], undefined, options);
  }
}

export class Inventory extends APIResource {
  /** `/v1/inventory/items`. */
  readonly items: InventoryItems = new InventoryItems(this._client);
}
