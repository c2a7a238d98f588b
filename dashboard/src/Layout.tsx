import { type ReactNode, useEffect, useId, useState } from "react";
import { BASE, Link, useLocation } from "./router.tsx";
import { NAV_GROUPS, ROUTES } from "./routes.ts";
import { useSession } from "./session.tsx";
import { Button } from "./ui/Button.tsx";
import { SelectField } from "./ui/Field.tsx";

/** The signed-in frame: top bar (workspace switcher, user, sign-out) and the navigation. */
export function Layout({ children }: { children: ReactNode }) {
  const session = useSession();
  const { path } = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const [signingOut, setSigningOut] = useState(false);
  const navId = useId();
  // A detail screen (/dashboard/invoices/inv_…) marks its list's entry as where the user is.
  const currentIn = (to: string) =>
    path === to
      ? ("page" as const)
      : to !== BASE && path.startsWith(`${to}/`)
        ? ("location" as const)
        : undefined;

  // A phone's menu closes once a screen is chosen.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on each change of screen, which `path` names.
  useEffect(() => setMenuOpen(false), [path]);

  const signOut = async () => {
    setSigningOut(true);
    await session.signOut();
    setSigningOut(false);
  };

  return (
    <div className="shell">
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link to #main; the click also moves focus there. */}
      <a
        className="skip-link"
        href="#main"
        onClick={(event) => {
          event.preventDefault();
          document.getElementById("main")?.focus();
        }}
      >
        Skip to content
      </a>
      <header className="topbar">
        <Button
          className="menu-toggle"
          aria-expanded={menuOpen}
          aria-controls={navId}
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </Button>
        <Link to={BASE} className="brand">
          <img src="/logo.svg" alt="" width={28} height={28} />
          Kontor
        </Link>
        <WorkspaceSwitcher />
        <span className="user" data-testid="user-email">
          {session.body?.user?.email}
        </span>
        <Button busy={signingOut} onClick={() => void signOut()}>
          Sign out
        </Button>
      </header>
      <div className="body">
        <nav id={navId} className="sidenav" aria-label="Dashboard" data-open={menuOpen}>
          {NAV_GROUPS.map((group) => (
            <div key={group.id} className="sidenav-group">
              <h2 className="sidenav-heading" id={`${navId}-${group.id}`}>
                {group.title}
              </h2>
              <ul aria-labelledby={`${navId}-${group.id}`}>
                {ROUTES.filter(
                  (route) => route.nav === group.id && (!route.ownerOnly || session.isOwner),
                ).map((route) => (
                  <li key={route.path}>
                    <Link to={route.path} aria-current={currentIn(route.path)}>
                      {route.title}
                    </Link>
                  </li>
                ))}
                {group.id === "developers" && (
                  <>
                    <li>
                      {/* Outside the app's router: the server's rendered OpenAPI reference (server/rest/api-reference.ts). */}
                      <a href="/docs">API reference</a>
                    </li>
                    <li>
                      <a href="/graphql">GraphiQL</a>
                    </li>
                  </>
                )}
              </ul>
            </div>
          ))}
        </nav>
        <main id="main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}

function WorkspaceSwitcher() {
  const session = useSession();
  const workspaces = session.body?.workspaces ?? [];
  if (workspaces.length === 0) return null;
  return (
    <SelectField
      label="Workspace"
      value={session.workspaceId ?? ""}
      onChange={(event) => session.switchWorkspace(event.target.value)}
      options={workspaces.map((w) => ({ value: w.id, label: `${w.name} (${w.role})` }))}
    />
  );
}
