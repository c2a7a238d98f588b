import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import { newId } from "../../../schema/lib/ids.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { MAX_CLAIM_FORM_BYTES } from "../../../server/agents/claim-page.ts";
import { findClaimAttempt, startClaimAttempt } from "../../../server/agents/claims.ts";
import { cookieHeader, SESSION_COOKIE } from "../../../server/auth/sessions.ts";
import { launchChromium } from "../../support/chromium.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const PASSWORD = "correct horse battery staple";

interface Owner {
  email: string;
  userId: string;
  workspaceId: string;
}

async function owner(
  db: PrismaClient,
  options: { email?: string; plan?: "free" | "pro"; name?: string } = {},
): Promise<Owner> {
  const email = options.email ?? `owner-${randomBytes(4).toString("hex")}@example.com`;
  const created = await createWorkspace(db, {
    name: options.name ?? `Claim ${randomBytes(3).toString("hex")}`,
    plan: options.plan ?? "pro",
    ownerEmail: email,
    ownerPassword: PASSWORD,
  });
  return { email, userId: created.owner_id, workspaceId: created.workspace_id };
}

interface Pending {
  registrationId: string;
  attemptToken: string;
  verificationUri: string;
  userCode: string;
}

/** A pending registration and a claim attempt for it, made directly (registration over HTTP is tested elsewhere). */
async function pendingClaim(
  server: TestServer,
  options: { loginHint?: string; sandboxWorkspaceId?: string; agentName?: string } = {},
): Promise<Pending> {
  const db = server.running.db.prisma;
  const registrationId = newId("agentRegistration");
  await db.agentRegistration.create({
    data: {
      id: registrationId,
      type: options.sandboxWorkspaceId ? "anonymous" : "service_auth",
      status: "pending",
      workspaceId: options.sandboxWorkspaceId ?? null,
      agentName: options.agentName ?? "Invoice Helper",
      loginHint: options.loginHint ?? null,
      scopes: [],
      postClaimScopes: ["invoices.read", "clients.read"],
    },
  });
  const started = await startClaimAttempt(db, {
    registrationId,
    loginHint: options.loginHint ?? null,
    hostUrl: server.url,
  });
  const attemptToken = new URL(started.claim.verification_uri).searchParams.get("claim_attempt_token")!;
  return {
    registrationId,
    attemptToken,
    verificationUri: started.claim.verification_uri,
    userCode: started.claim.user_code,
  };
}

const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

/** A browser-less visitor of the page: keeps cookies, reads the CSRF field out of each page. */
class Visitor {
  readonly cookies = new Map<string, string>();
  csrf = "";
  constructor(private readonly base: string) {}

  private remember(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const [name, value] = [pair!.slice(0, pair!.indexOf("=")), pair!.slice(pair!.indexOf("=") + 1)];
      if (attributes.some((a) => a.trim().toLowerCase() === "max-age=0")) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  private cookieHeader() {
    return [...this.cookies].map(([n, v]) => `${n}=${v}`).join("; ");
  }

  async get(url: string): Promise<{ status: number; html: string; headers: Headers }> {
    const response = await fetch(url, { headers: { cookie: this.cookieHeader() }, redirect: "manual" });
    this.remember(response);
    const html = await response.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? this.csrf;
    return { status: response.status, html, headers: response.headers };
  }

  async post(
    fields: Record<string, string>,
    init: { contentType?: string; body?: string } = {},
  ): Promise<{ status: number; html: string; headers: Headers }> {
    const response = await fetch(`${this.base}/agent/claim`, {
      method: "POST",
      headers: {
        cookie: this.cookieHeader(),
        "content-type": init.contentType ?? "application/x-www-form-urlencoded",
      },
      body: init.body ?? new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
    this.remember(response);
    const html = await response.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] ?? this.csrf;
    return { status: response.status, html, headers: response.headers };
  }

  /** Opens the claim link and signs in through its form. */
  async signIn(claim: Pending, email: string, password = PASSWORD) {
    const page = await this.get(claim.verificationUri);
    expect(page.status).toBe(200);
    return this.post({
      action: "sign_in",
      claim_attempt_token: claim.attemptToken,
      csrf_token: this.csrf,
      email,
      password,
    });
  }

  decide(claim: Pending, action: "approve" | "deny", extra: Record<string, string> = {}) {
    return this.post({ action, claim_attempt_token: claim.attemptToken, csrf_token: this.csrf, ...extra });
  }
}

/** The visible text of a page (tags dropped), for assertions that do not depend on markup. */
const text = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

e2e("agent claim page", (server) => {
  const db = () => server().running.db.prisma;
  let browser: Browser;
  const shots = mkdtempSync(join(tmpdir(), "kontor-claim-shots-"));

  beforeAll(async () => {
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    rmSync(shots, { recursive: true, force: true });
  });

  /** A fresh browser context that refuses (and records) any request leaving the server. */
  async function openPage(
    viewport = { width: 1280, height: 800 },
  ): Promise<{ page: Page; outside: string[] }> {
    const context = await browser.newContext({ viewport });
    const outside: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(server().url)) return route.continue();
      outside.push(url);
      return route.abort();
    });
    return { page: await context.newPage(), outside };
  }

  async function browserSignIn(page: Page, claim: Pending, email: string) {
    const response = await page.goto(claim.verificationUri);
    expect(response?.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toBe("Sign in to Kontor");
    await page.fill("#email", email);
    await page.fill("#password", PASSWORD);
    await page.click("button:has-text('Sign in')");
    await page.waitForSelector("#code");
  }

  describe("in a browser", () => {
    it("signs in, shows the agent, a wrong code leaves tries, the right code approves into the chosen workspace", async () => {
      const first = await owner(db(), { name: "Alpha Books" });
      const second = await owner(db(), { email: first.email, name: "Beta Studio" });
      const claim = await pendingClaim(server(), { loginHint: first.email, agentName: "Invoice Helper" });
      const { page, outside } = await openPage();

      await browserSignIn(page, claim, first.email);
      const cookie = (await page.context().cookies()).find((c) => c.name === SESSION_COOKIE);
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/", secure: false });
      const body = await page.locator("main").innerText();
      expect(body).toContain("Invoice Helper");
      expect(body).toContain("invoices.read");
      expect(body).toContain("clients.read");
      expect(await page.locator("#workspace_id option").allTextContents()).toEqual([
        "Alpha Books",
        "Beta Studio",
      ]);

      await page.selectOption("#workspace_id", second.workspaceId);
      await page.fill("#code", wrongCode(claim.userCode));
      await page.click("button:has-text('Approve')");
      await expect(page.locator("[role=alert]").textContent()).resolves.toBe(
        "That code is not right. 4 tries left.",
      );
      expect(await page.locator("#workspace_id").inputValue()).toBe(second.workspaceId);
      expect((await findClaimAttempt(db(), claim.attemptToken))!.wrongCodesLeft).toBe(4);

      await page.fill("#code", claim.userCode);
      await page.click("button:has-text('Approve')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Agent approved");
      expect(await page.locator("main").innerText()).toContain(
        "You can close this page; the agent will continue.",
      );

      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("approved");
      const registration = await db().agentRegistration.findUniqueOrThrow({
        where: { id: claim.registrationId },
      });
      expect(registration).toMatchObject({
        status: "active",
        workspaceId: second.workspaceId,
        claimedByUserId: first.userId,
        scopes: ["invoices.read", "clients.read"],
      });
      expect(outside).toEqual([]);
      await page.context().close();
    });

    it("deny: the registration is denied and the page says so", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server(), { loginHint: user.email });
      const { page } = await openPage();
      await browserSignIn(page, claim, user.email);
      await page.click("button:has-text('Deny')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Agent denied");
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("denied");
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).status,
      ).toBe("denied");

      const again = await page.goto(claim.verificationUri);
      expect(again?.status()).toBe(410);
      expect(await page.locator("main").innerText()).toContain("This request was denied.");
      await page.context().close();
    });

    it("an expired attempt shows a clear 410 page, before and after signing in", async () => {
      const user = await owner(db());
      const expired = await pendingClaim(server());
      await db().claimAttempt.updateMany({
        where: { registrationId: expired.registrationId },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      const { page } = await openPage();
      const response = await page.goto(expired.verificationUri);
      expect(response?.status()).toBe(410);
      await expect(page.locator("h1").textContent()).resolves.toBe("Link expired");
      expect(await page.locator("form").count()).toBe(0);

      // Expiring while the page is open: the right code is refused and nothing is decided.
      const claim = await pendingClaim(server());
      await browserSignIn(page, claim, user.email);
      await db().claimAttempt.updateMany({
        where: { registrationId: claim.registrationId },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      await page.fill("#code", claim.userCode);
      await page.click("button:has-text('Approve')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Link expired");
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).status,
      ).toBe("pending");
      await page.context().close();
    });

    it("renders at phone width (390×844) with the form usable, and approves from there", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server(), {
        agentName: "A helper with a rather long descriptive name for small screens",
      });
      const { page, outside } = await openPage({ width: 390, height: 844 });
      await browserSignIn(page, claim, user.email);

      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      for (const selector of [
        "#workspace_id",
        "#code",
        "button:has-text('Approve')",
        "button:has-text('Deny')",
      ]) {
        const box = await page.locator(selector).boundingBox();
        expect(box, selector).not.toBeNull();
        expect(box!.x, selector).toBeGreaterThanOrEqual(0);
        expect(box!.x + box!.width, selector).toBeLessThanOrEqual(390);
        expect(box!.height, selector).toBeGreaterThanOrEqual(40);
      }
      const shot = join(shots, "claim-phone.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(5_000);

      await page.fill("#code", claim.userCode);
      await page.click("button:has-text('Approve')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Agent approved");
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("approved");
      expect(outside).toEqual([]);
      await page.context().close();
    });
  });

  describe("decisions", () => {
    it("the sixth code is refused even when right: five wrong codes close the attempt", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      expect((await visitor.signIn(claim, user.email)).status).toBe(303);
      await visitor.get(claim.verificationUri);
      for (let left = 4; left >= 1; left--) {
        const wrong = await visitor.decide(claim, "approve", {
          code: wrongCode(claim.userCode),
          workspace_id: user.workspaceId,
        });
        expect(wrong.status).toBe(422);
        expect(text(wrong.html)).toContain(
          `That code is not right. ${left} ${left === 1 ? "try" : "tries"} left.`,
        );
      }
      const fifth = await visitor.decide(claim, "approve", {
        code: wrongCode(claim.userCode),
        workspace_id: user.workspaceId,
      });
      expect(fifth.status).toBe(410);
      expect(text(fifth.html)).toContain("Too many wrong codes");

      const sixth = await visitor.decide(claim, "approve", {
        code: claim.userCode,
        workspace_id: user.workspaceId,
      });
      expect(sixth.status).toBe(410);
      expect(text(sixth.html)).toContain("Too many wrong codes");
      const attempt = await db().claimAttempt.findFirstOrThrow({
        where: { registrationId: claim.registrationId },
      });
      expect(attempt).toMatchObject({ status: "dead", failedCodes: 5 });
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).status,
      ).toBe("pending");
    });

    it("a code that is not 6 digits is asked again without counting against the attempt", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);
      const blank = await visitor.decide(claim, "approve", { code: "12a", workspace_id: user.workspaceId });
      expect(blank.status).toBe(422);
      expect(text(blank.html)).toContain("Type the 6-digit code");
      expect((await findClaimAttempt(db(), claim.attemptToken))!.wrongCodesLeft).toBe(5);
    });

    it("a workspace whose agent access is off is refused with its reason; another one can then be chosen", async () => {
      const user = await owner(db(), { plan: "free", name: "Free corner" });
      const paid = await owner(db(), { email: user.email, name: "Paid shop" });
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);
      const refused = await visitor.decide(claim, "approve", {
        code: claim.userCode,
        workspace_id: user.workspaceId,
      });
      expect(refused.status).toBe(403);
      expect(text(refused.html)).toContain("Agent access is turned off for this workspace.");
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("pending");

      const approved = await visitor.decide(claim, "approve", {
        code: claim.userCode,
        workspace_id: paid.workspaceId,
      });
      expect(approved.status).toBe(200);
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).workspaceId,
      ).toBe(paid.workspaceId);
    });

    it("a workspace the user does not own is refused", async () => {
      const user = await owner(db());
      const stranger = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);
      expect(visitor.csrf).not.toBe("");
      const refused = await visitor.decide(claim, "approve", {
        code: claim.userCode,
        workspace_id: stranger.workspaceId,
      });
      expect(refused.status).toBe(403);
      expect(text(refused.html)).toContain("Only an owner of the workspace can let an agent in.");
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).status,
      ).toBe("pending");
    });

    it("an anonymous agent is claimed into its sandbox only, which becomes the user's", async () => {
      const user = await owner(db(), { name: "Own place" });
      const sandboxId = newId("workspace");
      await db().workspace.create({
        data: {
          id: sandboxId,
          name: "Sandbox 7f3a",
          plan: "free",
          agentAuthEnabled: true,
          sandboxExpiresAt: new Date(Date.now() + 86_400_000),
        },
      });
      const claim = await pendingClaim(server(), { sandboxWorkspaceId: sandboxId });
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      const page = await visitor.get(claim.verificationUri);
      expect(text(page.html)).toContain("Sandbox 7f3a");
      expect(page.html).not.toContain("Own place");
      expect(page.html).not.toContain("<select");
      const approved = await visitor.decide(claim, "approve", {
        code: claim.userCode,
        workspace_id: user.workspaceId,
      });
      expect(approved.status).toBe(200);
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).workspaceId,
      ).toBe(sandboxId);
      expect(
        await db().membership.findUnique({
          where: { workspaceId_userId: { workspaceId: sandboxId, userId: user.userId } },
        }),
      ).toMatchObject({ role: "owner" });
      expect(
        (await db().workspace.findUniqueOrThrow({ where: { id: sandboxId } })).sandboxExpiresAt,
      ).toBeNull();
    });
  });

  describe("CSRF", () => {
    it("a decision without the session's CSRF token is refused with 403 and decides nothing", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);
      const fields = {
        claim_attempt_token: claim.attemptToken,
        code: claim.userCode,
        workspace_id: user.workspaceId,
      };

      const missing = await visitor.post({ action: "approve", ...fields });
      expect(missing.status).toBe(403);
      expect(missing.headers.get("content-type")).toMatch(/^text\/html/);
      expect(text(missing.html)).toContain("nothing was done");
      const wrong = await visitor.post({ action: "approve", csrf_token: "x".repeat(43), ...fields });
      expect(wrong.status).toBe(403);
      const deny = await visitor.post({ action: "deny", claim_attempt_token: claim.attemptToken });
      expect(deny.status).toBe(403);

      const attempt = await findClaimAttempt(db(), claim.attemptToken);
      expect(attempt).toMatchObject({ status: "pending", wrongCodesLeft: 5 });
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: claim.registrationId } })).status,
      ).toBe("pending");
      // With the token, the same submission goes through.
      expect(
        (await visitor.decide(claim, "approve", { code: claim.userCode, workspace_id: user.workspaceId }))
          .status,
      ).toBe(200);
    });

    it("one session's CSRF token does not work for another session", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const mine = new Visitor(server().url);
      const theirs = new Visitor(server().url);
      await mine.signIn(claim, user.email);
      await mine.get(claim.verificationUri);
      await theirs.signIn(claim, user.email);
      await theirs.get(claim.verificationUri);
      expect(theirs.csrf).not.toBe(mine.csrf);
      theirs.csrf = mine.csrf;
      expect((await theirs.decide(claim, "deny")).status).toBe(403);
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("pending");
    });

    it("sign-in without the pre-session CSRF cookie, or with a different token, is refused and signs nobody in", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.get(claim.verificationUri);
      const fields = {
        action: "sign_in",
        claim_attempt_token: claim.attemptToken,
        email: user.email,
        password: PASSWORD,
      };
      expect((await visitor.post({ ...fields, csrf_token: "y".repeat(43) })).status).toBe(403);
      const cookieToken = visitor.csrf;
      visitor.cookies.clear();
      const noCookie = await visitor.post({ ...fields, csrf_token: cookieToken });
      expect(noCookie.status).toBe(403);
      expect(visitor.cookies.has(SESSION_COOKIE)).toBe(false);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);
    });
  });

  describe("sessions", () => {
    it("a session lives in the database; sign-out ends it and the old cookie no longer works", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      const signedIn = await visitor.signIn(claim, user.email);
      expect(signedIn.status).toBe(303);
      expect(signedIn.headers.get("location")).toBe(`/agent/claim?claim_attempt_token=${claim.attemptToken}`);
      const setCookie = signedIn.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`))!;
      expect(setCookie).toMatch(/HttpOnly/);
      expect(setCookie).toMatch(/SameSite=Lax/);
      expect(setCookie).toMatch(/Path=\//);
      expect(setCookie).toMatch(/Max-Age=43200/);
      const row = await db().session.findFirstOrThrow({ where: { userId: user.userId } });
      expect(row.id).not.toBe(visitor.cookies.get(SESSION_COOKIE));
      expect(row.expiresAt.getTime()).toBeGreaterThan(Date.now() + 11 * 3_600_000);

      const oldCookie = visitor.cookies.get(SESSION_COOKIE)!;
      await visitor.get(claim.verificationUri);
      const forged = await visitor.post({ action: "sign_out", claim_attempt_token: claim.attemptToken });
      expect(forged.status).toBe(403);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(1);
      const out = await visitor.post({
        action: "sign_out",
        claim_attempt_token: claim.attemptToken,
        csrf_token: visitor.csrf,
      });
      expect(out.status).toBe(303);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);

      const replay = await fetch(claim.verificationUri, {
        headers: { cookie: `${SESSION_COOKIE}=${oldCookie}` },
      });
      expect(text(await replay.text())).toContain("Sign in to Kontor");
    });

    it("the cookie is Secure outside development", () => {
      expect(cookieHeader({ ...server().config, env: "production" }, SESSION_COOKIE, "t", 60)).toMatch(
        /; Secure$/,
      );
      expect(cookieHeader({ ...server().config, env: "development" }, SESSION_COOKIE, "t", 60)).not.toContain(
        "Secure",
      );
    });

    it("an expired session shows the sign-in form, and a decision with it decides nothing", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);
      await db().session.updateMany({
        where: { userId: user.userId },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      const page = await visitor.get(claim.verificationUri);
      expect(text(page.html)).toContain("Sign in to Kontor");
      const decided = await visitor.decide(claim, "deny");
      expect(decided.status).toBe(401);
      expect(text(decided.html)).toContain("Your session ended");
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("pending");
    });

    it("a wrong password and an unknown e-mail get the same answer", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const wrong = await new Visitor(server().url).signIn(claim, user.email, "not the password at all");
      const unknown = await new Visitor(server().url).signIn(
        claim,
        `nobody-${randomBytes(3).toString("hex")}@example.com`,
      );
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      const alert = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
      expect(alert(wrong.html)).toBe("The e-mail or password is not right.");
      expect(alert(unknown.html)).toBe(alert(wrong.html));
      expect(wrong.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=`))).toBe(false);
    });

    it("five failed sign-ins lock the account: the sixth is told to wait even with the right password; others are unaffected", async () => {
      const user = await owner(db());
      const other = await owner(db());
      const claim = await pendingClaim(server());
      for (let i = 0; i < 5; i++) {
        expect((await new Visitor(server().url).signIn(claim, user.email, `guess number ${i}`)).status).toBe(
          401,
        );
      }
      const locked = await new Visitor(server().url).signIn(claim, user.email.toUpperCase());
      expect(locked.status).toBe(429);
      expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(text(locked.html)).toMatch(/Too many sign-in attempts\. Wait \d+ minutes? and try again\./);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);

      expect((await new Visitor(server().url).signIn(claim, other.email)).status).toBe(303);
    });
  });

  describe("bad requests", () => {
    it("unknown, malformed and missing claim_attempt_tokens get clear pages, not errors", async () => {
      const unknown = await fetch(`${server().url}/agent/claim?claim_attempt_token=cat_${"A".repeat(43)}`);
      expect(unknown.status).toBe(404);
      expect(text(await unknown.text())).toContain("does not match any request");
      const malformed = await fetch(`${server().url}/agent/claim?claim_attempt_token=${"%00".repeat(50)}`);
      expect(malformed.status).toBe(404);
      const missing = await fetch(`${server().url}/agent/claim`);
      expect(missing.status).toBe(400);
      expect(text(await missing.text())).toContain("no claim_attempt_token");
    });

    it("every page carries the security headers and no script", async () => {
      const claim = await pendingClaim(server());
      for (const url of [claim.verificationUri, `${server().url}/agent/claim`]) {
        const response = await fetch(url);
        const csp = response.headers.get("content-security-policy")!;
        expect(csp).toContain("default-src 'none'");
        expect(csp).toContain("frame-ancestors 'none'");
        expect(csp).not.toContain("script-src");
        expect(response.headers.get("x-frame-options")).toBe("DENY");
        expect(response.headers.get("cache-control")).toBe("no-store");
        expect(response.headers.get("referrer-policy")).toBe("no-referrer");
        expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
        expect(response.headers.get("x-request-id")).toMatch(/^req_/);
        const html = await response.text();
        expect(html).not.toMatch(/<script/i);
        expect(html).not.toMatch(/(src|href)="https?:/);
      }
    });

    it("the code never appears in a URL: the forms post to the bare path", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      const page = await visitor.get(claim.verificationUri);
      expect([...page.html.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1])).toEqual([
        "/agent/claim",
        "/agent/claim",
      ]);
      expect(page.html).not.toContain(claim.userCode);
    });

    it("a wrong content type, a huge body, a repeated field or an unknown action get a 4xx page", async () => {
      const user = await owner(db());
      const claim = await pendingClaim(server());
      const visitor = new Visitor(server().url);
      await visitor.signIn(claim, user.email);
      await visitor.get(claim.verificationUri);

      const json = await visitor.post(
        {},
        { contentType: "application/json", body: JSON.stringify({ action: "approve" }) },
      );
      expect(json.status).toBe(415);
      expect(json.headers.get("content-type")).toMatch(/^text\/html/);
      const huge = await visitor.post(
        {},
        { body: `action=deny&pad=${"a".repeat(MAX_CLAIM_FORM_BYTES * 20)}` },
      );
      expect(huge.status).toBe(413);
      const repeated = await visitor.post(
        {},
        {
          body: `action=deny&action=approve&claim_attempt_token=${claim.attemptToken}&csrf_token=${visitor.csrf}`,
        },
      );
      expect(repeated.status).toBe(400);
      expect(text(repeated.html)).toContain("sent more than once");
      const unknownAction = await visitor.post({
        action: "delete_everything",
        claim_attempt_token: claim.attemptToken,
        csrf_token: visitor.csrf,
      });
      expect(unknownAction.status).toBe(400);
      const noToken = await visitor.post({ action: "deny", csrf_token: visitor.csrf });
      expect(noToken.status).toBe(400);
      const garbage = await visitor.post({}, { body: "%%%&&&==\u0000" });
      expect(garbage.status).toBeGreaterThanOrEqual(400);
      expect(garbage.status).toBeLessThan(500);
      expect((await findClaimAttempt(db(), claim.attemptToken))!.status).toBe("pending");
    });
  });
});

e2e("agent claim page sign-in limit per client IP", (server) => {
  it("twenty failed sign-ins from one address make the next one wait, whatever the account", async () => {
    const db = server().running.db.prisma;
    const user = await owner(db);
    const claim = await pendingClaim(server());
    for (let i = 0; i < 20; i++) {
      const failed = await new Visitor(server().url).signIn(
        claim,
        `guess-${i}-${randomBytes(3).toString("hex")}@example.com`,
      );
      expect(failed.status).toBe(401);
    }
    const blocked = await new Visitor(server().url).signIn(claim, user.email);
    expect(blocked.status).toBe(429);
    expect(text(blocked.html)).toContain("Too many sign-in attempts.");
    expect(await db.session.count({ where: { userId: user.userId } })).toBe(0);
  });
});
