import type { RestRoutes } from "./generated/routes.js";

/**
 * The REST resources and parameters, all derived from the generated route table: a REST body is
 * the GraphQL type, exactly as the route selects it.
 */

/** Flattens an intersection or mapped type for readable hovers. */
export type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** A `/v1` route the schema publishes, as `METHOD /path/{param}`. */
export type Route = keyof RestRoutes;

/** What a route answers. */
export type Result<R extends Route> = RestRoutes[R]["result"];

/** A route's parameters besides those in its path: its query string (GET) or its JSON body. */
export type Params<R extends Route> = Simplify<Omit<RestRoutes[R]["variables"], RestRoutes[R]["pathParams"]>>;

/** One item of a list route's `data`. */
export type ListItem<R extends Route> = Result<R> extends { data: Array<infer Item> } ? Item : never;

/** A list route's filters, without the `cursor` the pagination sets. */
export type ListParams<R extends Route> = Simplify<
  Omit<Params<R>, "cursor"> & { cursor?: string | null | undefined }
>;

export type Workspace = Result<"GET /workspace">;
export type BusinessSummary = Result<"GET /summary">;
export type Client = Result<"GET /clients/{id}">;
export type Lead = Result<"GET /leads/{id}">;
export type ConvertedLead = Result<"POST /leads/{id}/convert">;
export type InventoryItem = Result<"GET /inventory/items/{id}">;
export type Invoice = Result<"GET /invoices/{id}">;
/** A payment with the invoice it paid, as `invoices.payments.create` returns it. */
export type Payment = Result<"POST /invoices/{invoice_id}/payments">;
export type Project = Result<"GET /projects/{id}">;
export type Task = Result<"GET /tasks/{id}">;
export type RequestLog = ListItem<"GET /request-logs">;
export type RequestLogStats = Result<"GET /request-logs/stats">;
export type Event = Result<"GET /events/{id}">;
export type WebhookEndpoint = Result<"GET /webhook-endpoints/{id}">;
/** An endpoint with its signing `secret`, shown when it is created and when the secret is rotated. */
export type WebhookEndpointWithSecret = Result<"POST /webhook-endpoints">;
export type WebhookDelivery = Result<"GET /webhook-deliveries/{id}">;
export type Bucket = Result<"GET /buckets/{id}">;
/** A stored object (`object: "file"`). */
export type FileObject = Result<"GET /objects/{id}">;
export type StorageUsage = Result<"GET /storage">;
export type AgentSettings = Result<"GET /agent-settings">;
export type TrustedProvider = Result<"GET /trusted-providers/{id}">;
export type AgentRegistration = Result<"GET /agent-registrations/{id}">;
/** A change to access, as the audit log keeps it. */
export type AuditEvent = Result<"GET /audit-events/{id}">;
/** What a delete answers: `{id, object, deleted: true}`. */
export type Deleted = Result<"DELETE /leads/{id}">;

export type ClientCreateParams = Params<"POST /clients">;
export type ClientUpdateParams = Params<"PATCH /clients/{id}">;
export type ClientListParams = ListParams<"GET /clients">;
export type LeadCreateParams = Params<"POST /leads">;
export type LeadUpdateParams = Params<"PATCH /leads/{id}">;
export type LeadListParams = ListParams<"GET /leads">;
export type InventoryItemCreateParams = Params<"POST /inventory/items">;
export type InventoryItemUpdateParams = Params<"PATCH /inventory/items/{id}">;
export type InventoryItemListParams = ListParams<"GET /inventory/items">;
export type InvoiceCreateParams = Params<"POST /invoices">;
export type InvoiceUpdateParams = Params<"PATCH /invoices/{id}">;
export type InvoiceListParams = ListParams<"GET /invoices">;
export type PaymentCreateParams = Params<"POST /invoices/{invoice_id}/payments">;
export type ProjectCreateParams = Params<"POST /projects">;
export type ProjectUpdateParams = Params<"PATCH /projects/{id}">;
export type ProjectListParams = ListParams<"GET /projects">;
export type TaskCreateParams = Params<"POST /projects/{project_id}/tasks">;
export type TaskUpdateParams = Params<"PATCH /tasks/{id}">;
export type TaskListParams = ListParams<"GET /projects/{project_id}/tasks">;
export type RequestLogListParams = ListParams<"GET /request-logs">;
export type RequestLogStatsParams = Params<"GET /request-logs/stats">;
export type WebhookEndpointCreateParams = Params<"POST /webhook-endpoints">;
export type WebhookEndpointUpdateParams = Params<"PATCH /webhook-endpoints/{id}">;
export type WebhookEndpointListParams = ListParams<"GET /webhook-endpoints">;
export type WebhookDeliveryListParams = ListParams<"GET /webhook-deliveries">;
export type EventListParams = ListParams<"GET /events">;
export type BucketCreateParams = Params<"POST /buckets">;
export type BucketListParams = ListParams<"GET /buckets">;
export type ObjectListParams = ListParams<"GET /buckets/{bucket_id}/objects">;
/** An upload as JSON: the bytes in standard, padded base64 (the body stays within 25 MiB). */
export type ObjectUploadBase64Params = Params<"POST /buckets/{bucket_id}/objects">;
export type AgentSettingsUpdateParams = Params<"PATCH /agent-settings">;
export type TrustedProviderCreateParams = Params<"POST /trusted-providers">;
export type TrustedProviderListParams = ListParams<"GET /trusted-providers">;
export type AgentRegistrationListParams = ListParams<"GET /agent-registrations">;
export type AuditEventListParams = ListParams<"GET /audit-events">;
