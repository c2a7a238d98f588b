/** Helpers shared by the auth suites (credentials.test.ts, scopes.test.ts) and the agent suites. */

/** docs/api/scopes.md, written out rather than imported so the test checks the product against the contract. */
export const SCOPE_CATALOG = [
  "clients.read",
  "clients.write",
  "leads.read",
  "leads.write",
  "inventory.read",
  "inventory.write",
  "invoices.read",
  "invoices.write",
  "projects.read",
  "projects.write",
  "storage.read",
  "storage.write",
  "webhooks.read",
  "webhooks.write",
  "logs.read",
  "logs.write",
  "agents.read",
  "agents.write",
  "payments.write",
  "ai.responses",
  "ai.coding",
  "audit.read",
];
