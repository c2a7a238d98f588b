import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from "react";

/**
 * A router of a few lines over the History API: the app's paths are fixed (routes.tsx), so a
 * library's pattern matching would be all weight and no use. Paths are full (`/dashboard/keys`).
 */

export const BASE = "/dashboard";
const NAVIGATE = "kontor:navigate";

function subscribe(onChange: () => void): () => void {
  window.addEventListener("popstate", onChange);
  window.addEventListener(NAVIGATE, onChange);
  return () => {
    window.removeEventListener("popstate", onChange);
    window.removeEventListener(NAVIGATE, onChange);
  };
}

const snapshot = () => `${location.pathname}${location.search}${location.hash}`;

export interface Location {
  /** Without a trailing slash: `/dashboard`, `/dashboard/keys`. */
  path: string;
  query: URLSearchParams;
  hash: string;
}

export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(href, location.origin);
  return { path: url.pathname.replace(/\/+$/, "") || "/", query: url.searchParams, hash: url.hash };
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (options.replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  window.dispatchEvent(new Event(NAVIGATE));
}

/** Where to go after signing in: only a path of this app (never another origin). */
export function safeNext(next: string | null): string {
  return next?.startsWith(`${BASE}`) && !next.startsWith("//") && !next.startsWith(`${BASE}/sign-`)
    ? next
    : BASE;
}

type LinkProps = Omit<AnchorHTMLAttributes<HTMLAnchorElement>, "href"> & { to: string };

/** An ordinary link (open in a new tab works), handled in the page on a plain click. */
export function Link({ to, onClick, ...rest }: LinkProps) {
  const { path } = useLocation();
  const handle = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={to} aria-current={path === to ? "page" : undefined} {...rest} onClick={handle} />;
}

/**
 * A screen's filters kept in the URL query, so a filtered list can be bookmarked, shared and
 * reached again with Back. Setting one replaces the history entry (typing in a filter is not a
 * step of its own) and drops the empty ones.
 *
 * @example
 * const [filters, setFilters] = useQueryState(["status", "client_id"]);
 * // filters.status === "" when the URL has none; setFilters({ status: "paid" }) keeps client_id
 */
export function useQueryState<Name extends string>(
  names: readonly Name[],
): [Record<Name, string>, (changes: Partial<Record<Name, string>>) => void] {
  const { path, query } = useLocation();
  const values = Object.fromEntries(names.map((name) => [name, query.get(name) ?? ""])) as Record<
    Name,
    string
  >;
  const set = (changes: Partial<Record<Name, string>>) => {
    const next = new URLSearchParams(location.search);
    for (const [name, value] of Object.entries(changes) as [Name, string | undefined][]) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    const search = next.toString();
    navigate(`${path}${search ? `?${search}` : ""}`, { replace: true });
  };
  return [values, set];
}
