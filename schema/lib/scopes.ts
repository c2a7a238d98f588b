export const RESOURCES = [
  "clients",
  "leads",
  "inventory",
  "invoices",
  "projects",
  "storage",
  "webhooks",
  "logs",
  "agents",
] as const;
export type Resource = (typeof RESOURCES)[number];

/** docs/api/scopes.md. `write` never implies `read`. */
export const SCOPES: readonly string[] = [
  ...RESOURCES.flatMap((r) => [`${r}.read`, `${r}.write`]),
  "payments.write",
  "ai.responses",
  "ai.coding",
  "audit.read",
];

export function isScope(value: string): boolean {
  return SCOPES.includes(value);
}

/** The audit log (schema/resources/audit-event.ts): API keys and owners' sessions only, never agent tokens or members. */
export const AUDIT_SCOPE = "audit.read";

/**
 * Whether an agent token may hold `scope`: a workspace's agent settings, providers and
 * registrations, and its audit log, are for API keys only.
 *
 * @example isAgentScope("leads.read") // true; isAgentScope("agents.write") and isAgentScope("audit.read") are false
 */
export function isAgentScope(scope: string): boolean {
  return SCOPES.includes(scope) && !scope.startsWith("agents.") && scope !== AUDIT_SCOPE;
}

/** Every scope an agent token may hold (isAgentScope). */
export const AGENT_SCOPES: readonly string[] = SCOPES.filter(isAgentScope);
