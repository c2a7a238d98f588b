import type { RestRoutes } from "../generated/routes.js";

/**
 * The event catalog (schema/events.ts EVENT_TYPES, plus the `webhook.test` event) and the typed
 * events a verified delivery carries; the generated route table's types (erased at compile time)
 * type `data.object`.
 */

/** Every event type a delivery can carry: the subscribable catalog and `webhook.test`. */
export const KONTOR_EVENT_TYPES = [
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
  "webhook.test",
] as const;

export type KontorEventType = (typeof KONTOR_EVENT_TYPES)[number];

/** A `/v1` route's result: the REST representation (the GraphQL type, as the route selects it). */
type Representation<R extends keyof RestRoutes> = RestRoutes[R]["result"];

/**
 * Each resource an event carries, exactly as the REST API returns it (the event is written with
 * the same selection): `data.object` of a full event.
 */
export interface KontorEventResources {
  lead: Representation<"GET /leads/{id}">;
  client: Representation<"GET /clients/{id}">;
  /** Invoices and quotes alike (`document_type`). */
  invoice: Representation<"GET /invoices/{id}">;
  /** The payment with the invoice it paid. */
  payment: Representation<"POST /invoices/{invoice_id}/payments">;
  inventory_item: Representation<"GET /inventory/items/{id}">;
  task: Representation<"GET /tasks/{id}">;
  file: Representation<"GET /objects/{id}">;
  /** The endpoint, without its secret (`webhook.test`). */
  webhook_endpoint: Representation<"GET /webhook-endpoints/{id}">;
}

export type KontorResourceKind = keyof KontorEventResources;

/** A resource of `Kind` as the REST API returns it, its `object` narrowed to the kind. */
export type KontorResource<Kind extends KontorResourceKind> = KontorEventResources[Kind] & { object: Kind };

/** The `object` kind of `data.object` for each event type (quotes are invoices with `document_type: "quote"`). */
export interface KontorEventObjectKinds extends Record<KontorEventType, KontorResourceKind> {
  "lead.created": "lead";
  "lead.stage_changed": "lead";
  "client.created": "client";
  "client.updated": "client";
  "invoice.created": "invoice";
  "invoice.sent": "invoice";
  "invoice.voided": "invoice";
  "invoice.paid": "invoice";
  "quote.created": "invoice";
  "quote.sent": "invoice";
  "quote.accepted": "invoice";
  "quote.declined": "invoice";
  "payment.recorded": "payment";
  "inventory.low_stock": "inventory_item";
  "inventory.out_of_stock": "inventory_item";
  "task.completed": "task";
  "file.uploaded": "file";
  "file.deleted": "file";
  /** The endpoint itself, without its secret. */
  "webhook.test": "webhook_endpoint";
}

interface KontorEventHead<T extends KontorEventType> {
  /** `evt_…`: the same on every attempt and replay (also sent as `webhook-id`); de-duplicate on it. */
  id: string;
  object: "event";
  type: T;
  /** ISO 8601. */
  created_at: string;
  workspace_id: string;
}

/** An event carrying the whole resource, as the API returned it when the event happened. */
export interface KontorFullEvent<T extends KontorEventType> extends KontorEventHead<T> {
  data: { object: KontorResource<KontorEventObjectKinds[T]> };
  thin?: undefined;
  event_url?: undefined;
}

/**
 * An event whose body would have exceeded 256 KiB: `data.object` holds only `object` and `id`;
 * `GET event_url` (a key with `webhooks.read`) returns the full snapshot.
 */
export interface KontorThinEvent<T extends KontorEventType> extends KontorEventHead<T> {
  data: { object: { object: KontorEventObjectKinds[T]; id: string } };
  thin: true;
  event_url: string;
}

/** The event of one type, full or thin. */
export type KontorEventOf<T extends KontorEventType> = KontorFullEvent<T> | KontorThinEvent<T>;

/** A verified delivery: a discriminated union over `type` (and `thin`). */
export type KontorEvent = { [T in KontorEventType]: KontorEventOf<T> }[KontorEventType];
