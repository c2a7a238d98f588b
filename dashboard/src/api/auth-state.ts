/**
 * What every request needs from the session: the CSRF token (header `X-CSRF-Token`) and the
 * workspace it acts in (header `Kontor-Workspace`). The session provider keeps these current;
 * the request functions read them, and report an expired session back through `onExpired`.
 */
interface AuthState {
  csrfToken: string | null;
  workspaceId: string | null;
}

const state: AuthState = { csrfToken: null, workspaceId: null };
const expiredListeners = new Set<() => void>();
const membershipListeners = new Set<() => void>();

export function setAuth(next: Partial<AuthState>): void {
  Object.assign(state, next);
}

export function authHeaders(): Record<string, string> {
  return {
    ...(state.csrfToken && { "X-CSRF-Token": state.csrfToken }),
    ...(state.workspaceId && { "Kontor-Workspace": state.workspaceId }),
  };
}

export function onExpired(listener: () => void): () => void {
  expiredListeners.add(listener);
  return () => expiredListeners.delete(listener);
}

export function reportExpired(): void {
  for (const listener of expiredListeners) listener();
}

/**
 * What a refused session request tells the session: any 401 means the session is gone (expired,
 * signed out elsewhere, or its cookie cleared: then the API answers `unauthenticated`, not
 * `session_expired`), and `not_a_member` that the list of workspaces is stale.
 */
export function reportRefusal(error: { status: number; code: string }): void {
  if (error.status === 401) reportExpired();
  else if (error.code === "not_a_member") reportMembershipLost();
}

/** The API said the user is not a member of the workspace asked for (removed meanwhile): the session's list is stale. */
export function onMembershipLost(listener: () => void): () => void {
  membershipListeners.add(listener);
  return () => membershipListeners.delete(listener);
}

export function reportMembershipLost(): void {
  for (const listener of membershipListeners) listener();
}
