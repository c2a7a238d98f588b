import { TEST_EVENT_TYPE, type Tx } from "../events.ts";

/**
 * A paused endpoint holds its waiting deliveries (no next attempt); resuming makes them due now.
 * Deliveries in flight finish either way; test events are never held.
 */
export async function holdDeliveries(tx: Tx, endpointId: string, hold: boolean): Promise<void> {
  await tx.webhookDelivery.updateMany({
    where: {
      endpointId,
      status: { in: ["pending", "retrying"] },
      eventType: { not: TEST_EVENT_TYPE },
      nextAttemptAt: hold ? { not: null } : null,
    },
    data: { nextAttemptAt: hold ? null : new Date() },
  });
}
