/**
 * Every `/v1` route of the API and the SDK method that calls it (`"GET /leads"` →
 * `kontor.leads.list`). The tests compare it with the server's OpenAPI document, so a route
 * without a method fails them.
 */
export const ROUTE_METHODS = {
  "GET /workspace": "workspace.retrieve",
  "GET /summary": "summary.retrieve",

  "GET /leads": "leads.list",
  "POST /leads": "leads.create",
  "GET /leads/{id}": "leads.retrieve",
  "PATCH /leads/{id}": "leads.update",
  "DELETE /leads/{id}": "leads.del",
  "POST /leads/{id}/convert": "leads.convert",

  "GET /clients": "clients.list",
  "POST /clients": "clients.create",
  "GET /clients/{id}": "clients.retrieve",
  "PATCH /clients/{id}": "clients.update",
  "DELETE /clients/{id}": "clients.del",

  "GET /inventory/items": "inventory.items.list",
  "POST /inventory/items": "inventory.items.create",
  "GET /inventory/items/{id}": "inventory.items.retrieve",
  "PATCH /inventory/items/{id}": "inventory.items.update",
  "DELETE /inventory/items/{id}": "inventory.items.del",

  "GET /invoices": "invoices.list",
  "POST /invoices": "invoices.create",
  "GET /invoices/{id}": "invoices.retrieve",
  "PATCH /invoices/{id}": "invoices.update",
  "POST /invoices/{id}/send": "invoices.send",
  "POST /invoices/{id}/void": "invoices.void",
  "POST /invoices/{id}/accept": "invoices.accept",
  "POST /invoices/{id}/decline": "invoices.decline",
  "POST /invoices/{id}/convert": "invoices.convert",
  "POST /invoices/{invoice_id}/payments": "invoices.payments.create",

  "GET /projects": "projects.list",
  "POST /projects": "projects.create",
  "GET /projects/{id}": "projects.retrieve",
  "PATCH /projects/{id}": "projects.update",
  "DELETE /projects/{id}": "projects.del",
  "GET /projects/{project_id}/tasks": "projects.tasks.list",
  "POST /projects/{project_id}/tasks": "projects.tasks.create",
  "GET /tasks/{id}": "tasks.retrieve",
  "PATCH /tasks/{id}": "tasks.update",
  "DELETE /tasks/{id}": "tasks.del",

  "GET /request-logs": "requestLogs.list",
  "GET /request-logs/stats": "requestLogs.stats",

  "GET /webhook-endpoints": "webhookEndpoints.list",
  "POST /webhook-endpoints": "webhookEndpoints.create",
  "GET /webhook-endpoints/{id}": "webhookEndpoints.retrieve",
  "PATCH /webhook-endpoints/{id}": "webhookEndpoints.update",
  "DELETE /webhook-endpoints/{id}": "webhookEndpoints.del",
  "POST /webhook-endpoints/{id}/rotate-secret": "webhookEndpoints.rotateSecret",
  "POST /webhook-endpoints/{id}/test": "webhookEndpoints.test",
  "GET /webhook-deliveries": "webhookDeliveries.list",
  "GET /webhook-deliveries/{id}": "webhookDeliveries.retrieve",
  "POST /webhook-deliveries/{id}/replay": "webhookDeliveries.replay",
  "GET /events": "events.list",
  "GET /events/{id}": "events.retrieve",

  "GET /buckets": "buckets.list",
  "POST /buckets": "buckets.create",
  "GET /buckets/{id}": "buckets.retrieve",
  "DELETE /buckets/{id}": "buckets.del",
  "GET /buckets/{bucket_id}/objects": "buckets.objects.list",
  "POST /buckets/{bucket_id}/objects": "buckets.objects.upload",
  "GET /objects/{id}": "objects.retrieve",
  "DELETE /objects/{id}": "objects.del",
  "GET /objects/{id}/content": "objects.content",
  "GET /storage": "storage.retrieve",

  "GET /agent-settings": "agentSettings.retrieve",
  "PATCH /agent-settings": "agentSettings.update",
  "GET /trusted-providers": "trustedProviders.list",
  "POST /trusted-providers": "trustedProviders.create",
  "GET /trusted-providers/{id}": "trustedProviders.retrieve",
  "DELETE /trusted-providers/{id}": "trustedProviders.del",
  "GET /agent-registrations": "agentRegistrations.list",
  "GET /agent-registrations/{id}": "agentRegistrations.retrieve",
  "POST /agent-registrations/{id}/revoke": "agentRegistrations.revoke",

  "GET /audit-events": "auditEvents.list",
  "GET /audit-events/{id}": "auditEvents.retrieve",

  "GET /models": "models.list",
  "GET /models/{model}": "models.retrieve",
  "POST /chat/completions": "chat.completions.create",
  "POST /responses": "responses.create",
} as const;

export type RouteKey = keyof typeof ROUTE_METHODS;
