/**
 * The event catalog, kept apart from schema/events.ts (which needs GraphQL's runtime) so that the
 * dashboard's bundle can import it.
 */

/** Every event Kontor writes (docs/api/webhooks.md and "The API in short"). */
export const EVENT_TYPES = [
  "lead.created",
  "lead.stage_changed",
  "client.created",
  "client.updated",
  "invoice.created",
  "invoice.sent",
  "invoice.voided",
  "invoice.paid",
  "quote.created",
  "quote.sent",
  "quote.accepted",
  "quote.declined",
  "payment.recorded",
  "inventory.low_stock",
  "inventory.out_of_stock",
  "task.completed",
  "file.uploaded",
  "file.deleted",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** How long events (and with them their deliveries) are kept. */
export const EVENT_RETENTION_DAYS = 30;

/** Sent by POST /webhook-endpoints/{id}/test to that endpoint alone; not part of the subscribable catalog. */
export const TEST_EVENT_TYPE = "webhook.test";

/** An endpoint's `events` meaning every event, present and future. */
export const ALL_EVENTS = "*";
