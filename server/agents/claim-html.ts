import { createHash } from "node:crypto";
import { LOGO } from "../http/well-known.ts";
import { CLAIM_PAGE_PATH } from "./claims.ts";

const STYLE = `
*{box-sizing:border-box}
:root{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:16px;line-height:1.5;color:#0f172a;background:#f1f5f9}
body{margin:0;min-height:100vh}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.auth{min-height:100vh;display:grid;place-items:center;padding:1rem}
.auth-card{width:100%;max-width:26rem;background:#fff;border:1px solid #cbd5e1;border-radius:8px;padding:1.5rem;display:grid;gap:1rem}
.brand{color:#1f3a5f;font-weight:700;font-size:1.1rem;display:flex;align-items:center;gap:.5rem}
h1{font-size:1.5rem;line-height:1.25;margin:0}
p{margin:0}
form{display:grid;gap:.9rem}
label{font-weight:600;display:block;margin-bottom:-.65rem}
input,select{font:inherit;color:#0f172a;background:#fff;border:1px solid #64748b;border-radius:6px;padding:.5rem .6rem;min-height:2.75rem;width:100%}
input.code{font-size:1.6rem;letter-spacing:.4em;text-align:center;font-variant-numeric:tabular-nums}
.actions{display:flex;flex-wrap:wrap;gap:.5rem}
.actions .button{flex:1 1 8rem}
.button{font:inherit;font-weight:600;cursor:pointer;border-radius:6px;padding:.5rem .9rem;min-height:2.75rem;border:1px solid transparent}
.button:disabled{opacity:.55;cursor:not-allowed}
.button-primary{background:#1d4ed8;color:#fff}
.button-primary:hover{background:#1e40af}
.button-secondary{background:#fff;color:#0f172a;border-color:#64748b}
.button-secondary:hover{background:#f1f5f9}
.button-link{background:none;border:0;color:#1d4ed8;padding:.25rem;min-height:0;font-weight:400;text-decoration:underline}
ul.scopes{padding:0;list-style:none;display:flex;flex-wrap:wrap;gap:.2rem;margin:0}
ul.scopes li{display:inline-block;padding:.05rem .45rem;border-radius:999px;background:#f1f5f9;border:1px solid #cbd5e1;font:.8rem ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.banner{border-radius:8px;padding:.75rem 1rem;border:1px solid;overflow-wrap:anywhere}
.banner-error{background:#fef2f2;border-color:#fca5a5;color:#7f1d1d}
.banner-info{background:#eff6ff;border-color:#93c5fd;color:#1e3a8a}
.banner-warn{background:#fef9c3;border-color:#fde047;color:#713f12;font-weight:600}
.muted{color:#475569;font-size:.9rem}
.who{display:flex;justify-content:space-between;align-items:center;gap:.5rem}
.who form{margin:0}
.who .button-link{white-space:nowrap}
`;

/** The logo drawn in the page (no request: the claim page's visits stay few), beside the name it stands for. */
const BRAND_MARK = LOGO.replace(
  'role="img" aria-label="Kontor"',
  'width="28" height="28" aria-hidden="true"',
).trim();

/** No script at all; the one inline stylesheet is allowed by its hash. */
const CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash("sha256").update(STYLE).digest("base64")}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A whole page with the headers every claim page carries (its URL holds the attempt token). */
export function htmlPage(
  status: number,
  title: string,
  body: string,
  headers: Record<string, string | string[]> = {},
): Response {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Kontor</title>
<style>${STYLE}</style>
</head>
<body>
<main class="auth">
<div class="auth-card">
<span class="brand">${BRAND_MARK}Kontor</span>
<h1>${escapeHtml(title)}</h1>
${body}
</div>
</main>
</body>
</html>
`;
  const response = new Response(html, {
    status,
    headers: {
      "Content-Type": "text/html; charset=utf-8",
      "Content-Security-Policy": CSP,
      "X-Frame-Options": "DENY",
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "no-store",
      "Referrer-Policy": "no-referrer",
    },
  });
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) response.headers.append(name, one);
  }
  return response;
}

export const paragraph = (text: string) => `<p>${escapeHtml(text)}</p>`;

function message(kind: "error" | "info", text: string | undefined): string {
  return text
    ? `<div class="banner banner-${kind}" role="${kind === "error" ? "alert" : "status"}">${escapeHtml(text)}</div>`
    : "";
}

const hidden = (name: string, value: string) =>
  `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;

export function signInForm(input: {
  attemptToken: string;
  csrf: string;
  email: string;
  loginHint: string | null;
  error?: string | undefined;
}): string {
  const intro = input.loginHint
    ? `An agent asks to work for ${escapeHtml(input.loginHint)}. Only that account can approve it: sign in with it to see what the agent asks for.`
    : "An agent asks to work in one of your workspaces. Sign in to see what it asks for.";
  return `${message("error", input.error)}
<p>${intro}</p>
<form method="post" action="${CLAIM_PAGE_PATH}">
${hidden("action", "sign_in")}${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${escapeHtml(input.email)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
<div class="actions"><button class="button button-primary" type="submit">Sign in</button></div>
</form>`;
}

export interface DecisionFormInput {
  attemptToken: string;
  csrf: string;
  userEmail: string;
  agentName: string | null;
  scopes: string[];
  /** The workspaces the agent may be let into; one for an anonymous agent (its sandbox). */
  workspaces: { id: string; name: string }[];
  /** The workspace the sandbox is: fixed, not a choice. */
  sandbox: boolean;
  selectedWorkspaceId?: string | undefined;
  error?: string | undefined;
}

export function decisionForm(input: DecisionFormInput): string {
  const name = input.agentName ? `“${escapeHtml(input.agentName)}”` : "An unnamed agent";
  const scopes = input.scopes.length
    ? `<ul class="scopes">${input.scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join("")}</ul>`
    : `<p class="muted">No scopes.</p>`;
  const workspace = input.workspaces.length
    ? input.sandbox
      ? `<label>Workspace</label><p>${escapeHtml(input.workspaces[0]!.name)} <span class="muted">(the agent's own sandbox; approving makes it yours)</span></p>`
      : `<label for="workspace_id">Workspace</label>
<select id="workspace_id" name="workspace_id">${input.workspaces
          .map(
            (w) =>
              `<option value="${escapeHtml(w.id)}"${w.id === input.selectedWorkspaceId ? " selected" : ""}>${escapeHtml(w.name)}</option>`,
          )
          .join("")}</select>`
    : `<div class="banner banner-error">You own no workspace this agent could be let into. You can still deny it.</div>`;
  return `${message("error", input.error)}
<p>${name} asks to work in a workspace of yours with these scopes:</p>
${scopes}
<form method="post" action="${CLAIM_PAGE_PATH}">
${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}
${workspace}
<label for="code">Code shown by the agent</label>
<input id="code" class="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" placeholder="000000">
<div class="actions">
<button class="button button-primary" type="submit" name="action" value="approve"${input.workspaces.length ? "" : " disabled"}>Approve</button>
<button class="button button-secondary" type="submit" name="action" value="deny" formnovalidate>Deny</button>
</div>
</form>
<div class="who"><span class="muted">Signed in as ${escapeHtml(input.userEmail)}</span>
<form method="post" action="${CLAIM_PAGE_PATH}">${hidden("action", "sign_out")}${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}<button class="button button-link" type="submit">Sign out</button></form>
</div>`;
}

/** What an account the claim does not name sees: whom the request is for, and only Sign out or Deny. */
export function wrongPersonForm(input: {
  attemptToken: string;
  csrf: string;
  userEmail: string;
  loginHint: string;
  agentName: string | null;
  error?: string | undefined;
}): string {
  const name = input.agentName ? `“${escapeHtml(input.agentName)}”` : "An unnamed agent";
  const hint = escapeHtml(input.loginHint);
  return `${message("error", input.error)}
<div class="banner banner-warn" role="status">This request is for ${hint}.</div>
<p>${name} asks to work for ${hint}, and only that account can approve it. You are signed in as ${escapeHtml(input.userEmail)}.</p>
<p>If you are ${hint}, sign out and sign in with that account. If you did not expect this request, deny it: the agent is not let in, and it has to ask again.</p>
<form method="post" action="${CLAIM_PAGE_PATH}">
${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}
<div class="actions">
<button class="button button-primary" type="submit" name="action" value="sign_out">Sign out</button>
<button class="button button-secondary" type="submit" name="action" value="deny">Deny</button>
</div>
</form>`;
}

export const notice = (kind: "error" | "info", text: string, detail?: string) =>
  `${message(kind, text)}${detail ? paragraph(detail) : ""}`;
