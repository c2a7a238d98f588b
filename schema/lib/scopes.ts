export const RESOURCES = ["clients", "leads", "inventory", "invoices", "projects", "storage", "webhooks", "logs"] as const;
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
