import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inflateSync } from "node:zlib";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { expect } from "vitest";
import type { PlanName } from "../../schema/lib/plans.ts";
import { createWorkspace } from "../../server/accounts/workspaces.ts";
import { launchChromium, useChromium } from "./chromium.ts";
import type { TestServer } from "./server.ts";

/**
 * The dashboard in headless Chromium: a page that fails the test on any console error it was not
 * told to expect, sign-up/sign-in through the accounts API or the UI, screenshots of a screen at
 * a phone's and a desktop's width (written to test-artifacts/dashboard/, never committed), and a
 * PNG reader for tests that check what was drawn.
 */

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const DASHBOARD_DIST = join(ROOT, "dashboard/dist");
export const ARTIFACTS = join(ROOT, "test-artifacts/dashboard");
export const WIDTHS = { phone: 390, desktop: 1280 } as const;
export const PASSWORD = "correct horse battery staple";

export { launchChromium, useChromium };

// `npm test` builds the dashboard first; a test file run on its own must not test a stale build either.
execFileSync(process.execPath, [join(ROOT, "dashboard/scripts/build-if-stale.mjs")], { stdio: "pipe" });

export interface DashboardPage {
  page: Page;
  context: BrowserContext;
  /** Console errors and uncaught exceptions seen so far that no `allowErrors` pattern matched. */
  errors: string[];
  /**
   * Lets console errors matching `pattern` through: Chromium logs every 4xx/5xx a fetch gets
   * ("Failed to load resource: … 401"), so a test of a failure path names the one it provokes.
   */
  allowErrors(pattern: RegExp): void;
  /** Opens a path of the dashboard (`/dashboard/keys`) and waits for the app to have rendered. */
  goto(path: string): Promise<void>;
  /** Fails when an unexpected console error occurred, then closes the context. */
  close(): Promise<void>;
}

/** A context a closed DashboardPage left for the next one on the same server: its page, and where its console goes. */
interface Spare {
  context: BrowserContext;
  page: Page;
  sink: { record(text: string): void };
}

/** Spare contexts by browser, then by server URL (a context's baseURL is fixed). */
const spares = new WeakMap<Browser, Map<string, Spare[]>>();

/** The spare contexts of `browser` on the server at `url` (a list the caller pops and pushes). */
function sparesFor(browser: Browser, url: string): Spare[] {
  const byServer = spares.get(browser) ?? new Map<string, Spare[]>();
  spares.set(browser, byServer);
  const list = byServer.get(url) ?? [];
  byServer.set(url, list);
  return list;
}

/**
 * Page and context methods after which a context is not handed to another test: what they change
 * (listeners, routes, scripts, headers, a CDP session, another page) is not undone by clearing its
 * cookies, storage and permissions. CHANGES are the methods a page and a context both have.
 */
const CHANGES = [
  "on",
  "once",
  "addListener",
  "route",
  "routeFromHAR",
  "addInitScript",
  "exposeFunction",
  "exposeBinding",
  "setExtraHTTPHeaders",
] as const;
const PAGE_CHANGES = [...CHANGES, "emulateMedia"];
const CONTEXT_CHANGES = [
  ...CHANGES,
  "newPage",
  "newCDPSession",
  "setOffline",
  "setGeolocation",
  "setHTTPCredentials",
];

/** Calls `onCall` before any of `object`'s `methods`; returns what takes the watch off again. */
function watch(object: object, methods: readonly string[], onCall: () => void): () => void {
  const target = object as Record<string, unknown>;
  for (const name of methods) {
    const original = target[name] as (...args: unknown[]) => unknown;
    target[name] = (...args: unknown[]) => {
      onCall();
      return original.apply(object, args);
    };
  }
  return () => {
    for (const name of methods) delete target[name];
  };
}

/** A new context and its page, whose console errors and uncaught exceptions go to `sink`. */
async function newSpare(browser: Browser, server: TestServer, width: number): Promise<Spare> {
  const context = await browser.newContext({ baseURL: server.url, viewport: { width, height: 900 } });
  const page = await context.newPage();
  // A guard against a screen that never comes, not a speed target (as the suite's testTimeout): on a
  // busy 2-core CI machine, three Chromium files at once, a sign-in to the overview has taken over 15 s.
  page.setDefaultTimeout(30_000);
  const sink = { record: (_text: string) => {} };
  page.on("console", (message) => {
    if (message.type() === "error") sink.record(`console: ${message.text()} (${message.location().url})`);
  });
  page.on("pageerror", (error) => sink.record(`pageerror: ${error.stack ?? error.message}`));
  return { context, page, sink };
}

/**
 * A browser context of its own (cookies, storage) on the test server, at the desktop width.
 *
 * A context whose test only browsed is kept when it closes, its storage, cookies and permissions
 * cleared and its page on about:blank, and the next `openDashboard` on that server gets it: a new
 * context's first page costs Chromium 2-3 s of CPU (a renderer process, the app's scripts compiled
 * again), most of what the dashboard suites spent. A context whose test changed what clearing does
 * not undo (listeners, routes, scripts, another page: PAGE_CHANGES, CONTEXT_CHANGES) is closed.
 */
export async function openDashboard(
  browser: Browser,
  server: TestServer,
  width: number = WIDTHS.desktop,
): Promise<DashboardPage> {
  const errors: string[] = [];
  const allowed: RegExp[] = [];
  const record = (text: string) => {
    if (!allowed.some((pattern) => pattern.test(text))) errors.push(text);
  };
  const pool = sparesFor(browser, server.url);
  const reused = pool.pop();
  if (reused) await reused.page.setViewportSize({ width, height: 900 });
  const spare = reused ?? (await newSpare(browser, server, width));
  spare.sink.record = record;
  const { context, page } = spare;

  let changed = false;
  const onChange = () => {
    changed = true;
  };
  const unwatch = [watch(page, PAGE_CHANGES, onChange), watch(context, CONTEXT_CHANGES, onChange)];

  const keep = async () => {
    for (const undo of unwatch) undo();
    if (changed || context.pages().length !== 1) return false;
    spare.sink.record = () => {};
    try {
      await page.evaluate(() => {
        localStorage.clear();
        sessionStorage.clear();
      });
      await page.goto("about:blank");
      await context.clearCookies();
      await context.clearPermissions();
    } catch {
      return false;
    }
    pool.push(spare);
    return true;
  };

  return {
    page,
    context,
    errors,
    allowErrors: (pattern) => void allowed.push(pattern),
    async goto(path) {
      await page.goto(path);
      await page.locator("h1").first().waitFor();
    },
    async close() {
      if (!(await keep())) await context.close();
      expect(errors, "console errors on the dashboard").toEqual([]);
    },
  };
}

/** Signs in through the sign-in screen and waits for the overview. */
export async function signInUi(dashboard: DashboardPage, email: string, password = PASSWORD): Promise<void> {
  const { page } = dashboard;
  await dashboard.goto("/dashboard/sign-in");
  await page.getByLabel("E-mail").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
}

/**
 * A new browser context signed in as `user` (a session made through the accounts API), on the overview of `workspace` (the
 * label of the switcher's option, e.g. "Ledger & Co (member)") or of their own.
 *
 * @example const dashboard = await openSignedIn(browser(), server(), member, { workspace: "Sales Desk (member)" });
 */
export async function openSignedIn(
  browser: Browser,
  server: TestServer,
  user: { email: string },
  options: { workspace?: string | undefined; width?: number } = {},
): Promise<DashboardPage> {
  const dashboard = await openDashboard(browser, server, options.width);
  // Signing in through the form is app.test.ts's subject; here a session made through the accounts
  // API is handed to the browser, which saves each test a sign-in screen (about 2 s).
  const session = await signInApi(server, user.email);
  const [name, value] = splitCookie(session.cookie);
  await dashboard.context.addCookies([{ name, value, url: server.url, httpOnly: true, sameSite: "Lax" }]);
  await dashboard.goto("/dashboard");
  await dashboard.page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
  if (options.workspace)
    await dashboard.page.getByLabel("Workspace").selectOption({ label: options.workspace });
  return dashboard;
}

/** A `name=value` cookie pair as name and value. */
function splitCookie(pair: string): [string, string] {
  const at = pair.indexOf("=");
  return [pair.slice(0, at), pair.slice(at + 1)];
}

/** A session made through the accounts API from Node: its cookie and CSRF token, for requests the UI does not make. */
export interface ApiSession {
  cookie: string;
  csrf: string;
  userId: string;
  workspaces: { id: string; name: string; plan: string; role: string }[];
}

async function preSession(server: TestServer): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${server.url}/dashboard/api/session`);
  const body = (await response.json()) as { csrf_token: string };
  const cookie = (response.headers.getSetCookie()[0] ?? "").split(";")[0]!;
  return { cookie, csrf: body.csrf_token };
}

async function accountsPost(
  server: TestServer,
  path: string,
  input: Record<string, unknown>,
): Promise<ApiSession> {
  const pre = await preSession(server);
  const response = await fetch(`${server.url}/dashboard/api/${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": pre.csrf, Cookie: pre.cookie },
    body: JSON.stringify(input),
  });
  const body = (await response.json()) as {
    user: { id: string };
    csrf_token: string;
    workspaces: ApiSession["workspaces"];
  };
  if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`);
  const session = response.headers.getSetCookie().find((c) => c.startsWith("kontor_session="));
  if (!session) throw new Error(`${path} set no session cookie`);
  return {
    cookie: session.split(";")[0]!,
    csrf: body.csrf_token,
    userId: body.user.id,
    workspaces: body.workspaces,
  };
}

/** A new user with their own free workspace, signed in. */
export async function signUpApi(
  server: TestServer,
  email: string,
  options: { workspaceName?: string; invitationToken?: string } = {},
) {
  return accountsPost(server, "sign-up", {
    email,
    password: PASSWORD,
    ...(options.workspaceName && { workspace_name: options.workspaceName }),
    ...(options.invitationToken && { invitation_token: options.invitationToken }),
  });
}

export async function signInApi(server: TestServer, email: string, password = PASSWORD) {
  return accountsPost(server, "sign-in", { email, password });
}

/** A GraphQL request with a session, as the dashboard sends it. Throws on any error; `graphqlRaw` does not. */
export async function sessionGraphql<T = Record<string, unknown>>(
  server: TestServer,
  session: ApiSession,
  query: string,
  variables: Record<string, unknown> = {},
  workspaceId?: string,
): Promise<T> {
  const { status, body } = await sessionGraphqlRaw(server, session, query, variables, workspaceId);
  if (status !== 200 || body.errors)
    throw new Error(`GraphQL answered ${status}: ${JSON.stringify(body.errors ?? body)}`);
  return body.data as T;
}

export async function sessionGraphqlRaw(
  server: TestServer,
  session: ApiSession,
  query: string,
  variables: Record<string, unknown> = {},
  workspaceId?: string,
  headers: Record<string, string> = { "X-CSRF-Token": session.csrf },
): Promise<{
  status: number;
  body: { data?: unknown; errors?: { message: string; extensions: Record<string, unknown> }[] };
}> {
  const response = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Cookie: session.cookie,
      ...headers,
      ...(workspaceId && { "Kontor-Workspace": workspaceId }),
    },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

export interface TestUser {
  email: string;
  userId: string;
  workspaceId: string;
  workspaceName: string;
}

/**
 * A user who owns a new workspace, written straight into the database (sign-up is rate limited
 * per IP: tests of other things make their users here). Their password is PASSWORD.
 */
export async function createUser(
  server: TestServer,
  options: { label?: string; plan?: PlanName; workspaceName?: string } = {},
): Promise<TestUser> {
  const email = uniqueEmail(options.label ?? "user");
  const workspaceName = options.workspaceName ?? `${email.split("@")[0]!.slice(0, 40)}'s workspace`;
  const created = await createWorkspace(server.running.db.prisma, {
    name: workspaceName,
    plan: options.plan ?? "free",
    ownerEmail: email,
    ownerPassword: PASSWORD,
  });
  return { email, userId: created.owner_id, workspaceId: created.workspace_id, workspaceName };
}

/** `invitee` joins `owner`'s workspace with `role`, through the API: an invitation, accepted. */
export async function addMember(
  server: TestServer,
  owner: TestUser,
  invitee: TestUser,
  role: "owner" | "member",
): Promise<void> {
  const ownerSession = await signInApi(server, owner.email);
  const { inviteMember } = await sessionGraphql<{ inviteMember: { accept_url: string } }>(
    server,
    ownerSession,
    "mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url } }",
    { input: { email: invitee.email, role } },
    owner.workspaceId,
  );
  const token = new URL(inviteMember.accept_url).hash.replace(/^#token=/, "");
  const inviteeSession = await signInApi(server, invitee.email);
  const response = await fetch(`${server.url}/dashboard/api/invitations/accept`, {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Cookie: inviteeSession.cookie,
      "X-CSRF-Token": inviteeSession.csrf,
    },
    body: JSON.stringify({ token }),
  });
  if (!response.ok)
    throw new Error(`accepting the invitation answered ${response.status}: ${await response.text()}`);
}

/** Ends every session of a user as time would: their expiry is moved into the past. */
export async function expireSessions(server: TestServer, userId: string): Promise<number> {
  const { count } = await server.running.db.prisma.session.updateMany({
    where: { userId },
    data: { expiresAt: new Date(Date.now() - 1_000) },
  });
  return count;
}

/**
 * Every visible input, select and textarea of the page has an accessible name from a label
 * (a <label>, aria-label or aria-labelledby): the names are returned, and each is checked to be
 * found by page.getByLabel.
 */
export async function expectLabelled(page: Page): Promise<string[]> {
  const fields = await page.locator("input, select, textarea").evaluateAll((elements) =>
    elements
      .filter(
        (element) =>
          (element as HTMLElement).offsetParent !== null || (element as HTMLElement).closest("dialog[open]"),
      )
      .map((element) => {
        const field = element as HTMLInputElement;
        const fromLabels = [...(field.labels ?? [])]
          .map((label) => label.textContent?.trim() ?? "")
          .filter(Boolean)[0];
        const labelledBy = field.getAttribute("aria-labelledby");
        const name =
          fromLabels ??
          field.getAttribute("aria-label") ??
          (labelledBy ? document.getElementById(labelledBy)?.textContent?.trim() : undefined);
        return { name: name ?? "", html: field.outerHTML.slice(0, 120), type: field.type };
      }),
  );
  for (const field of fields) expect(field.name, `no label: ${field.html}`).not.toBe("");
  for (const field of fields) {
    // A checkbox's label wraps it together with its text, which getByLabel matches exactly.
    expect(
      await page.getByLabel(field.name, { exact: true }).count(),
      `getByLabel("${field.name}")`,
    ).toBeGreaterThan(0);
  }
  return fields.map((field) => field.name);
}

/**
 * Text whose contrast with what is behind it is under WCAG AA (4.5:1, or 3:1 for large text):
 * every visible element with text of its own, against the first opaque background among its
 * ancestors. Controls marked disabled are exempt (as WCAG has it).
 */
export async function lowContrastText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const rgba = (value: string) => {
      const parts = value.match(/[\d.]+/g)?.map(Number) ?? [0, 0, 0, 0];
      return { r: parts[0]!, g: parts[1]!, b: parts[2]!, a: parts[3] ?? 1 };
    };
    const luminance = ({ r, g, b }: { r: number; g: number; b: number }) => {
      const channel = (c: number) => {
        const s = c / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    };
    const background = (element: Element | null): { r: number; g: number; b: number } => {
      for (let at = element; at; at = at.parentElement) {
        const colour = rgba(getComputedStyle(at).backgroundColor);
        if (colour.a >= 0.99) return colour;
      }
      return { r: 255, g: 255, b: 255 };
    };
    const problems: string[] = [];
    for (const element of document.querySelectorAll("body *")) {
      const html = element as HTMLElement;
      const ownText = [...html.childNodes].some(
        (node) => node.nodeType === Node.TEXT_NODE && node.textContent!.trim() !== "",
      );
      if (
        !ownText ||
        html.offsetParent === null ||
        html.closest('[aria-disabled="true"], :disabled, .visually-hidden, canvas')
      )
        continue;
      const rect = html.getBoundingClientRect();
      if (rect.width < 2 || rect.height < 2) continue;
      const style = getComputedStyle(html);
      const fg = rgba(style.color);
      const [l1, l2] = [luminance(fg), luminance(background(html))].sort((a, b) => b - a) as [number, number];
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5))
        problems.push(
          `${ratio.toFixed(2)}: <${html.tagName.toLowerCase()} class="${html.className}"> ${html.textContent!.trim().slice(0, 40)}`,
        );
    }
    return problems;
  });
}

let uniqueCounter = 0;
/** An e-mail address no other test uses. */
export function uniqueEmail(label: string): string {
  uniqueCounter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${uniqueCounter}@example.com`;
}

/** Lets layout, ResizeObserver callbacks and a chart's redraw settle: two animation frames. */
export async function settle(page: Page): Promise<void> {
  await page.evaluate(
    () => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))),
  );
}

/**
 * Screenshots the page at the phone's and the desktop's width as
 * `test-artifacts/dashboard/<screen>-<width>.png`, and puts the viewport back. Returns the paths.
 * At each width the page must not scroll sideways, and its text must meet WCAG AA contrast.
 */
export async function screenshots(page: Page, screen: string): Promise<{ phone: string; desktop: string }> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const original = page.viewportSize() ?? { width: WIDTHS.desktop, height: 900 };
  const paths = { phone: "", desktop: "" };
  for (const [name, width] of Object.entries(WIDTHS) as [keyof typeof WIDTHS, number][]) {
    await page.setViewportSize({ width, height: 900 });
    await settle(page);
    const path = join(ARTIFACTS, `${screen}-${width}.png`);
    await page.screenshot({ path, fullPage: true });
    // Nothing may stick out sideways at a phone's width.
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, `${screen} at ${width} px scrolls sideways`).toBeLessThanOrEqual(0);
    expect(await lowContrastText(page), `${screen} at ${width} px: text under WCAG AA contrast`).toEqual([]);
    paths[name] = path;
  }
  await page.setViewportSize(original);
  await settle(page);
  return paths;
}

/** Polls `check` until it returns true, for at most `timeoutMs`; the number of milliseconds it took. */
export async function pollUntil(
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 100,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The built JavaScript files of dist/assets with their gzip sizes. */
export function distScripts(): string[] {
  return readdirSync(join(DASHBOARD_DIST, "assets")).filter((name) => name.endsWith(".js"));
}

export interface Png {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel, row after row. */
  pixels: Uint8Array;
}

/** Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots are). */
export function readPng(path: string): Png {
  const data = readFileSync(path);
  if (data.subarray(0, 8).toString("hex") !== "89504e470d0a1a0a") throw new Error(`${path} is not a PNG`);
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < data.length; ) {
    const length = data.readUInt32BE(at);
    const type = data.toString("latin1", at + 4, at + 8);
    const chunk = data.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = chunk.readUInt32BE(0);
      height = chunk.readUInt32BE(4);
      const [depth, colorType, , , interlace] = [chunk[8], chunk[9], chunk[10], chunk[11], chunk[12]];
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6))
        throw new Error(`unsupported PNG (depth ${depth}, colour type ${colorType})`);
      channels = colorType === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(chunk);
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const rows = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? rows[y * stride + x - channels]! : 0;
      const up = y > 0 ? rows[(y - 1) * stride + x]! : 0;
      const upLeft = y > 0 && x >= channels ? rows[(y - 1) * stride + x - channels]! : 0;
      let value = line[x]!;
      if (filter === 1) value += left;
      else if (filter === 2) value += up;
      else if (filter === 3) value += (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - upLeft)];
        value += pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      }
      rows[y * stride + x] = value & 0xff;
    }
  }
  const pixels = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    pixels[i * 4] = rows[i * channels]!;
    pixels[i * 4 + 1] = rows[i * channels + 1]!;
    pixels[i * 4 + 2] = rows[i * channels + 2]!;
    pixels[i * 4 + 3] = channels === 4 ? rows[i * channels + 3]! : 255;
  }
  return { width, height, pixels };
}

/** How many pixels are within `tolerance` of an `#rrggbb` colour. */
export function countColour(png: Png, hex: string, tolerance = 24): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
  let count = 0;
  for (let i = 0; i < png.pixels.length; i += 4) {
    if (
      Math.abs(png.pixels[i]! - r) <= tolerance &&
      Math.abs(png.pixels[i + 1]! - g) <= tolerance &&
      Math.abs(png.pixels[i + 2]! - b) <= tolerance
    )
      count++;
  }
  return count;
}

/** Distinct colours (quantised to 5 bits a channel): a blank image has one or two. */
export function distinctColours(png: Png): number {
  const seen = new Set<number>();
  for (let i = 0; i < png.pixels.length; i += 4)
    seen.add(((png.pixels[i]! >> 3) << 10) | ((png.pixels[i + 1]! >> 3) << 5) | (png.pixels[i + 2]! >> 3));
  return seen.size;
}
