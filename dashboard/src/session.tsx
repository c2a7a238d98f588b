import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from "react";
import { roleScopes } from "../../schema/lib/roles.ts";
import { accounts, type Role, type SessionBody, type WorkspaceSummary } from "./api/accounts.ts";
import { onExpired, onMembershipLost, setAuth } from "./api/auth-state.ts";

/**
 * Who is signed in, and in which of their workspaces the dashboard acts. Loaded from
 * GET /dashboard/api/session at start; replaced by what sign-in, sign-up and invitation accept
 * answer; cleared (with `expired` set) when the API says the session expired.
 */
export interface Session {
  status: "loading" | "signed-out" | "signed-in" | "unreachable";
  body: SessionBody | null;
  loadError: unknown;
  /** The session ended under the user (expired, or signed out elsewhere). */
  expired: boolean;
  workspaceId: string | null;
  workspace: WorkspaceSummary | null;
  role: Role | null;
  isOwner: boolean;
  /** Whether the role may use `scope` in this workspace (roleScopes): what a screen greys out. */
  can(scope: string): boolean;
  /** Takes a session body (sign-in, sign-up, invitation accept), acting in `workspaceId` when given. */
  apply(body: SessionBody, workspaceId?: string): void;
  reload(): Promise<void>;
  switchWorkspace(id: string): void;
  signOut(): Promise<void>;
}

const SessionContext = createContext<Session | null>(null);

const storageKey = (userId: string) => `kontor.workspace.${userId}`;

function chooseWorkspace(body: SessionBody, preferred?: string): string | null {
  if (!body.user || body.workspaces.length === 0) return null;
  const ids = body.workspaces.map((w) => w.id);
  const remembered = preferred ?? readStored(storageKey(body.user.id));
  return remembered && ids.includes(remembered) ? remembered : ids[0]!;
}

function readStored(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function store(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Storage refused (private mode): the choice lasts for this page only.
  }
}

export function SessionProvider({ children }: { children: ReactNode }) {
  const [body, setBody] = useState<SessionBody | null>(null);
  const [status, setStatus] = useState<Session["status"]>("loading");
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [expired, setExpired] = useState(false);
  const [workspaceId, setWorkspaceId] = useState<string | null>(null);

  const apply = useCallback((next: SessionBody, preferredWorkspace?: string) => {
    const chosen = chooseWorkspace(next, preferredWorkspace);
    setAuth({ csrfToken: next.csrf_token, workspaceId: chosen });
    if (next.user && chosen) store(storageKey(next.user.id), chosen);
    setBody(next);
    setWorkspaceId(chosen);
    setStatus(next.user ? "signed-in" : "signed-out");
    if (next.user) setExpired(false);
  }, []);

  const reload = useCallback(async () => {
    try {
      apply(await accounts.session());
      setLoadError(undefined);
    } catch (error) {
      setLoadError(error);
      setStatus("unreachable");
    }
  }, [apply]);

  useEffect(() => {
    void reload();
  }, [reload]);

  useEffect(
    () =>
      onExpired(() => {
        setExpired(true);
        setAuth({ csrfToken: null, workspaceId: null });
        // Signed out at once: the app goes to sign-in now, not after the session answer.
        setBody(null);
        setWorkspaceId(null);
        setStatus((current) => (current === "signed-in" ? "signed-out" : current));
        // A pre-session CSRF token for the sign-in form.
        void reload();
      }),
    [reload],
  );

  // Removed from the workspace meanwhile: the fresh list no longer holds it, and another is chosen.
  useEffect(() => onMembershipLost(() => void reload()), [reload]);

  const switchWorkspace = useCallback(
    (id: string) => {
      if (!body?.user || !body.workspaces.some((w) => w.id === id)) return;
      setAuth({ workspaceId: id });
      store(storageKey(body.user.id), id);
      setWorkspaceId(id);
    },
    [body],
  );

  const signOut = useCallback(async () => {
    await accounts.signOut().catch(() => undefined);
    setExpired(false);
    await reload();
  }, [reload]);

  const value = useMemo<Session>(() => {
    const workspace = body?.workspaces.find((w) => w.id === workspaceId) ?? null;
    const scopes = workspace ? roleScopes(workspace.role) : new Set<string>();
    return {
      status,
      body,
      loadError,
      expired,
      workspaceId,
      workspace,
      role: workspace?.role ?? null,
      isOwner: workspace?.role === "owner",
      can: (scope) => scopes.has(scope),
      apply,
      reload,
      switchWorkspace,
      signOut,
    };
  }, [status, body, loadError, expired, workspaceId, apply, reload, switchWorkspace, signOut]);

  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside SessionProvider");
  return session;
}
