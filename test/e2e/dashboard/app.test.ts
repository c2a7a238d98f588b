import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  addMember,
  countColour,
  createUser,
  DASHBOARD_DIST,
  distinctColours,
  distScripts,
  expectLabelled,
  expireSessions,
  openDashboard,
  PASSWORD,
  readPng,
  screenshots,
  sessionGraphql,
  sessionGraphqlRaw,
  settle,
  signInApi,
  signInUi,
  uniqueEmail,
  useChromium,
  WIDTHS,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The dashboard app: how it is served, its bundle budget, and the account screens in headless
 * Chromium (sign-up, sign-in and its failures, sign-out, an expired session, CSRF, password change,
 * invitations, the workspace switcher, the overview's limits and chart), keyboard use and labels,
 * with screenshots of each screen at a phone's and a desktop's width.
 */

/**
 * The bundle budget (dashboard/README.md#budget): the entry chunk every screen loads, what one
 * screen loads at most (the entry, its own chunk and everything it imports, lazily loaded parts
 * such as Chart.js included), and all scripts together, gzip at level 9.
 */
const BUDGET_ENTRY_GZIP = 90 * 1024;
const BUDGET_SCREEN_GZIP = 160 * 1024;
const BUDGET_TOTAL_GZIP = 300 * 1024;

const indexHtml = () => readFileSync(join(DASHBOARD_DIST, "index.html"), "utf8");
const entryScript = () => /src="\/dashboard\/assets\/([^"]+\.js)"/.exec(indexHtml())![1]!;

interface ManifestChunk {
  file: string;
  isEntry?: boolean;
  isDynamicEntry?: boolean;
  imports?: string[];
  dynamicImports?: string[];
}

/** Vite's manifest of the build: each chunk's file and what it imports. */
const manifest = () =>
  JSON.parse(readFileSync(join(DASHBOARD_DIST, ".vite/manifest.json"), "utf8")) as Record<
    string,
    ManifestChunk
  >;

/** The chunks a chunk loads: itself and, transitively, what it imports (and, with `lazy`, what it imports lazily). */
function closure(
  chunks: Record<string, ManifestChunk>,
  key: string,
  lazy: boolean,
  seen = new Set<string>(),
): Set<string> {
  if (seen.has(key)) return seen;
  seen.add(key);
  const chunk = chunks[key];
  for (const next of [...(chunk?.imports ?? []), ...(lazy ? (chunk?.dynamicImports ?? []) : [])])
    closure(chunks, next, lazy, seen);
  return seen;
}

describe("the dashboard's build", () => {
  it(`stays within its budget: ≤ ${BUDGET_ENTRY_GZIP / 1024} KB gzip for the entry chunk, ≤ ${BUDGET_SCREEN_GZIP / 1024} KB for any one screen with all it loads, ≤ ${BUDGET_TOTAL_GZIP / 1024} KB in all`, () => {
    const gzip = (file: string) =>
      gzipSync(readFileSync(join(DASHBOARD_DIST, file)), { level: 9 }).byteLength;
    const sizes = Object.fromEntries(distScripts().map((name) => [`assets/${name}`, gzip(`assets/${name}`)]));
    const total = Object.values(sizes).reduce((sum, size) => sum + size, 0);
    const chunks = manifest();
    const entryKey = Object.keys(chunks).find((key) => chunks[key]!.isEntry)!;
    const entryFiles = closure(chunks, entryKey, false);
    const screens = Object.keys(chunks).filter(
      (key) => chunks[key]!.isDynamicEntry && key.includes("/screens/"),
    );
    expect(screens.length, "route-level code splitting: a chunk per screen").toBeGreaterThan(20);
    const loads = Object.fromEntries(
      screens.map((screen) => {
        // Walked with the entry's chunks as already there: the entry's lazy imports are the other screens.
        const loaded = closure(chunks, screen, true, new Set(entryFiles));
        const files = new Set([...loaded].map((key) => chunks[key]!.file));
        return [screen, [...files].reduce((sum, file) => sum + (sizes[file] ?? 0), 0)];
      }),
    );
    const [heaviest, heaviestLoad] = Object.entries(loads).sort((a, b) => b[1] - a[1])[0]!;
    console.log(
      `[budget] entry ${(sizes[`assets/${entryScript()}`]! / 1024).toFixed(1)} KB, heaviest screen ${heaviest} ${(heaviestLoad / 1024).toFixed(1)} KB, all ${(total / 1024).toFixed(1)} KB in ${distScripts().length} files`,
    );
    expect(sizes[`assets/${entryScript()}`], "entry chunk").toBeLessThanOrEqual(BUDGET_ENTRY_GZIP);
    expect(heaviestLoad, `${heaviest}: ${JSON.stringify(loads)}`).toBeLessThanOrEqual(BUDGET_SCREEN_GZIP);
    expect(total, `total gzip ${total} B: ${JSON.stringify(sizes)}`).toBeLessThanOrEqual(BUDGET_TOTAL_GZIP);
    // Chart.js is not in the entry chunk: it loads with the first chart.
    expect(readFileSync(join(DASHBOARD_DIST, "assets", entryScript()), "utf8")).not.toContain("chartjs");
  });

  it("puts nothing inline in index.html (the page's CSP allows scripts and styles from the origin only) and fetches nothing from elsewhere", () => {
    const html = indexHtml();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|style="/);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const name of distScripts())
      expect(readFileSync(join(DASHBOARD_DIST, "assets", name), "utf8"), name).not.toMatch(
        /https:\/\/(unpkg|cdn|fonts)\./,
      );
  });
});

const browser = useChromium();

e2e("the dashboard app", (server) => {
  describe("serving", () => {
    it("answers every app path with index.html: no-cache, a strict CSP; /dashboard/api is left to the API", async () => {
      for (const path of [
        "/dashboard",
        "/dashboard/",
        "/dashboard/keys",
        "/dashboard/no/such/screen",
        "/dashboard/invitations",
      ]) {
        const response = await fetch(`${server().url}${path}`);
        expect(response.status, path).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/html/);
        expect(response.headers.get("cache-control")).toBe("no-cache");
        const csp = response.headers.get("content-security-policy") ?? "";
        expect(csp).toContain("default-src 'self'");
        expect(csp).toContain("script-src 'self'");
        expect(csp).not.toContain("unsafe-inline");
        expect(csp).toContain("frame-ancestors 'none'");
        expect(await response.text()).toContain(`/dashboard/assets/${entryScript()}`);
      }
      const api = await fetch(`${server().url}/dashboard/api/no-such-thing`);
      expect(api.status).toBe(404);
      expect(((await api.json()) as { error: { code: string } }).error.code).toBe("not_found");
      // A path that only starts like the dashboard is not the dashboard.
      expect((await fetch(`${server().url}/dashboardx`)).status).toBe(404);
    });

    it("serves hashed assets cached for a year, immutable; an unknown or malformed asset is a 404; only GET and HEAD", async () => {
      const url = `${server().url}/dashboard/assets/${entryScript()}`;
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect((await response.arrayBuffer()).byteLength).toBe(
        readFileSync(join(DASHBOARD_DIST, "assets", entryScript())).byteLength,
      );
      const css = /href="\/dashboard\/assets\/([^"]+\.css)"/.exec(indexHtml())![1]!;
      expect((await fetch(`${server().url}/dashboard/assets/${css}`)).headers.get("content-type")).toBe(
        "text/css; charset=utf-8",
      );
      // The page and its files are not API requests: the per-IP rate limit leaves them alone (not the accounts API).
      expect(response.headers.get("x-ratelimit-limit")).toBeNull();
      expect((await fetch(`${server().url}/dashboard/keys`)).headers.get("x-ratelimit-limit")).toBeNull();
      expect(
        (await fetch(`${server().url}/dashboard/api/session`)).headers.get("x-ratelimit-limit"),
      ).not.toBeNull();
      const head = await fetch(url, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("cache-control")).toContain("immutable");

      for (const path of [
        "/dashboard/assets/index-00000000.js",
        "/dashboard/assets/..%2Findex.html",
        "/dashboard/assets/.build-digest",
        "/dashboard/assets/x.exe",
        "/dashboard/assets/",
      ]) {
        const missing = await fetch(`${server().url}${path}`);
        expect(missing.status, path).toBe(404);
        expect(missing.headers.get("cache-control") ?? "", path).not.toContain("immutable");
        expect(((await missing.json()) as { error: { code: string } }).error.code, path).toBe("not_found");
      }
      const post = await fetch(`${server().url}/dashboard/keys`, { method: "POST" });
      expect(post.status).toBe(405);
      expect(post.headers.get("allow")).toBe("GET, HEAD");
    });

    it("revalidates index.html with its ETag", async () => {
      const first = await fetch(`${server().url}/dashboard`);
      const etag = first.headers.get("etag");
      expect(etag).toMatch(/^".+"$/);
      const again = await fetch(`${server().url}/dashboard/members`, { headers: { "If-None-Match": etag! } });
      expect(again.status).toBe(304);
    });
  });

  describe("accounts", () => {
    it("signs up through the form: a user and a free workspace, the overview with the plan's limits and storage, and its chart drawn", async () => {
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await dashboard.goto("/dashboard");
      // Signed out: sent to sign-in, and from there to sign-up.
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard");
      await screenshots(page, "sign-in");
      await page.getByRole("link", { name: "Create one" }).click();
      await page.getByRole("heading", { level: 1, name: "Create your account" }).waitFor();
      expect(await expectLabelled(page)).toEqual(["E-mail", "Password", "Workspace name"]);
      await screenshots(page, "sign-up");

      // Too short a password: the API's message, under the field.
      const email = uniqueEmail("signup");
      await page.getByLabel("E-mail").fill(email);
      await page.getByLabel("Password").fill("short");
      await page.getByLabel("Password").evaluate((input) => input.removeAttribute("minlength"));
      await page.getByLabel("Workspace name").fill("Signed Up Ltd");
      dashboard.allowErrors(/status of 400/);
      await page.getByRole("button", { name: "Create account" }).click();
      await expect.poll(() => page.locator(".field-error").count()).toBe(1);
      expect(await page.getByLabel("Password").getAttribute("aria-invalid")).toBe("true");

      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
      await page.getByTestId("plan").waitFor();
      expect(await page.getByTestId("plan").textContent()).toBe("free");
      const main = page.locator("main");
      await expect.poll(() => main.textContent()).toContain("Signed Up Ltd");
      expect(await main.textContent()).toContain("Requests per minute, per key120");
      expect(await main.textContent()).toContain("1 GB");
      expect(await page.getByTestId("user-email").textContent()).toBe(email);
      expect(await page.getByLabel("Workspace").locator("option").allTextContents()).toEqual([
        "Signed Up Ltd (owner)",
      ]);

      // The storage chart: a canvas Chart.js drew on, read back from the screenshot's pixels.
      const canvas = page.getByRole("img", { name: /^Storage: 0 B used of 1 GB/ });
      await canvas.waitFor();
      await settle(page);
      const shots = await screenshots(page, "overview");
      const box = (await canvas.boundingBox())!;
      expect(box.width).toBeGreaterThan(100);
      const png = readPng(shots.desktop);
      expect(png.width).toBe(WIDTHS.desktop);
      const chart = cropPng(png, box);
      expect(distinctColours(chart), "the chart area is blank").toBeGreaterThan(4);
      // The free part of the ring (slate) fills much of it, and the legend shows the used colour (blue).
      expect(countColour(chart, "#cbd5e1", 6)).toBeGreaterThan(2_000);
      expect(countColour(chart, "#1d4ed8", 12)).toBeGreaterThan(50);
      expect(distinctColours(readPng(shots.phone))).toBeGreaterThan(4);
      await dashboard.close();
    });

    it("refuses a wrong password with the API's message, and says how long to wait once sign-in is rate limited (429)", async () => {
      const user = await createUser(server(), { label: "wrongpw" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      dashboard.allowErrors(/status of 401/);
      dashboard.allowErrors(/status of 429/);
      await dashboard.goto("/dashboard/sign-in");
      await page.getByLabel("E-mail").fill(user.email);
      await page.getByLabel("Password").fill("not the password at all");
      await page.getByRole("button", { name: "Sign in" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.textContent()).toContain("The e-mail or password is not right.");
      expect(await alert.getAttribute("data-code")).toBe("invalid_credentials");
      expect(await alert.innerText()).not.toContain("invalid_credentials");
      // The password field is emptied for the next try; the e-mail stays.
      expect(await page.getByLabel("Password").inputValue()).toBe("");
      expect(await page.getByLabel("E-mail").inputValue()).toBe(user.email);
      await screenshots(page, "sign-in-wrong-password");

      // The per-account limit: the sixth wrong try in the window is refused before the password is checked.
      for (let attempt = 0; attempt < 8; attempt++) {
        await page.getByLabel("Password").fill(`wrong password ${attempt}`);
        await page.getByRole("button", { name: "Sign in" }).click();
        await expect
          .poll(() => page.getByRole("button", { name: "Sign in" }).getAttribute("aria-busy"))
          .toBeNull();
        if ((await alert.getAttribute("data-code")) === "rate_limit_exceeded") break;
      }
      expect(await alert.getAttribute("data-code")).toBe("rate_limit_exceeded");
      // The wait is said once, in words; the code and request id wait behind Details.
      const message = (await alert.locator(".banner-message").textContent())!;
      expect(message).toMatch(
        /^Too many sign-in attempts from here\. Try again in \d+ (seconds?|minutes)\.$/,
      );
      expect(await alert.innerText()).not.toMatch(/rate_limit_exceeded|req_/);
      await alert.getByText("Details").click();
      expect(await alert.innerText()).toMatch(/rate_limit_exceeded.*req_/s);
      await dashboard.close();
    });

    it("signs in with the keyboard alone (Tab, typing, Enter), and signs out", async () => {
      const user = await createUser(server(), { label: "keyboard" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await dashboard.goto("/dashboard/account");
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      expect(await expectLabelled(page)).toEqual(["E-mail", "Password"]);
      const focused = () =>
        page.evaluate(
          () => document.activeElement?.getAttribute("autocomplete") ?? document.activeElement?.tagName ?? "",
        );
      await page.keyboard.press("Tab");
      expect(await focused()).toBe("username");
      await page.keyboard.type(user.email);
      await page.keyboard.press("Tab");
      expect(await focused()).toBe("current-password");
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press("Enter");
      // Back where the user was going.
      await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
      expect(new URL(page.url()).pathname).toBe("/dashboard/account");
      expect(await page.evaluate(() => document.activeElement?.id)).toBe("page-title");

      // The focus ring is visible on a focused button.
      await page.keyboard.press("Tab");
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      expect(outline).not.toBe("none");

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      // The cookie is gone: a protected screen sends the user to sign-in again.
      await dashboard.goto("/dashboard/keys");
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      const session = await page.evaluate(() =>
        fetch("/dashboard/api/session").then((r) => r.json() as Promise<{ user: unknown }>),
      );
      expect(session.user).toBeNull();
      await dashboard.close();
    });

    it("sends the user back to sign-in when the session expires, and back to the screen after signing in", async () => {
      const user = await createUser(server(), { label: "expired" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      // The overview's own queries answered first: the next request is the Members screen's.
      await expect.poll(() => page.locator(".loading").count()).toBe(0);
      expect(await expireSessions(server(), user.userId)).toBe(1);
      dashboard.allowErrors(/status of 401/);
      // The next GraphQL request is refused with session_expired: the app signs out and says why.
      await page.getByRole("link", { name: "Members", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      await expect
        .poll(() => page.getByRole("status").filter({ hasText: "Your session has expired" }).count())
        .toBe(1);
      expect(new URL(page.url()).searchParams.get("next")).toBe("/dashboard/members");
      await screenshots(page, "sign-in-expired");
      await page.getByLabel("E-mail").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { level: 1, name: "Members" }).waitFor();

      // An expired session on a fresh load is simply signed out.
      await expireSessions(server(), user.userId);
      await dashboard.goto("/dashboard/members");
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      await dashboard.close();
    });

    it("sends the user to sign-in, with the way back, on any 401: the cookie cleared under a GraphQL screen and under the password form", async () => {
      const user = await createUser(server(), { label: "cleared" });
      const dashboard = await openDashboard(browser(), server());
      const { page, context } = dashboard;
      await signInUi(dashboard, user.email);
      dashboard.allowErrors(/status of 401/);
      const toSignIn = async (next: string) => {
        await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
        expect(new URL(page.url()).searchParams.get("next")).toBe(next);
        // Signed out for real: no header of the signed-in frame, no API-key wording.
        expect(await page.getByTestId("user-email").count()).toBe(0);
        expect(await page.locator("body").innerText()).not.toMatch(/API key|Bearer/);
      };

      // No cookie at all: /graphql's 401 is whatever code, and the app signs out.
      await context.clearCookies();
      await page.getByRole("link", { name: "Members" }).click();
      await toSignIn("/dashboard/members");
      await page.getByLabel("E-mail").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { level: 1, name: "Members" }).waitFor();
      await page.getByRole("table", { name: "Members" }).waitFor();

      // An account request (401 session_required) does the same.
      await page.getByRole("link", { name: "Account" }).click();
      await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
      await context.clearCookies();
      await page.getByLabel("Current password").fill(PASSWORD);
      await page.getByLabel("New password", { exact: true }).fill("another long passphrase");
      await page.getByLabel("Repeat the new password").fill("another long passphrase");
      await page.getByRole("button", { name: "Change password" }).click();
      await toSignIn("/dashboard/account");
      await dashboard.close();
    });

    it("refuses a request of the signed-in page without the X-CSRF-Token header (403 csrf_failed), or with a wrong one", async () => {
      const user = await createUser(server(), { label: "csrf" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      dashboard.allowErrors(/status of 403/);
      const results = await page.evaluate(async () => {
        const body = JSON.stringify({ query: "{ workspace { id } }" });
        const graphql = async (headers: Record<string, string>) => {
          const response = await fetch("/graphql", {
            method: "POST",
            headers: { "Content-Type": "application/json", ...headers },
            body,
          });
          const json = (await response.json()) as { errors?: { extensions: { code: string } }[] };
          return { status: response.status, code: json.errors?.[0]?.extensions.code ?? null };
        };
        const rest = await fetch("/v1/workspace");
        const signOut = await fetch("/dashboard/api/sign-out", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: "{}",
        });
        return {
          missing: await graphql({}),
          wrong: await graphql({ "X-CSRF-Token": "not-the-token" }),
          rest: {
            status: rest.status,
            code: ((await rest.json()) as { error: { code: string } }).error.code,
          },
          signOut: {
            status: signOut.status,
            code: ((await signOut.json()) as { error: { code: string } }).error.code,
          },
        };
      });
      expect(results).toEqual({
        missing: { status: 403, code: "csrf_failed" },
        wrong: { status: 403, code: "csrf_failed" },
        rest: { status: 403, code: "csrf_failed" },
        signOut: { status: 403, code: "csrf_failed" },
      });
      // The session survived the forged sign-out, and the app's own requests (with the header) work.
      await page.getByRole("link", { name: "API keys", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
      await page.getByRole("table", { name: "API keys" }).or(page.getByText("No keys yet")).waitFor();
      await dashboard.close();
    });

    it("tells a signed-in user in GraphiQL (/graphql) to paste an API key in its headers tab, and a dashboard fetch what it lacks", async () => {
      const user = await createUser(server(), { label: "graphiql" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      dashboard.allowErrors(/status of 403/);
      // GraphiQL's page asks for a favicon the server does not have.
      dashboard.allowErrors(/favicon\.ico/);
      await page.goto("/graphql");
      await page.locator(".graphiql-container").first().waitFor();
      await page.locator(".graphiql-execute-button").click();
      const result = page.locator(".result-window");
      await expect.poll(() => result.textContent(), { timeout: 15_000 }).toContain("csrf_failed");
      const shown = (await result.textContent())!;
      expect(shown).toContain("GraphiQL");
      expect(shown).toContain("Headers");
      expect(shown).toContain("Authorization");
      expect(shown).toContain("Bearer");
      expect(shown).not.toContain("reload the dashboard");

      // A dashboard fetch is told what it lacks: the session's token in X-CSRF-Token.
      const answer = await page.evaluate(async () => {
        const response = await fetch("/graphql", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ query: "{ workspace { id } }" }),
        });
        return (await response.json()) as { errors: { message: string; extensions: { code: string } }[] };
      });
      expect(answer.errors[0]!.extensions.code).toBe("csrf_failed");
      expect(answer.errors[0]!.message).toContain("X-CSRF-Token");
      expect(answer.errors[0]!.message).toContain("csrf_token");
      await dashboard.close();
    });

    it("changes the password: a wrong current one is refused under its field; then other sessions end and the new one signs in", async () => {
      const user = await createUser(server(), { label: "password" });
      const other = await signInApi(server(), user.email);
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      await page.getByRole("link", { name: "Account", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
      expect(await expectLabelled(page)).toEqual([
        "Workspace",
        "Current password",
        "New password",
        "Repeat the new password",
      ]);
      await screenshots(page, "account");

      const newPassword = "a new and longer passphrase";
      // The two new passwords differ: caught before any request.
      await page.getByLabel("Current password").fill(PASSWORD);
      await page.getByLabel("New password", { exact: true }).fill(newPassword);
      await page.getByLabel("Repeat the new password").fill(`${newPassword}!`);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByText("The two new passwords differ.").waitFor();

      dashboard.allowErrors(/status of 400/);
      await page.getByLabel("Current password").fill("this is not my password");
      await page.getByLabel("Repeat the new password").fill(newPassword);
      await page.getByRole("button", { name: "Change password" }).click();
      await expect.poll(() => page.getByLabel("Current password").getAttribute("aria-invalid")).toBe("true");

      await page.getByLabel("Current password").fill(PASSWORD);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByText("Password changed. Your other sessions were signed out.").waitFor();
      // The other session ended; this one goes on.
      const refused = await sessionGraphqlRaw(server(), other, "{ viewer { user { email } } }");
      expect(refused.status).toBe(401);
      expect(refused.body.errors?.[0]?.extensions.code).toBe("session_expired");
      await page.getByRole("link", { name: "Overview", exact: true }).click();
      await page.getByTestId("plan").waitFor();
      await expect(signInApi(server(), user.email)).rejects.toThrow(/401/);
      await signInApi(server(), user.email, newPassword);
      await dashboard.close();
    });

    it("refuses a new password equal to the current one, and a wrong current one: each in plain words, once, under its field", async () => {
      const user = await createUser(server(), { label: "samepw" });
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      await page.getByRole("link", { name: "Account" }).click();
      await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
      dashboard.allowErrors(/status of 400/);
      const errorUnder = (label: string) =>
        page
          .locator(".field")
          .filter({ has: page.getByLabel(label, { exact: true }) })
          .locator(".field-error");

      await page.getByLabel("Current password").fill(PASSWORD);
      await page.getByLabel("New password", { exact: true }).fill(PASSWORD);
      await page.getByLabel("Repeat the new password").fill(PASSWORD);
      await page.getByRole("button", { name: "Change password" }).click();
      await errorUnder("New password").waitFor();
      expect(await errorUnder("New password").textContent()).toBe(
        "The new password must differ from the current one.",
      );
      expect(await page.getByText("must differ from the current one").count()).toBe(1);
      expect(await page.locator(".banner-error").count()).toBe(0);
      // The API kept the password.
      await signInApi(server(), user.email, PASSWORD);

      await page.getByLabel("Current password").fill("this is not my password");
      await page.getByLabel("New password", { exact: true }).fill("a different passphrase");
      await page.getByLabel("Repeat the new password").fill("a different passphrase");
      await page.getByRole("button", { name: "Change password" }).click();
      await errorUnder("Current password").waitFor();
      expect(await errorUnder("Current password").textContent()).toBe("The current password is not right.");
      expect(await page.getByText("password is not right").count()).toBe(1);
      expect(await page.locator("main").innerText()).not.toContain("current_password");
      expect(await page.locator(".banner-error").count()).toBe(0);
      await dashboard.close();
    });
  });

  describe("workspaces and invitations", () => {
    it("accepts an invitation while signed in, then switches between the user's workspaces (the choice kept across a reload)", async () => {
      const owner = await createUser(server(), {
        label: "inviter",
        plan: "pro",
        workspaceName: "Inviting Co",
      });
      const user = await createUser(server(), { label: "invitee", workspaceName: "Own Place" });
      const ownerSession = await signInApi(server(), owner.email);
      const { inviteMember } = await sessionGraphql<{ inviteMember: { accept_url: string } }>(
        server(),
        ownerSession,
        "mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url } }",
        { input: { email: user.email, role: "member" } },
      );
      const link = new URL(inviteMember.accept_url);
      expect(link.pathname).toBe("/dashboard/invitations");
      expect(link.hash).toMatch(/^#token=inv/);

      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      await page.goto(`${link.pathname}${link.hash}`);
      await page.getByRole("button", { name: "Accept invitation" }).waitFor();
      // The token leaves the address bar at once.
      expect(new URL(page.url()).hash).toBe("");
      await screenshots(page, "invitation");
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await page.getByText("You joined Inviting Co as a member.").waitFor();

      // Now acting in the workspace joined: a member there.
      const switcher = page.getByLabel("Workspace");
      expect(await switcher.locator("option").allTextContents()).toEqual([
        "Own Place (owner)",
        "Inviting Co (member)",
      ]);
      await page.getByRole("link", { name: "Go to its overview" }).click();
      await expect.poll(() => page.locator("main").textContent()).toContain("Inviting Co");
      expect(await page.getByTestId("plan").textContent()).toBe("pro");

      await switcher.selectOption({ label: "Own Place (owner)" });
      await expect.poll(() => page.getByTestId("plan").textContent()).toBe("free");
      expect(await page.locator("main").textContent()).toContain("Own Place");
      await page.reload();
      await page.getByTestId("plan").waitFor();
      expect(await page.getByTestId("plan").textContent()).toBe("free");
      await switcher.selectOption({ label: "Inviting Co (member)" });
      await expect.poll(() => page.getByTestId("plan").textContent()).toBe("pro");
      await page.reload();
      await page.getByTestId("plan").waitFor();
      expect(await page.getByTestId("plan").textContent()).toBe("pro");

      // The link works once.
      dashboard.allowErrors(/status of 400/);
      await page.goto(`${link.pathname}${link.hash}`);
      await page.getByRole("button", { name: "Accept invitation" }).click();
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.getAttribute("data-code")).toBe("invitation_invalid");
      await dashboard.close();
    });

    it("keeps an invitation through sign-up: the invited address filled in, the new user joins the inviting workspace only, and is told so", async () => {
      const owner = await createUser(server(), { label: "inviter2", workspaceName: "Welcoming Ltd" });
      const email = uniqueEmail("newcomer");
      const ownerSession = await signInApi(server(), owner.email);
      const { inviteMember } = await sessionGraphql<{ inviteMember: { accept_url: string } }>(
        server(),
        ownerSession,
        "mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url } }",
        { input: { email, role: "member" } },
      );
      const link = new URL(inviteMember.accept_url);
      const dashboard = await openDashboard(browser(), server(), WIDTHS.phone);
      const { page } = dashboard;
      await page.goto(`${link.pathname}${link.hash}`);
      await page.getByRole("heading", { level: 1, name: "Invitation" }).waitFor();
      await screenshots(page, "invitation-signed-out");
      await page.getByText("Welcoming Ltd").first().waitFor();
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByRole("heading", { level: 1, name: "Create your account" }).waitFor();
      // The invited address, filled in and kept: it is the one the account gets.
      const address = page.getByLabel("E-mail");
      await expect.poll(() => address.inputValue()).toBe(email);
      expect(await address.getAttribute("readonly")).not.toBeNull();
      await page.getByText("You join Welcoming Ltd as a member").waitFor();
      await page.getByLabel("Password").fill(PASSWORD);
      await screenshots(page, "sign-up-invited");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("status").filter({ hasText: "You joined Welcoming Ltd as a member." }).waitFor();
      // Only the inviting workspace: no empty one of their own.
      expect(await page.getByLabel("Workspace").locator("option").allTextContents()).toEqual([
        "Welcoming Ltd (member)",
      ]);
      const created = await server().running.db.prisma.user.findUniqueOrThrow({
        where: { email },
        select: { memberships: { select: { workspaceId: true, role: true } } },
      });
      expect(created.memberships).toEqual([{ workspaceId: owner.workspaceId, role: "member" }]);
      await page.getByRole("link", { name: "Go to its overview" }).click();
      await expect.poll(() => page.locator("main").textContent()).toContain("Welcoming Ltd");
      await dashboard.close();
    });

    it("keeps an invitation through sign-in: back on the invitation, accepted there", async () => {
      const owner = await createUser(server(), { label: "inviter3", workspaceName: "Signing In Co" });
      const user = await createUser(server(), { label: "returning" });
      const ownerSession = await signInApi(server(), owner.email);
      const { inviteMember } = await sessionGraphql<{ inviteMember: { accept_url: string } }>(
        server(),
        ownerSession,
        "mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url } }",
        { input: { email: user.email, role: "owner" } },
      );
      const link = new URL(inviteMember.accept_url);
      const dashboard = await openDashboard(browser(), server());
      const { page } = dashboard;
      await page.goto(`${link.pathname}${link.hash}`);
      await page.getByRole("link", { name: "Sign in" }).click();
      await page.getByText("Sign in to accept your invitation.").waitFor();
      // The token is not in the address bar, nor in the query string on the way.
      expect(page.url()).not.toContain(link.hash.slice(1));
      await page.getByLabel("E-mail").fill(user.email);
      await page.getByLabel("Password").fill(PASSWORD);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await page.getByText("You joined Signing In Co as an owner.").waitFor();
      expect(await page.getByLabel("Workspace").inputValue()).toBe(owner.workspaceId);
      expect(await page.getByLabel("Workspace").locator("option:checked").textContent()).toBe(
        "Signing In Co (owner)",
      );
      await dashboard.close();
    });

    it("shows an incomplete invitation link as such", async () => {
      const dashboard = await openDashboard(browser(), server());
      await dashboard.goto("/dashboard/invitations");
      await dashboard.page.getByText("This invitation link is incomplete.").waitFor();
      await dashboard.close();
    });
  });

  describe("layout", () => {
    it("at a phone's width: the navigation opens from the menu button and closes on a choice; unknown screens say so", async () => {
      const user = await createUser(server(), { label: "phone" });
      const member = await createUser(server(), { label: "phone-member" });
      await addMember(server(), member, user, "member");
      const dashboard = await openDashboard(browser(), server(), WIDTHS.phone);
      const { page } = dashboard;
      await signInUi(dashboard, user.email);
      const menu = page.getByRole("button", { name: "Menu" });
      const nav = page.getByRole("navigation", { name: "Dashboard" });
      expect(await menu.getAttribute("aria-expanded")).toBe("false");
      expect(await nav.isVisible()).toBe(false);
      await menu.click();
      expect(await menu.getAttribute("aria-expanded")).toBe("true");
      await nav.waitFor({ state: "visible" });
      // The business first, then the developers' tools, then the workspace's people and settings.
      expect(await nav.getByRole("heading").allTextContents()).toEqual([
        "Business",
        "Developers",
        "Settings",
      ]);
      expect(await nav.getByRole("list", { name: "Developers" }).getByRole("link").allTextContents()).toEqual(
        ["API keys", "Logs", "Webhooks", "Events", "Agents", "API reference", "GraphiQL"],
      );
      await screenshots(page, "navigation-open");
      await nav.getByRole("link", { name: "Account", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Account" }).waitFor();
      expect(await nav.isVisible()).toBe(false);
      expect(await page.getByLabel("Workspace").locator("option").count()).toBe(2);

      await dashboard.goto("/dashboard/nothing-here");
      await page.getByRole("heading", { level: 1, name: "Page not found" }).waitFor();
      await screenshots(page, "not-found");
      // Every screen of the navigation renders at this width without a console error.
      for (const title of [
        "Overview",
        "Leads",
        "Clients",
        "Invoices",
        "Inventory",
        "Projects",
        "API keys",
        "Members",
        "Audit log",
        "Logs",
        "Webhooks",
        "Events",
        "Agents",
        "Storage",
        "Account",
      ]) {
        await menu.click();
        await nav.getByRole("link", { name: title }).click();
        await page.getByRole("heading", { level: 1, name: title }).waitFor();
        await expectLabelled(page);
      }
      await dashboard.close();
    });
  });
});

/** The part of a screenshot under a CSS-pixel box (device scale 1). */
function cropPng(
  png: ReturnType<typeof readPng>,
  box: { x: number; y: number; width: number; height: number },
) {
  const x0 = Math.max(0, Math.floor(box.x));
  const y0 = Math.max(0, Math.floor(box.y));
  const width = Math.min(png.width - x0, Math.ceil(box.width));
  const height = Math.min(png.height - y0, Math.ceil(box.height));
  const pixels = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++)
    pixels.set(
      png.pixels.subarray(((y0 + y) * png.width + x0) * 4, ((y0 + y) * png.width + x0 + width) * 4),
      y * width * 4,
    );
  return { width, height, pixels };
}
