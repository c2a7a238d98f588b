import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
import type { Deleted, InventoryItem, InventoryItemCreateParams, InventoryItemListParams, InventoryItemUpdateParams } from "../types.js";
import { APIResource } from "./resource.js";

export class InventoryItems extends APIResource {
  /** Items, newest first; filter by `status`, `category` or `search`. Needs `inventory.read`. */
  list(params?: InventoryItemListParams, options?: RequestOptions): PagePromise<InventoryItem> {
    return this._client._list("GET /inventory/items", [], params, options);
  }

  /** Creates an item; a `sku` in use is a `ConflictError` (`sku_taken`). */
  create(params: InventoryItemCreateParams, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("POST /inventory/items", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("GET /inventory/items/{id}", [id], undefined, options);
  }

  update(id: string, params: InventoryItemUpdateParams, options?: RequestOptions): APIPromise<InventoryItem> {
    return this._client._route("PATCH /inventory/items/{id}", [id], params, options);
  }

  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /inventory/items/{id}", [id], undefined, options);
  }
}

export class Inventory extends APIResource {
  /** `/v1/inventory/items`. */
  readonly items: InventoryItems = new InventoryItems(this._client);
}
