/**
 * An invitation's token, kept for this tab while the invitee signs in or signs up. It arrives in
 * the URL fragment (never sent to a server) and stays out of query strings for the same reason.
 */
const KEY = "kontor.invitation";
let inMemory: string | null = null;

export function rememberInvitation(token: string): void {
  inMemory = token;
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    // No storage: the token lives as long as the page.
  }
}

export function pendingInvitation(): string | null {
  try {
    return sessionStorage.getItem(KEY) ?? inMemory;
  } catch {
    return inMemory;
  }
}

export function forgetInvitation(): void {
  inMemory = null;
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // Nothing stored.
  }
}

/** The token of a fragment like `#token=inv_…`. */
export function tokenFromHash(hash: string): string | null {
  const token = new URLSearchParams(hash.replace(/^#/, "")).get("token");
  return token && token.length <= 200 ? token : null;
}

let joined: { workspace: string; role: string } | null = null;

/** Says which workspace the user just joined, for the invitation screen to tell them (after sign-up). */
export function rememberJoined(workspace: string, role: string): void {
  joined = { workspace, role };
}

/** What rememberJoined said, if anything; `clear` forgets it once shown. */
export function joinedWorkspace(clear = false): { workspace: string; role: string } | null {
  const value = joined;
  if (clear) joined = null;
  return value;
}

/** "a member", "an owner": a role in a sentence. */
export const roleInWords = (role: string) => (role === "owner" ? "an owner" : `a ${role}`);
