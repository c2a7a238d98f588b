import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { recordAccountAudit, recordSignInFailure } from "../audit/record.ts";
import {
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
  sameSecret,
  signInFor,
} from "../auth/sessions.ts";
import { crossOriginRefusal } from "../dashboard/same-origin.ts";
import { formEntries, MalformedFormError } from "../http/utf8.ts";
import { describeError, log } from "../observability/log.ts";
import { decisionForm, htmlPage, notice, signInForm, wrongPersonForm } from "./claim-html.ts";
import {
  CLAIM_PAGE_PATH,
  type ClaimAttemptView,
  claimIsFor,
  decideClaim,
  findClaimAttempt,
} from "./claims.ts";
import { type AgentClient, type AgentServices, agentRoutes } from "./plugin.ts";

/** A form of this page holds a few short fields. */
export const MAX_CLAIM_FORM_BYTES = 16 * 1024;

/** A page that ends the request early: a status, a title and what to tell the user. */
class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

const pageUrl = (attemptToken: string) =>
  `${CLAIM_PAGE_PATH}?claim_attempt_token=${encodeURIComponent(attemptToken)}`;
const seeOther = (location: string, cookies: string[]) =>
  htmlPage(303, "Continue", "", { Location: location, "Set-Cookie": cookies });

/** A form body read with a bound: the stream is cut off past the limit rather than buffered whole. */
async function readPageForm(request: Request): Promise<Map<string, string>> {
  const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new PageError(
      415,
      "Unsupported form",
      "This page only accepts its own forms. Go back and submit the form again.",
    );
  }
  const tooLarge = new PageError(413, "Form too large", "The form sent more than this page ever needs.");
  if (Number(request.headers.get("content-length") ?? 0) > MAX_CLAIM_FORM_BYTES) throw tooLarge;
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_CLAIM_FORM_BYTES) {
        await reader.cancel();
        throw tooLarge;
      }
      chunks.push(value);
    }
  }
  let entries: [string, string][];
  try {
    entries = formEntries(Buffer.concat(chunks).toString("utf8"));
  } catch (error) {
    if (error instanceof MalformedFormError)
      throw new PageError(
        400,
        "Malformed form",
        "The form sent text that is not UTF-8. Go back and submit the form again.",
      );
    throw error;
  }
  const form = new Map<string, string>();
  for (const [name, value] of entries) {
    if (form.has(name))
      throw new PageError(400, "Malformed form", `The field '${name}' was sent more than once.`);
    form.set(name, value);
  }
  return form;
}

/** The attempt a token names, open for a decision; any other state is the page to show instead. */
async function openAttempt(
  db: PrismaClient,
  attemptToken: string | undefined | null,
): Promise<ClaimAttemptView> {
  if (!attemptToken) {
    throw new PageError(
      400,
      "Incomplete link",
      "This link has no claim_attempt_token. Open the exact link the agent gave you.",
    );
  }
  const view = await findClaimAttempt(db, attemptToken);
  if (!view)
    throw new PageError(
      404,
      "Unknown link",
      "This link does not match any request. Open the exact link the agent gave you.",
    );
  switch (view.status) {
    case "pending":
      return view;
    case "approved":
      throw new PageError(
        410,
        "Already approved",
        "This agent was already approved. You can close this page; the agent will continue.",
      );
    case "denied":
      throw new PageError(410, "Already denied", "This request was denied. The agent was not let in.");
    case "expired":
      throw new PageError(
        410,
        "Link expired",
        "The request and its code expired after 10 minutes. Ask the agent to start again.",
      );
    case "dead":
      throw new PageError(
        410,
        "Request closed",
        view.wrongCodesLeft === 0
          ? "Too many wrong codes were typed, so this request is closed. Ask the agent to start again."
          : "This request is closed: the agent started a newer one or it expired. Ask the agent to start again.",
      );
  }
}

async function signInPage(
  services: AgentServices,
  request: Request,
  view: ClaimAttemptView,
  attemptToken: string,
  status = 200,
  error?: string,
  email?: string,
) {
  const csrf = preSessionCsrf(services.config, request);
  return htmlPage(
    status,
    "Sign in to Kontor",
    signInForm({
      attemptToken,
      csrf: csrf.token,
      email: email ?? view.loginHint ?? "",
      loginHint: view.loginHint,
      error,
    }),
    csrf.setCookie ? { "Set-Cookie": csrf.setCookie } : {},
  );
}

/**
 * The workspaces the user may let this agent into: an anonymous agent's sandbox, or those they own
 * (for an ID-JAG agent, only the workspace whose trusted provider vouched for it).
 */
async function targetWorkspaces(db: PrismaClient, view: ClaimAttemptView, userId: string) {
  if (view.registration.sandboxWorkspaceId) {
    const sandbox = await db.workspace.findUnique({
      where: { id: view.registration.sandboxWorkspaceId },
      select: { id: true, name: true },
    });
    return sandbox ? [sandbox] : [];
  }
  const memberships = await db.membership.findMany({
    where: {
      userId,
      role: "owner",
      workspace: { sandboxExpiresAt: null },
      ...(view.registration.providerWorkspaceId && { workspaceId: view.registration.providerWorkspaceId }),
    },
    select: { workspace: { select: { id: true, name: true } } },
    orderBy: { workspace: { name: "asc" } },
  });
  return memberships.map((m) => m.workspace);
}

async function decisionPage(
  services: AgentServices,
  view: ClaimAttemptView,
  attemptToken: string,
  session: SignedInSession,
  status = 200,
  error?: string,
  selectedWorkspaceId?: string,
) {
  const workspaces = await targetWorkspaces(services.prisma, view, session.userId);
  return htmlPage(
    status,
    "Let an agent in?",
    decisionForm({
      attemptToken,
      csrf: session.csrfToken,
      userEmail: session.email,
      agentName: view.registration.agentName,
      scopes: view.registration.scopes,
      workspaces,
      sandbox: view.registration.sandboxWorkspaceId !== null,
      selectedWorkspaceId,
      error,
    }),
  );
}

/** The page for a signed-in account the claim does not name: it sees whom the request is for and may only sign out or deny. */
function wrongPersonPage(
  view: ClaimAttemptView,
  attemptToken: string,
  session: SignedInSession,
  status = 200,
  error?: string,
) {
  const loginHint = view.loginHint ?? "";
  return htmlPage(
    status,
    "This request is for someone else",
    wrongPersonForm({
      attemptToken,
      csrf: session.csrfToken,
      userEmail: session.email,
      loginHint,
      agentName: view.registration.agentName,
      error,
    }),
  );
}

/** Why an approval by the wrong account was refused. */
const wrongPersonError = (loginHint: string, email: string) =>
  `Only ${loginHint} can approve this request; you are signed in as ${email}. Nothing was decided.`;

const forbidden = () =>
  new PageError(
    403,
    "Form refused",
    "The form's security token is missing or out of date, so nothing was done. Reload the page and try again.",
  );

async function show(request: Request, services: AgentServices, url: URL): Promise<Response> {
  const attemptToken = url.searchParams.get("claim_attempt_token");
  const view = await openAttempt(services.prisma, attemptToken);
  const session = await findSession(services.prisma, services.config, request);
  if (!session) return signInPage(services, request, view, attemptToken!);
  return claimIsFor(view.loginHint, session.email)
    ? decisionPage(services, view, attemptToken!, session)
    : wrongPersonPage(view, attemptToken!, session);
}

async function submit(request: Request, services: AgentServices, client: AgentClient): Promise<Response> {
  const db = services.prisma;
  // Only this page's own forms, from this origin (the dashboard's rule), on top of their CSRF token.
  if (crossOriginRefusal(services.config, request)) {
    throw new PageError(
      403,
      "Form refused",
      "This form was sent from another site, so nothing was done. Open the link the agent gave you and try again.",
    );
  }
  const form = await readPageForm(request);
  const action = form.get("action");
  const attemptToken = form.get("claim_attempt_token");
  const csrfGiven = form.get("csrf_token");

  if (action === "sign_in") {
    const expected = readCookie(services.config, request, PRE_SESSION_COOKIE);
    if (!expected || !sameSecret(expected, csrfGiven)) throw forbidden();
    const view = await openAttempt(db, attemptToken);
    const email = (form.get("email") ?? "").slice(0, 320);
    const result = await signInFor(services.prisma, services.redis, services.redisNamespace).attempt({
      email,
      password: (form.get("password") ?? "").slice(0, 1024),
      ip: client.ip,
    });
    if (result.outcome === "wait") {
      const minutes = Math.ceil(result.retryAfterSeconds / 60);
      const response = await signInPage(
        services,
        request,
        view,
        attemptToken!,
        429,
        `Too many sign-in attempts. Wait ${minutes} minute${minutes === 1 ? "" : "s"} and try again.`,
        email,
      );
      response.headers.set("Retry-After", String(result.retryAfterSeconds));
      return response;
    }
    if (result.outcome === "wrong") {
      await recordSignInFailure(db, email, client.state);
      return signInPage(
        services,
        request,
        view,
        attemptToken!,
        401,
        "The e-mail or password is not right.",
        email,
      );
    }
    const { token } = await createSession(db, result.userId, (tx, user) =>
      recordAccountAudit(tx, user, "session.signed_in", client.state),
    );
    return seeOther(pageUrl(attemptToken!), [
      cookieHeader(services.config, SESSION_COOKIE, token, SESSION_TTL_SECONDS),
      cookieHeader(services.config, PRE_SESSION_COOKIE, "", 0),
    ]);
  }

  const session = await findSession(db, services.config, request);
  if (action === "sign_out") {
    if (session) {
      if (!sameSecret(session.csrfToken, csrfGiven)) throw forbidden();
      await endSession(db, session, (tx, user) =>
        recordAccountAudit(tx, user, "session.signed_out", client.state),
      );
    }
    const cleared = cookieHeader(services.config, SESSION_COOKIE, "", 0);
    return attemptToken
      ? seeOther(pageUrl(attemptToken), [cleared])
      : htmlPage(200, "Signed out", notice("info", "You are signed out."), { "Set-Cookie": cleared });
  }
  if (action !== "approve" && action !== "deny")
    throw new PageError(400, "Malformed form", "The form named no action this page knows.");

  if (!session) {
    const view = await openAttempt(db, attemptToken);
    return signInPage(
      services,
      request,
      view,
      attemptToken!,
      401,
      "Your session ended. Sign in again; nothing was decided.",
    );
  }
  if (!sameSecret(session.csrfToken, csrfGiven)) throw forbidden();
  const view = await openAttempt(db, attemptToken);
  const workspaceId = form.get("workspace_id") || undefined;
  const code = (form.get("code") ?? "").trim();
  // Only the account the claim names may approve; decideClaim holds the same rule under its lock.
  if (action === "approve" && !claimIsFor(view.loginHint, session.email)) {
    return wrongPersonPage(
      view,
      attemptToken!,
      session,
      403,
      wrongPersonError(view.loginHint!, session.email),
    );
  }
  if (action === "approve" && !/^\d{6}$/.test(code)) {
    return decisionPage(
      services,
      view,
      attemptToken!,
      session,
      422,
      "Type the 6-digit code the agent shows you.",
      workspaceId,
    );
  }
  const decision = await decideClaim(
    db,
    {
      attemptId: view.attemptId,
      userId: session.userId,
      approve: action === "approve",
      code,
      workspaceId,
      request: client.state,
    },
    services.revocations,
  );
  switch (decision.outcome) {
    case "approved":
      return htmlPage(
        200,
        "Agent approved",
        notice("info", "The agent is let in.", "You can close this page; the agent will continue."),
      );
    case "denied":
      return htmlPage(
        200,
        "Agent denied",
        notice("info", "The agent was not let in.", "You can close this page."),
      );
    case "wrong_person":
      return wrongPersonPage(
        view,
        attemptToken!,
        session,
        403,
        wrongPersonError(decision.loginHint, session.email),
      );
    case "wrong_code": {
      const left = decision.wrongCodesLeft;
      return decisionPage(
        services,
        view,
        attemptToken!,
        session,
        422,
        `That code is not right. ${left} ${left === 1 ? "try" : "tries"} left.`,
        workspaceId,
      );
    }
    case "refused":
      return decisionPage(services, view, attemptToken!, session, 403, decision.message, workspaceId);
    case "closed":
      throw new PageError(
        410,
        "Request closed",
        {
          too_many_wrong_codes:
            "Too many wrong codes were typed, so this request is closed. Ask the agent to start again.",
          expired: "The request and its code expired after 10 minutes. Ask the agent to start again.",
          decided: "This request was already decided.",
        }[decision.reason],
      );
  }
}

/** Renders a PageError (or an unexpected failure) as a page: this path is read by people, not clients. */
async function asPage(client: AgentClient, run: () => Promise<Response>): Promise<Response> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof PageError) return htmlPage(error.status, error.title, notice("error", error.detail));
    log("error", "claim page failed", { request_id: client.state.id, ...describeError(error) });
    return htmlPage(
      500,
      "Something went wrong",
      notice("error", "Kontor could not show this page. Nothing was decided; try again in a moment."),
    );
  }
}

agentRoutes({
  [CLAIM_PAGE_PATH]: {
    GET: (request, services, url, client) => asPage(client, () => show(request, services, url)),
    POST: (request, services, _url, client) => asPage(client, () => submit(request, services, client)),
  },
});
