import { createHash } from "node:crypto";
import { CLAIM_PAGE_PATH } from "./claims.ts";

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1c1e21;background:#f3f4f6}
main{max-width:30rem;margin:0 auto;padding:1.5rem 1rem}
.card{background:#fff;border:1px solid #d9dce1;border-radius:12px;padding:1.25rem 1.25rem 1.5rem}
h1{font-size:1.35rem;margin:0 0 .75rem}
p{margin:.5rem 0}
.brand{font-weight:700;letter-spacing:.02em;color:#4338ca;margin:0 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .3rem}
input,select,button{font:inherit;width:100%;border-radius:8px;border:1px solid #b8bdc6;padding:.7rem .8rem;background:#fff;color:inherit}
input:focus,select:focus,button:focus{outline:3px solid #a5b4fc;outline-offset:1px}
input.code{font-size:1.6rem;letter-spacing:.4em;text-align:center;font-variant-numeric:tabular-nums}
.actions{display:flex;gap:.75rem;margin-top:1.25rem;flex-wrap:wrap}
.actions button{flex:1 1 8rem}
button{cursor:pointer;font-weight:600;border:0;padding:.8rem}
button.primary{background:#4338ca;color:#fff}
button.secondary{background:#e5e7eb;color:#1c1e21}
button.link{background:none;color:#4338ca;width:auto;padding:0;font-weight:400;text-decoration:underline}
ul.scopes{padding:0;list-style:none;display:flex;flex-wrap:wrap;gap:.4rem;margin:.4rem 0}
ul.scopes li{background:#eef2ff;border-radius:6px;padding:.15rem .5rem;font:14px ui-monospace,Menlo,Consolas,monospace}
.message{border-radius:8px;padding:.7rem .8rem;margin:0 0 1rem}
.message.error{background:#fef2f2;color:#991b1b;border:1px solid #fecaca}
.message.info{background:#ecfdf5;color:#065f46;border:1px solid #a7f3d0}
.message.warn{background:#fffbeb;color:#92400e;border:1px solid #fde68a;font-weight:600}
.muted{color:#5b6170;font-size:.9rem}
.who{display:flex;justify-content:space-between;align-items:center;gap:.5rem;margin-top:1.25rem}
.who form{margin:0}
`;

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
<main>
<p class="brand">Kontor</p>
<div class="card">
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
    ? `<div class="message ${kind}" role="${kind === "error" ? "alert" : "status"}">${escapeHtml(text)}</div>`
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
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
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
    : `<div class="message error">You own no workspace this agent could be let into. You can still deny it.</div>`;
  return `${message("error", input.error)}
<p>${name} asks to work in a workspace of yours with these scopes:</p>
${scopes}
<form method="post" action="${CLAIM_PAGE_PATH}">
${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}
${workspace}
<label for="code">Code shown by the agent</label>
<input id="code" class="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" placeholder="000000">
<div class="actions">
<button class="primary" type="submit" name="action" value="approve"${input.workspaces.length ? "" : " disabled"}>Approve</button>
<button class="secondary" type="submit" name="action" value="deny" formnovalidate>Deny</button>
</div>
</form>
<div class="who"><span class="muted">Signed in as ${escapeHtml(input.userEmail)}</span>
<form method="post" action="${CLAIM_PAGE_PATH}">${hidden("action", "sign_out")}${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}<button class="link" type="submit">Sign out</button></form>
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
<div class="message warn" role="status">This request is for ${hint}.</div>
<p>${name} asks to work for ${hint}, and only that account can approve it. You are signed in as ${escapeHtml(input.userEmail)}.</p>
<p>If you are ${hint}, sign out and sign in with that account. If you did not expect this request, deny it: the agent is not let in, and it has to ask again.</p>
<form method="post" action="${CLAIM_PAGE_PATH}">
${hidden("claim_attempt_token", input.attemptToken)}${hidden("csrf_token", input.csrf)}
<div class="actions">
<button class="primary" type="submit" name="action" value="sign_out">Sign out</button>
<button class="secondary" type="submit" name="action" value="deny">Deny</button>
</div>
</form>`;
}

export const notice = (kind: "error" | "info", text: string, detail?: string) =>
  `${message(kind, text)}${detail ? paragraph(detail) : ""}`;
