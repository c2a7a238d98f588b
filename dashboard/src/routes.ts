import { type ComponentType, type LazyExoticComponent, lazy } from "react";
import { BASE } from "./router.tsx";

/**
 * Every screen of the app. `access`: `guest` screens are for signed-out users (a signed-in user
 * goes on to the overview), `user` screens need a session (a signed-out user is sent to sign-in
 * and comes back), `any` screens work both ways. `nav` puts the screen in the side navigation.
 */
export interface Route {
  /** A full path; a segment `:name` matches any one segment (`/dashboard/invoices/:id`), read with `routeParam`. */
  path: string;
  title: string;
  access: "guest" | "user" | "any";
  /** The side navigation's group the screen is listed in; detail screens are in none. */
  nav?: NavGroup;
  /** Listed in the navigation for owners only (the API refuses members with owner_required). */
  ownerOnly?: boolean;
  screen: LazyExoticComponent<ComponentType>;
}

/** The side navigation's groups, in order: the business first, then the developers' tools. */
export const NAV_GROUPS = [
  { id: "business", title: "Business" },
  { id: "developers", title: "Developers" },
  { id: "workspace", title: "Settings" },
] as const;
export type NavGroup = (typeof NAV_GROUPS)[number]["id"];

export const ROUTES: readonly Route[] = [
  {
    path: BASE,
    title: "Overview",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/overview/Overview.tsx")),
  },
  {
    path: `${BASE}/leads`,
    title: "Leads",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/leads/Leads.tsx")),
  },
  {
    path: `${BASE}/leads/:id`,
    title: "Lead",
    access: "user",
    screen: lazy(() => import("./screens/leads/LeadDetail.tsx")),
  },
  {
    path: `${BASE}/clients`,
    title: "Clients",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/clients/Clients.tsx")),
  },
  {
    path: `${BASE}/clients/:id`,
    title: "Client",
    access: "user",
    screen: lazy(() => import("./screens/clients/ClientDetail.tsx")),
  },
  {
    path: `${BASE}/invoices`,
    title: "Invoices",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/invoices/Invoices.tsx")),
  },
  {
    path: `${BASE}/invoices/new`,
    title: "New invoice or quote",
    access: "user",
    screen: lazy(() => import("./screens/invoices/NewInvoice.tsx")),
  },
  {
    path: `${BASE}/invoices/:id`,
    title: "Invoice",
    access: "user",
    screen: lazy(() => import("./screens/invoices/InvoiceDetail.tsx")),
  },
  {
    path: `${BASE}/invoices/:id/edit`,
    title: "Edit invoice",
    access: "user",
    screen: lazy(() => import("./screens/invoices/EditInvoice.tsx")),
  },
  {
    path: `${BASE}/keys`,
    title: "API keys",
    access: "user",
    nav: "developers",
    screen: lazy(() => import("./screens/keys/Keys.tsx")),
  },
  {
    path: `${BASE}/members`,
    title: "Members",
    access: "user",
    nav: "workspace",
    screen: lazy(() => import("./screens/Members.tsx")),
  },
  {
    path: `${BASE}/audit`,
    title: "Audit log",
    access: "user",
    nav: "workspace",
    ownerOnly: true,
    screen: lazy(() => import("./screens/audit/AuditLog.tsx")),
  },
  {
    path: `${BASE}/logs`,
    title: "Logs",
    access: "user",
    nav: "developers",
    screen: lazy(() => import("./screens/logs/Logs.tsx")),
  },
  {
    path: `${BASE}/logs/:id`,
    title: "Request",
    access: "user",
    screen: lazy(() => import("./screens/logs/LogRequest.tsx")),
  },
  {
    path: `${BASE}/webhooks`,
    title: "Webhooks",
    access: "user",
    nav: "developers",
    screen: lazy(() => import("./screens/webhooks/Webhooks.tsx")),
  },
  {
    path: `${BASE}/events`,
    title: "Events",
    access: "user",
    nav: "developers",
    screen: lazy(() => import("./screens/events/Events.tsx")),
  },
  {
    path: `${BASE}/events/:id`,
    title: "Event",
    access: "user",
    screen: lazy(() => import("./screens/events/EventDetail.tsx")),
  },
  {
    path: `${BASE}/agents`,
    title: "Agents",
    access: "user",
    nav: "developers",
    screen: lazy(() => import("./screens/agents/Agents.tsx")),
  },
  {
    path: `${BASE}/inventory`,
    title: "Inventory",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/inventory/Inventory.tsx")),
  },
  {
    path: `${BASE}/inventory/:id`,
    title: "Inventory item",
    access: "user",
    screen: lazy(() => import("./screens/inventory/InventoryItem.tsx")),
  },
  {
    path: `${BASE}/projects`,
    title: "Projects",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/projects/Projects.tsx")),
  },
  {
    path: `${BASE}/projects/:id`,
    title: "Project",
    access: "user",
    screen: lazy(() => import("./screens/projects/Project.tsx")),
  },
  {
    path: `${BASE}/storage`,
    title: "Storage",
    access: "user",
    nav: "business",
    screen: lazy(() => import("./screens/storage/Storage.tsx")),
  },
  {
    path: `${BASE}/account`,
    title: "Account",
    access: "user",
    nav: "workspace",
    screen: lazy(() => import("./screens/Account.tsx")),
  },
  {
    path: `${BASE}/invitations`,
    title: "Invitation",
    access: "any",
    screen: lazy(() => import("./screens/Invitation.tsx")),
  },
  {
    path: `${BASE}/sign-in`,
    title: "Sign in",
    access: "guest",
    screen: lazy(() => import("./screens/SignIn.tsx")),
  },
  {
    path: `${BASE}/sign-up`,
    title: "Sign up",
    access: "guest",
    screen: lazy(() => import("./screens/SignUp.tsx")),
  },
];

export const NOT_FOUND = lazy(() => import("./screens/NotFound.tsx"));

const matches = (pattern: string, path: string) => {
  const want = pattern.split("/");
  const have = path.split("/");
  return (
    want.length === have.length &&
    want.every((segment, i) => (segment.startsWith(":") ? have[i] !== "" : segment === have[i]))
  );
};

export function findRoute(path: string): Route | undefined {
  return ROUTES.find((route) => route.path === path) ?? ROUTES.find((route) => matches(route.path, path));
}

/**
 * The segment of `path` that the route's `:name` stands for, decoded.
 *
 * @example routeParam("/dashboard/invoices/:id", "/dashboard/invoices/inv_01") // "inv_01"
 */
export function routeParam(pattern: string, path: string, name = "id"): string {
  const index = pattern.split("/").indexOf(`:${name}`);
  return decodeURIComponent(path.split("/")[index] ?? "");
}
