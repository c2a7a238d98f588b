import type { APIPromise, RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  Deleted,
  Event,
  EventListParams,
  Result,
  WebhookDelivery,
  WebhookDeliveryListParams,
  WebhookEndpoint,
  WebhookEndpointCreateParams,
  WebhookEndpointListParams,
  WebhookEndpointUpdateParams,
  WebhookEndpointWithSecret,
} from "../types.js";
import { APIResource } from "./resource.js";

export class WebhookEndpoints extends APIResource {
  /**
   * Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * for await (const endpoint of kontor.webhookEndpoints.list()) console.log(endpoint.url, endpoint.events);
   * ```
   */
  list(params?: WebhookEndpointListParams, options?: RequestOptions): PagePromise<WebhookEndpoint> {
    return this._client._list("GET /webhook-endpoints", [], params, options);
  }

  /**
   * Registers a URL for events (`["*"]` for all); the answer holds the signing `secret`, shown this once.
   *
   * @example
   * ```ts
   * const { id, secret } = await kontor.webhookEndpoints.create({ url: "https://example.com/hooks", events: ["invoice.paid"] });
   * // Store `secret` now: it is shown this once.
   * ```
   */
  create(
    params: WebhookEndpointCreateParams,
    options?: RequestOptions,
  ): APIPromise<WebhookEndpointWithSecret> {
    return this._client._route("POST /webhook-endpoints", [], params, options);
  }

  /**
   * One endpoint by id, without its secret. Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * const endpoint = await kontor.webhookEndpoints.retrieve("we_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<WebhookEndpoint> {
    return this._client._route("GET /webhook-endpoints/{id}", [id], undefined, options);
  }

  /**
   * Changes `url`, `events`, `description`; `is_active: false` pauses it, `true` resumes it.
   *
   * @example
   * ```ts
   * await kontor.webhookEndpoints.update("we_…", { is_active: false }); // paused
   * ```
   */
  update(
    id: string,
    params: WebhookEndpointUpdateParams,
    options?: RequestOptions,
  ): APIPromise<WebhookEndpoint> {
    return this._client._route("PATCH /webhook-endpoints/{id}", [id], params, options);
  }

  /**
   * Deletes the endpoint and its deliveries.
   *
   * @example
   * ```ts
   * await kontor.webhookEndpoints.del("we_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /webhook-endpoints/{id}", [id], undefined, options);
  }

  /**
   * Replaces the signing secret at once; the answer holds the new `secret`.
   *
   * @example
   * ```ts
   * const { secret } = await kontor.webhookEndpoints.rotateSecret("we_…");
   * ```
   */
  rotateSecret(
    id: string,
    options?: RequestOptions,
  ): APIPromise<Result<"POST /webhook-endpoints/{id}/rotate-secret">> {
    return this._client._route("POST /webhook-endpoints/{id}/rotate-secret", [id], undefined, options);
  }

  /**
   * Sends a `webhook.test` event to this endpoint only, and returns the delivery.
   *
   * @example
   * ```ts
   * const delivery = await kontor.webhookEndpoints.test("we_…");
   * console.log(delivery.status);
   * ```
   */
  test(id: string, options?: RequestOptions): APIPromise<Result<"POST /webhook-endpoints/{id}/test">> {
    return this._client._route("POST /webhook-endpoints/{id}/test", [id], undefined, options);
  }
}

export class WebhookDeliveries extends APIResource {
  /**
   * Filter by `endpoint_id`, `event_type` or `status`. Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * for await (const delivery of kontor.webhookDeliveries.list({ status: "failed" })) console.log(delivery.id);
   * ```
   */
  list(params?: WebhookDeliveryListParams, options?: RequestOptions): PagePromise<WebhookDelivery> {
    return this._client._list("GET /webhook-deliveries", [], params, options);
  }

  /**
   * One delivery by id, with its attempts. Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * const delivery = await kontor.webhookDeliveries.retrieve("whd_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<WebhookDelivery> {
    return this._client._route("GET /webhook-deliveries/{id}", [id], undefined, options);
  }

  /**
   * Sends the same event again as a new delivery, which it returns.
   *
   * @example
   * ```ts
   * const again = await kontor.webhookDeliveries.replay("whd_…");
   * ```
   */
  replay(id: string, options?: RequestOptions): APIPromise<Result<"POST /webhook-deliveries/{id}/replay">> {
    return this._client._route("POST /webhook-deliveries/{id}/replay", [id], undefined, options);
  }
}

/** The outbox: every event of the workspace, kept 30 days. */
export class Events extends APIResource {
  /**
   * Filter by `type` (`limit` at most 30). Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * for await (const event of kontor.events.list({ type: "invoice.paid" })) console.log(event.id);
   * ```
   */
  list(params?: EventListParams, options?: RequestOptions): PagePromise<Event> {
    return this._client._list("GET /events", [], params, options);
  }

  /**
   * One event by id (`evt_…`), with its full snapshot. Needs `webhooks.read`.
   *
   * @example
   * ```ts
   * const event = await kontor.events.retrieve("evt_…"); // e.g. the full snapshot of a thin delivery
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Event> {
    return this._client._route("GET /events/{id}", [id], undefined, options);
  }
}
