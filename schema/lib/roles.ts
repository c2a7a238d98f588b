import { AUDIT_SCOPE, SCOPES } from "./scopes.ts";

/** A workspace member's role (the `MembershipRole` of the data model). */
export type Role = "owner" | "member";

/** The business data a member reads and writes: everything but access, integrations and settings. */
export const MEMBER_WRITES: readonly string[] = [
  "clients.write",
  "leads.write",
  "invoices.write",
  "payments.write",
  "inventory.write",
  "projects.write",
  "storage.write",
];

/**
 * What a signed-in user may do in a workspace (docs/dashboard.md#sessions-and-roles): an owner
 * everything; a member reads everything but the audit log and writes the business data
 * (MEMBER_WRITES), but never keys, webhooks, agents, members or settings. The server and the
 * dashboard (which greys out what the role may not do) both read it here.
 *
 * @example roleScopes("member").has("invoices.write") // true; .has("webhooks.write") is false
 */
export function roleScopes(role: Role): ReadonlySet<string> {
  if (role === "owner") return new Set(SCOPES);
  return new Set([
    ...SCOPES.filter((scope) => scope.endsWith(".read") && scope !== AUDIT_SCOPE),
    ...MEMBER_WRITES,
  ]);
}
