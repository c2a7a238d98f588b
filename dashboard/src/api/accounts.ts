import { authHeaders, reportRefusal } from "./auth-state.ts";
import { apiError, networkError, unexpectedAnswer } from "./errors.ts";

/** The accounts API under /dashboard/api (dashboard contract §1). */

export type Role = "owner" | "member";

export interface WorkspaceSummary {
  id: string;
  name: string;
  plan: string;
  role: Role;
}

export interface SessionBody {
  user: { id: string; email: string; created_at: string } | null;
  csrf_token: string;
  expires_at: string | null;
  workspaces: WorkspaceSummary[];
}

/** A pending invitation as its token shows it (POST /dashboard/api/invitations/lookup). */
export interface InvitationPreview {
  email: string;
  role: Role;
  workspace: { id: string; name: string };
  expires_at: string;
}

const BASE = "/dashboard/api";

/**
 * A request of the accounts API. `session`: made with the signed-in session (not sign-in or
 * sign-up, whose 401 is a wrong password), so that a 401 signs the dashboard out.
 */
async function call<T>(
  method: "GET" | "POST",
  path: string,
  body?: Record<string, unknown>,
  session = false,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${BASE}${path}`, {
      method,
      credentials: "same-origin",
      headers: {
        Accept: "application/json",
        ...(body && { "Content-Type": "application/json" }),
        ...authHeaders(),
      },
      ...(body && { body: JSON.stringify(body) }),
    });
  } catch {
    throw networkError();
  }
  if (response.status === 204) return undefined as T;
  const json = (await response.json().catch(() => null)) as ({ error?: Record<string, unknown> } & T) | null;
  if (!json || typeof json !== "object") throw unexpectedAnswer(response.status);
  if (!response.ok) {
    const error = apiError(response.status, json.error ?? {}, response);
    if (session) reportRefusal(error);
    throw error;
  }
  return json;
}

export const accounts = {
  session: () => call<SessionBody>("GET", "/session"),
  signIn: (input: { email: string; password: string }) => call<SessionBody>("POST", "/sign-in", input),
  signUp: (input: { email: string; password: string; workspace_name?: string; invitation_token?: string }) =>
    call<SessionBody>("POST", "/sign-up", input),
  signOut: () => call<void>("POST", "/sign-out", {}),
  changePassword: (input: { current_password: string; new_password: string }) =>
    call<void>("POST", "/password", input, true),
  lookupInvitation: (token: string) => call<InvitationPreview>("POST", "/invitations/lookup", { token }),
  acceptInvitation: (token: string) => call<SessionBody>("POST", "/invitations/accept", { token }, true),
};
