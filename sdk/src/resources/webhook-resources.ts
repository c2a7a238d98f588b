import type { APIPromise, RequestOptions } from "../core.js";
import type { PagePromise } from "../pagination.js";
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
  /** Needs `webhooks.read`. */
  list(params?: WebhookEndpointListParams, options?: RequestOptions): PagePromise<WebhookEndpoint> {
    return this._client._list("GET /webhook-endpoints", [], params, options);
  }

  /** Registers a URL for events (`["*"]` for all); the answer holds the signing `secret`, shown this once. */
  create(params: WebhookEndpointCreateParams, options?: RequestOptions): APIPromise<WebhookEndpointWithSecret> {
    return this._client._route("POST /webhook-endpoints", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<WebhookEndpoint> {
    return this._client._route("GET /webhook-endpoints/{id}", [id], undefined, options);
  }

  /** Changes `url`, `events`, `description`; `is_active: false` pauses it, `true` resumes it. */
  update(id: string, params: WebhookEndpointUpdateParams, options?: RequestOptions): APIPromise<WebhookEndpoint> {
    return this._client._route("PATCH /webhook-endpoints/{id}", [id], params, options);
  }

  /** Deletes the endpoint and its deliveries. */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /webhook-endpoints/{id}", [id], undefined, options);
  }

  /** Replaces the signing secret at once; the answer holds the new `secret`. */
  rotateSecret(id: string, options?: RequestOptions): APIPromise<Result<"POST /webhook-endpoints/{id}/rotate-secret">> {
    return this._client._route("POST /webhook-endpoints/{id}/rotate-secret", [id], undefined, options);
  }

  /** Sends a `webhook.test` event to this endpoint only, and returns the delivery. */
  test(id: string, options?: RequestOptions): APIPromise<Result<"POST /webhook-endpoints/{id}/test">> {
    return this._client._route("POST /webhook-endpoints/{id}/test", [id], undefined, options);
  }
}

export class WebhookDeliveries extends APIResource {
  /** Filter by `endpoint_id`, `event_type` or `status`. Needs `webhooks.read`. */
  list(params?: WebhookDeliveryListParams, options?: RequestOptions): PagePromise<WebhookDelivery> {
    return this._client._list("GET /webhook-deliveries", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<WebhookDelivery> {
    return this._client._route("GET /webhook-deliveries/{id}", [id], undefined, options);
  }

  /** Sends the same event again as a new delivery, which it returns. */
  replay(id: string, options?: RequestOptions): APIPromise<Result<"POST /webhook-deliveries/{id}/replay">> {
    return this._client._route("POST /webhook-deliveries/{id}/replay", [id], undefined, options);
  }
}

/** The outbox: every event of the workspace, kept 30 days. */
export class Events extends APIResource {
  /** Filter by `type` (`limit` at most 30). Needs `webhooks.read`. */
  list(params?: EventListParams, options?: RequestOptions): PagePromise<Event> {
    return this._client._list("GET /events", [], params, options);
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<Event> {
    return this._client._route("GET /events/{id}", [id], undefined, options);
  }
}
