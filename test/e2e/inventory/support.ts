import type { TestServer } from "../../support/server.ts";
import { newWorkspace } from "../../support/workspace.ts";

/** What the inventory suites share. */

export const ITEM_ID = /^item_[0-9A-HJKMNP-TV-Z]{26}$/;
export const NEVER = "item_01J00000000000000000000000";
export const ITEM_FIELDS = `object id name sku description category quantity unit_of_measure min_stock_threshold
  cost_price sale_price currency suppliers { name email phone supplier_sku cost_price } status created_at updated_at`;

/** The `scratch` of a suite: called inside `e2e(...)` with its server getter. */
export function scratchOf(server: () => TestServer) {
  /** A fresh workspace whose items and events are under the test's control. */
  return async function scratch(scopes?: string[]) {
    const { own, client } = await newWorkspace(server(), scopes);
    const count = () =>
      server().running.db.prisma.inventoryItem.count({ where: { workspaceId: own.workspaceId } });
    /** The inventory.* outbox events of the workspace, oldest first. */
    const events = async () =>
      (
        await server().running.db.prisma.event.findMany({
          where: { workspaceId: own.workspaceId },
          orderBy: { id: "asc" },
        })
      )
        .filter((event) => event.type.startsWith("inventory."))
        .map((event) => ({ type: event.type, data: event.data as Record<string, any> }));
    return { own, client, count, events };
  };
}
