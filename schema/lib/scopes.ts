export const RESOURCES = ["clients", "leads", "inventory", "invoices", "projects", "storage", "webhooks", "logs", "agents"] as const;
export type Resource = (typeof RESOURCES)[number];

/** decisions.md §5. `write` never implies `read`. */
export const SCOPES: readonly string[] = [
  ...RESOURCES.flatMap((r) => [`${r}.read`, `${r}.write`]),
  "payments.write",
  "ai.responses",
  "ai.coding",
];

export function isScope(value: string): boolean {
  return SCOPES.includes(value);
}

/** A workspace's agent settings, providers and registrations are for API keys only, never agent tokens. */
export const AGENT_SCOPES: readonly string[] = SCOPES.filter((scope) => !scope.startsWith("agents."));
