import type { Credential } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { roleScopes } from "../../schema/lib/roles.ts";
import { crossOriginRefusal } from "../dashboard/same-origin.ts";
import type { Config } from "../runtime/config.ts";
import { findSession, readCookie, SESSION_COOKIE, sameSecret } from "./sessions.ts";

/** The header that carries the session's CSRF token on every request made with the cookie. */
export const CSRF_HEADER = "x-csrf-token";
/** The workspace a dashboard request acts in; without it, the user's oldest membership. */
export const WORKSPACE_HEADER = "kontor-workspace";

const WORKSPACE_ID = /^ws_[0-9A-HJKMNP-TV-Z]{26}$/;

export const csrfFailed = () =>
  new ApiError(
    403,
    "permission_error",
    "csrf_failed",
    "The X-CSRF-Token header is missing or does not match this session: reload the dashboard and try again.",
  );

/**
 * The session cookie came without X-CSRF-Token: a tool such as GraphiQL opened while signed in to
 * the dashboard (the browser sends the cookie along), or a dashboard fetch that forgot the header.
 */
export const csrfMissing = () =>
  new ApiError(
    403,
    "permission_error",
    "csrf_failed",
    'This request carries the dashboard\'s session cookie but no X-CSRF-Token header. In GraphiQL, use an API key: in the Headers tab, paste {"Authorization": "Bearer ktr_live_…"} (a Bearer key wins over the cookie). A dashboard request sends the session\'s csrf_token (from GET /dashboard/api/session) as X-CSRF-Token.',
  );

export const sessionExpired = (headers?: Record<string, string>) =>
  new ApiError(
    401,
    "authentication_error",
    "session_expired",
    "The session is unknown or has expired: sign in again.",
    headers ? { headers } : {},
  );

export const notAMember = () =>
  new ApiError(
    403,
    "permission_error",
    "not_a_member",
    "You are not a member of the workspace named by Kontor-Workspace (or of any workspace).",
  );

/** Whether the request carries a session cookie (whose value may still be unknown or expired). */
export const hasSessionCookie = (config: Pick<Config, "env">, request: Request) =>
  readCookie(config, request, SESSION_COOKIE) !== undefined;

/**
 * The credential of a request made with the dashboard's session cookie and no Authorization header:
 * it must come from the dashboard's own origin (./same-origin.ts), the session must be live,
 * `X-CSRF-Token` must be its token (on every method: the cookie rides along on any request a browser
 * makes), and the user must be a member of the workspace it names.
 */
export async function sessionCredential(
  db: PrismaClient,
  config: Pick<Config, "env" | "publicUrl">,
  request: Request,
  challenge: Record<string, string>,
): Promise<Credential | ApiError> {
  const refusal = crossOriginRefusal(config, request);
  if (refusal) return refusal;
  const session = await findSession(db, config, request);
  if (!session) return sessionExpired(challenge);
  const csrf = request.headers.get(CSRF_HEADER);
  if (csrf === null) return csrfMissing();
  if (!sameSecret(session.csrfToken, csrf)) return csrfFailed();
  const wanted = request.headers.get(WORKSPACE_HEADER)?.trim() || undefined;
  if (wanted !== undefined && !WORKSPACE_ID.test(wanted)) return notAMember();
  const membership = await db.membership.findFirst({
    where: { userId: session.userId, ...(wanted !== undefined && { workspaceId: wanted }) },
    orderBy: [{ createdAt: "asc" }, { workspaceId: "asc" }],
    select: { role: true, workspaceId: true, workspace: { select: { plan: true } } },
  });
  if (!membership) return notAMember();
  return {
    kind: "session",
    id: session.userId,
    userId: session.userId,
    role: membership.role,
    workspaceId: membership.workspaceId,
    plan: membership.workspace.plan,
    scopes: roleScopes(membership.role),
  };
}
