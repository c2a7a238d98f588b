import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { recordAudit } from "../../schema/lib/audit.ts";
import { ApiError, internalError, validationFailed } from "../../schema/lib/errors.ts";
import { findUnicodeProblem, textProblem } from "../../schema/lib/limits.ts";
import { acceptInvitation, previewInvitation } from "../accounts/invitations.ts";
import {
  createAccount,
  EmailTakenError,
  isEmail,
  MAX_EMAIL,
  MAX_PASSWORD,
  MAX_WORKSPACE_NAME,
  MIN_PASSWORD,
  normalEmail,
} from "../accounts/workspaces.ts";
import { recordAccountAudit, recordSignInFailure, requestOrigin, userActor } from "../audit/record.ts";
import { CSRF_HEADER, csrfFailed } from "../auth/session-auth.ts";
import {
  changePassword,
  cookieHeader,
  createSession,
  endSession,
  findSession,
  PRE_SESSION_COOKIE,
  preSessionCsrf,
  readCookie,
  SESSION_COOKIE,
  SESSION_TTL_SECONDS,
  type SignedInSession,
  type SignIn,
  SignUpLimit,
  sameSecret,
  signInFor,
} from "../auth/sessions.ts";
import { clientAddress } from "../http/client-address.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { describeError, log } from "../observability/log.ts";
import { BODY_LIMITS } from "../policies/body-limits.ts";
import type { Config } from "../runtime/config.ts";
import { crossOriginRefusal } from "./same-origin.ts";

/** The dashboard's account API: sign-up, sign-in and the rest, JSON in and out. */
export const DASHBOARD_API_PATH = "/dashboard/api";
/** A body of this API holds a few short fields: docs/api/limits.md, server/policies/body-limits.ts. */
export const MAX_ACCOUNT_BODY_BYTES = BODY_LIMITS.protocol;
/** Memberships a session body lists (oldest first). */
export const MAX_LISTED_WORKSPACES = 100;

interface Services {
  config: Config;
  prisma: PrismaClient;
  signIn: SignIn;
  signUps: SignUpLimit;
}

/** `ip`: the client's address (limits count it); `state`: the request's, whose id and client audit records carry. */
type Handler = (request: Request, services: Services, ip: string, state: RequestState) => Promise<Response>;

export interface SessionBody {
  user: { id: string; email: string; created_at: string } | null;
  csrf_token: string;
  expires_at: string | null;
  workspaces: { id: string; name: string; plan: string; role: string }[];
}

const sessionRequired = () =>
  new ApiError(
    401,
    "authentication_error",
    "session_required",
    "Sign in first: this needs a signed-in session.",
  );
const invalidCredentials = () =>
  new ApiError(401, "authentication_error", "invalid_credentials", "The e-mail or password is not right.");
const emailTaken = () =>
  new ApiError(
    409,
    "invalid_request_error",
    "email_taken",
    "An account with this e-mail address exists already: sign in instead.",
    { param: "email" },
  );
const tooMany = (what: string, seconds: number) =>
  new ApiError(
    429,
    "rate_limit_error",
    "rate_limit_exceeded",
    `Too many ${what} from here. Retry after ${seconds} seconds.`,
    {
      headers: { "Retry-After": String(seconds) },
    },
  );
const notJson = () =>
  new ApiError(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    "Send the body as JSON, with 'Content-Type: application/json'.",
  );
const tooLarge = () =>
  new ApiError(
    413,
    "invalid_request_error",
    "payload_too_large",
    `The body exceeds ${MAX_ACCOUNT_BODY_BYTES} bytes.`,
  );

const json = (status: number, body: unknown, cookies: string[] = []) => {
  const headers = new Headers({ "Content-Type": "application/json; charset=utf-8" });
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return new Response(JSON.stringify(body), { status, headers });
};
const noContent = (cookies: string[] = []) => {
  const headers = new Headers();
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return new Response(null, { status: 204, headers });
};

/** The JSON object of the body, read with a bound; only `allowed` fields may be in it. */
async function readBody(request: Request, allowed: readonly string[]): Promise<Record<string, unknown>> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") throw notJson();
  if (Number(request.headers.get("content-length") ?? 0) > MAX_ACCOUNT_BODY_BYTES) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_ACCOUNT_BODY_BYTES) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new ApiError(400, "invalid_request_error", "invalid_json", "The body is not valid JSON.");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ApiError(400, "invalid_request_error", "invalid_json", "The body must be a JSON object.");
  }
  const record = body as Record<string, unknown>;
  const unknown = Object.keys(record).find((name) => !allowed.includes(name));
  if (unknown !== undefined)
    throw validationFailed(
      unknown.slice(0, 100),
      `Unknown field '${unknown.slice(0, 100)}': this request takes ${allowed.join(", ")}.`,
    );
  const malformed = findUnicodeProblem(record);
  if (malformed) throw validationFailed(malformed.param, `${malformed.param} ${malformed.problem}.`);
  return record;
}

/** How the dashboard's form names each field, for messages a person reads under it. */
const FIELD_NAMES: Record<string, string> = {
  email: "The e-mail address",
  password: "The password",
  current_password: "The current password",
  new_password: "The new password",
  workspace_name: "The workspace name",
  invitation_token: "The invitation",
  token: "The invitation",
};
const fieldName = (name: string) => FIELD_NAMES[name] ?? name;

function text(body: Record<string, unknown>, name: string, required: true): string;
function text(body: Record<string, unknown>, name: string, required: false): string | undefined;
function text(body: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = body[name];
  if (value === undefined || value === null) {
    if (required) throw validationFailed(name, `${fieldName(name)} is required.`);
    return undefined;
  }
  if (typeof value !== "string") throw validationFailed(name, `${fieldName(name)} must be a string.`);
  return value;
}

const codePoints = (value: string) => [...value].length;

function email(body: Record<string, unknown>): string {
  const value = normalEmail(text(body, "email", true));
  if (!isEmail(value))
    throw validationFailed(
      "email",
      `${fieldName("email")} must be an e-mail address of at most ${MAX_EMAIL} characters.`,
    );
  return value;
}

function password(body: Record<string, unknown>, name: string, checkLength: boolean): string {
  const value = text(body, name, true);
  if (
    value.length > 4 * MAX_PASSWORD ||
    (checkLength && (codePoints(value) < MIN_PASSWORD || codePoints(value) > MAX_PASSWORD))
  ) {
    throw validationFailed(
      name,
      `${fieldName(name)} must have ${MIN_PASSWORD} to ${MAX_PASSWORD.toLocaleString("en")} characters.`,
    );
  }
  if (value.length === 0) throw validationFailed(name, `${fieldName(name)} is required.`);
  return value;
}

function workspaceName(body: Record<string, unknown>, emailAddress: string): string {
  const given = text(body, "workspace_name", false);
  if (given === undefined)
    return `${[...emailAddress.slice(0, emailAddress.indexOf("@"))].slice(0, 80).join("")}'s workspace`;
  const name = given.trim();
  const problem = textProblem(name, MAX_WORKSPACE_NAME);
  if (!name || problem)
    throw validationFailed(
      "workspace_name",
      `${fieldName("workspace_name")} must have 1 to ${MAX_WORKSPACE_NAME} characters${problem && name ? ` (it ${problem})` : ""}.`,
    );
  return name;
}

/** What the dashboard knows after any account request: who is signed in, where, and the CSRF token to send. */
async function sessionBody(db: PrismaClient, session: SignedInSession): Promise<SessionBody> {
  const user = await db.user.findUniqueOrThrow({
    where: { id: session.userId },
    select: {
      id: true,
      email: true,
      createdAt: true,
      memberships: {
        orderBy: [{ createdAt: "asc" }, { workspaceId: "asc" }],
        take: MAX_LISTED_WORKSPACES,
        select: { role: true, workspace: { select: { id: true, name: true, plan: true } } },
      },
    },
  });
  return {
    user: { id: user.id, email: user.email, created_at: user.createdAt.toISOString() },
    csrf_token: session.csrfToken,
    expires_at: session.expiresAt.toISOString(),
    workspaces: user.memberships.map((m) => ({
      id: m.workspace.id,
      name: m.workspace.name,
      plan: m.workspace.plan,
      role: m.role,
    })),
  };
}

/** Signs `userId` in: a new session (ending the one the request had), its cookie, and the pre-session cookie cleared. */
async function signedIn(
  services: Services,
  request: Request,
  userId: string,
  status: number,
  state: RequestState,
): Promise<Response> {
  const previous = await findSession(services.prisma, services.config, request);
  if (previous) await endSession(services.prisma, previous);
  const { token, session } = await createSession(services.prisma, userId, (tx, user) =>
    recordAccountAudit(tx, user, "session.signed_in", state),
  );
  return json(status, await sessionBody(services.prisma, session), [
    cookieHeader(services.config, SESSION_COOKIE, token, SESSION_TTL_SECONDS),
    cookieHeader(services.config, PRE_SESSION_COOKIE, "", 0),
  ]);
}

/** Before sign-in: the double-submit token of the `kontor_csrf` cookie (or the live session's token, when there is one). */
async function checkPreSessionCsrf(services: Services, request: Request): Promise<void> {
  const given = request.headers.get(CSRF_HEADER) ?? undefined;
  const cookie = readCookie(services.config, request, PRE_SESSION_COOKIE);
  if (cookie && sameSecret(cookie, given)) return;
  const session = await findSession(services.prisma, services.config, request);
  if (session && sameSecret(session.csrfToken, given)) return;
  throw csrfFailed();
}

/** After sign-in: the session (else 401 session_required) and its CSRF token. */
async function signedInSession(services: Services, request: Request): Promise<SignedInSession> {
  const session = await findSession(services.prisma, services.config, request);
  if (!session) throw sessionRequired();
  if (!sameSecret(session.csrfToken, request.headers.get(CSRF_HEADER) ?? undefined)) throw csrfFailed();
  return session;
}

const ROUTES: Record<string, Partial<Record<"GET" | "POST", Handler>>> = {
  "/session": {
    async GET(request, services) {
      const session = await findSession(services.prisma, services.config, request);
      if (session) return json(200, await sessionBody(services.prisma, session));
      const csrf = preSessionCsrf(services.config, request);
      const body: SessionBody = { user: null, csrf_token: csrf.token, expires_at: null, workspaces: [] };
      return json(200, body, csrf.setCookie ? [csrf.setCookie] : []);
    },
  },
  "/sign-up": {
    async POST(request, services, ip, state) {
      await checkPreSessionCsrf(services, request);
      const body = await readBody(request, ["email", "password", "workspace_name", "invitation_token"]);
      const address = email(body);
      const secret = password(body, "password", true);
      const invitation = text(body, "invitation_token", false);
      // An invitee joins the inviting workspace; a workspace of their own only when they name one.
      const name =
        invitation !== undefined && (body.workspace_name ?? null) === null
          ? null
          : workspaceName(body, address);
      const wait = await services.signUps.take(ip);
      if (wait !== null) throw tooMany("sign-ups", wait);
      let created: { userId: string };
      try {
        created = await createAccount(
          services.prisma,
          { email: address, password: secret, workspaceName: name, plan: "free" },
          async (tx, userId, workspaceId) => {
            if (workspaceId)
              await recordAudit(tx, requestOrigin(userActor({ id: userId, email: address }), state), {
                action: "workspace.created",
                targetId: workspaceId,
                workspaceId,
              });
            if (invitation !== undefined)
              await acceptInvitation(
                tx,
                invitation,
                { id: userId, email: address },
                "invitation_token",
                state,
              );
          },
        );
      } catch (error) {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      }
      return signedIn(services, request, created.userId, 201, state);
    },
  },
  "/sign-in": {
    async POST(request, services, ip, state) {
      await checkPreSessionCsrf(services, request);
      const body = await readBody(request, ["email", "password"]);
      const address = text(body, "email", true);
      if (textProblem(address, MAX_EMAIL) !== null)
        throw validationFailed(
          "email",
          `${fieldName("email")} must be an e-mail address of at most ${MAX_EMAIL} characters.`,
        );
      const secret = password(body, "password", false);
      const result = await services.signIn.attempt({ email: address, password: secret, ip });
      if (result.outcome === "wait") throw tooMany("sign-in attempts", result.retryAfterSeconds);
      if (result.outcome === "wrong") {
        await recordSignInFailure(services.prisma, address, state);
        throw invalidCredentials();
      }
      return signedIn(services, request, result.userId, 200, state);
    },
  },
  "/sign-out": {
    async POST(request, services, _ip, state) {
      const session = await findSession(services.prisma, services.config, request);
      if (session) {
        if (!sameSecret(session.csrfToken, request.headers.get(CSRF_HEADER) ?? undefined)) throw csrfFailed();
        await endSession(services.prisma, session, (tx, user) =>
          recordAccountAudit(tx, user, "session.signed_out", state),
        );
      }
      return noContent([cookieHeader(services.config, SESSION_COOKIE, "", 0)]);
    },
  },
  "/password": {
    async POST(request, services, ip, state) {
      const session = await signedInSession(services, request);
      const body = await readBody(request, ["current_password", "new_password"]);
      const current = password(body, "current_password", false);
      const next = password(body, "new_password", true);
      if (next === current)
        throw validationFailed("new_password", "The new password must differ from the current one.");
      // Through the sign-in limiter: a stolen session cannot guess the password at leisure.
      const result = await services.signIn.attempt({ email: session.email, password: current, ip });
      if (result.outcome === "wait") throw tooMany("password attempts", result.retryAfterSeconds);
      if (result.outcome === "wrong")
        throw validationFailed("current_password", "The current password is not right.");
      await changePassword(services.prisma, session, next, (tx, user) =>
        recordAccountAudit(tx, user, "user.password_changed", state),
      );
      return noContent();
    },
  },
  "/invitations/lookup": {
    async POST(request, services) {
      await checkPreSessionCsrf(services, request);
      const body = await readBody(request, ["token"]);
      return json(200, await previewInvitation(services.prisma, text(body, "token", true), "token"));
    },
  },
  "/invitations/accept": {
    async POST(request, services, _ip, state) {
      const session = await signedInSession(services, request);
      const body = await readBody(request, ["token"]);
      const token = text(body, "token", true);
      await services.prisma.$transaction((tx) =>
        acceptInvitation(tx, token, { id: session.userId, email: session.email }, "token", state),
      );
      return json(200, await sessionBody(services.prisma, session));
    },
  },
};

const isAccountPath = (pathname: string) =>
  pathname === DASHBOARD_API_PATH || pathname.startsWith(`${DASHBOARD_API_PATH}/`);

/**
 * `/dashboard/api/*`: JSON account requests of the dashboard (docs/dashboard.md). Public paths
 * (they authenticate by their own means: the session cookie and a CSRF token on every POST), served
 * to the dashboard's own origin only (./same-origin.ts), with no CORS headers; errors in the API's
 * shape; nothing here is ever cached.
 */
export function useDashboardAccounts(options: {
  config: Config;
  prisma: PrismaClient;
  redis: Redis | undefined;
  redisNamespace: string;
}): Plugin {
  const services: Services = {
    config: options.config,
    prisma: options.prisma,
    signIn: signInFor(options.prisma, options.redis, options.redisNamespace),
    signUps: new SignUpLimit(options.redis, options.redisNamespace),
  };
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      if (!isAccountPath(url.pathname)) return;
      const state = stateOf(serverContext);
      const handlers = ROUTES[url.pathname.slice(DASHBOARD_API_PATH.length)];
      try {
        if (!handlers)
          throw new ApiError(
            404,
            "invalid_request_error",
            "not_found",
            `No route ${request.method} ${url.pathname}.`,
          );
        state.route = url.pathname;
        const handler =
          handlers[request.method as "GET" | "POST"] ??
          (request.method === "HEAD" ? handlers.GET : undefined);
        if (!handler) {
          const allow = Object.keys(handlers).join(", ");
          throw new ApiError(
            405,
            "invalid_request_error",
            "method_not_allowed",
            `${request.method} is not allowed on ${url.pathname}; use ${allow}.`,
            { headers: { Allow: allow } },
          );
        }
        // Every request of this API, GET /session (which hands out the CSRF token) included.
        const refusal = crossOriginRefusal(services.config, request);
        if (refusal) throw refusal;
        endResponse(
          await handler(request, services, clientAddress(serverContext, services.config) ?? "unknown", state),
        );
      } catch (error) {
        if (error instanceof ApiError) return endResponse(errorResponse(error, url.pathname, state));
        log("error", "dashboard account request failed", { request_id: state.id, ...describeError(error) });
        endResponse(errorResponse(internalError(), url.pathname, state));
      }
    },
    onResponse({ request, response }) {
      if (isAccountPath(new URL(request.url).pathname)) response.headers.set("Cache-Control", "no-store");
    },
  };
}
