import { randomBytes, randomUUID } from "node:crypto";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { claimIsFor, findClaimAttempt } from "../../../server/agents/claims.ts";
import {
  CLAIM_GRANT_TYPE,
  type ClaimBlock,
  decide,
  forgetLastPoll,
  granted,
  identity,
  ownerNamed,
  ownerOf,
  refused,
  registerAnonymous,
  registerServiceAuth,
  tokenClient,
} from "../../support/agent-flow.ts";
import { useChromium } from "../../support/chromium.ts";
import { ClaimVisitor } from "../../support/claim-visitor.ts";
import { rest } from "../../support/http.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const PASSWORD = "correct horse battery staple";
const ID_JAG = "urn:ietf:params:oauth:token-type:id-jag";

const attemptTokenOf = (claim: ClaimBlock) =>
  new URL(claim.verification_uri).searchParams.get("claim_attempt_token")!;
const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

/**
 * A claim started with a login_hint (service_auth, an anonymous agent's claim ceremony, an ID-JAG
 * carrying an e-mail) is approved only by the account with that e-mail; anyone else signed in sees
 * whom it is for and may only deny it or sign out (docs/security.md#claims-are-bound-to-their-person).
 */
e2e("claims are bound to their person", (server) => {
  const db = () => server().running.db.prisma;
  const browser = useChromium();

  /** A person with an account that owns a workspace of their own. */
  async function person(name: string) {
    const email = `${name}-${randomBytes(4).toString("hex")}@example.com`;
    const created = await createWorkspace(db(), {
      name: `${name} Ltd`,
      plan: "pro",
      ownerEmail: email,
      ownerPassword: PASSWORD,
    });
    return { email, userId: created.owner_id, workspaceId: created.workspace_id };
  }

  const poll = async (registrationId: string, claimToken: string) => {
    await forgetLastPoll(server(), registrationId);
    return tokenClient(server().url)(CLAIM_GRANT_TYPE, { claim_token: claimToken });
  };

  /** Nothing was decided: the registration and its attempt wait untouched, no token exists, the agent's poll is pending. */
  async function expectUndecided(registrationId: string, claimToken: string, claim: ClaimBlock) {
    expect(await db().agentRegistration.findUniqueOrThrow({ where: { id: registrationId } })).toMatchObject({
      status: "pending",
      claimedAt: null,
      claimedByUserId: null,
    });
    expect(
      await db().claimAttempt.findFirstOrThrow({ where: { registrationId, status: { not: "dead" } } }),
    ).toMatchObject({ status: "pending", failedCodes: 0, userId: null });
    expect((await findClaimAttempt(db(), attemptTokenOf(claim)))?.status).toBe("pending");
    expect(await db().agentToken.count({ where: { registrationId } })).toBe(0);
    refused(await poll(registrationId, claimToken), 400, "authorization_pending");
  }

  it("compares the login hint with the account's e-mail trimmed and in any letter case", () => {
    expect(claimIsFor(" Alice@Example.COM ", "alice@example.com")).toBe(true);
    expect(claimIsFor("alice@example.com", "mallory@example.com")).toBe(false);
    expect(claimIsFor("alice@example.com", "alice@example.com.evil.test")).toBe(false);
    expect(claimIsFor(null, "anyone@example.com")).toBe(true);
  });

  describe("over HTTP", () => {
    it("service_auth: another account's approval is refused and changes nothing, not even the code count; the named person approves", async () => {
      const alice = await person("alice");
      const mallory = await person("mallory");
      const agent = await registerServiceAuth(server(), `  ${alice.email.toUpperCase()} `, {
        agent_name: "Ledger bot",
      });
      const uri = agent.claim.verification_uri;

      const intruder = new ClaimVisitor(server().url);
      const page = await intruder.signIn(uri, mallory.email, PASSWORD);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`This request is for ${alice.email}.`);
      expect(page.text).toContain(`You are signed in as ${mallory.email}.`);
      expect(page.html).not.toContain('value="approve"');
      expect(page.html).not.toContain('name="code"');
      expect(page.html).toContain('value="deny"');
      expect(page.html).toContain('value="sign_out"');

      // The right code into the intruder's own workspace: refused, with the reason.
      const forged = await intruder.decide(uri, "approve", {
        code: agent.claim.user_code,
        workspace_id: mallory.workspaceId,
      });
      expect(forged.status).toBe(403);
      expect(forged.text).toContain(
        `Only ${alice.email} can approve this request; you are signed in as ${mallory.email}. Nothing was decided.`,
      );
      // Wrong codes from the wrong account are refused the same way and never count against the attempt.
      for (let i = 0; i < 6; i++) {
        expect(
          (
            await intruder.decide(uri, "approve", {
              code: wrongCode(agent.claim.user_code),
              workspace_id: mallory.workspaceId,
            })
          ).status,
        ).toBe(403);
      }
      // The rule is the server's, not the page's: the decision itself refuses the wrong account.
      expect(
        await decide(server(), agent.claim, mallory.userId, { workspaceId: mallory.workspaceId }),
      ).toEqual({ outcome: "wrong_person", loginHint: alice.email });
      await expectUndecided(agent.registration_id, agent.claim_token, agent.claim);

      // Alice, typing her e-mail in other letters, sees the decision form and approves.
      const owner = new ClaimVisitor(server().url);
      const hers = await owner.signIn(uri, alice.email.toUpperCase(), PASSWORD);
      expect(hers.html).toContain('value="approve"');
      expect(hers.text).not.toContain("This request is for");
      const approved = await owner.decide(uri, "approve", {
        code: agent.claim.user_code,
        workspace_id: alice.workspaceId,
      });
      expect(approved.status, approved.text).toBe(200);
      expect(approved.text).toContain("The agent is let in.");
      expect(
        await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } }),
      ).toMatchObject({
        status: "active",
        workspaceId: alice.workspaceId,
        claimedByUserId: alice.userId,
      });
      const token = granted(await poll(agent.registration_id, agent.claim_token));
      expect(
        (await fetch(`${server().api}/leads`, { headers: { authorization: `Bearer ${token.access_token}` } }))
          .status,
      ).toBe(200);
    });

    it("another account may deny: the request ends, and the agent is told access_denied", async () => {
      const alice = await person("alice");
      const mallory = await person("mallory");
      const agent = await registerServiceAuth(server(), alice.email);
      const intruder = new ClaimVisitor(server().url);
      await intruder.signIn(agent.claim.verification_uri, mallory.email, PASSWORD);
      const denied = await intruder.decide(agent.claim.verification_uri, "deny");
      expect(denied.status).toBe(200);
      expect(denied.text).toContain("The agent was not let in.");
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })).status,
      ).toBe("denied");
      expect(
        await db().claimAttempt.findFirstOrThrow({ where: { registrationId: agent.registration_id } }),
      ).toMatchObject({ status: "denied", userId: mallory.userId });
      refused(await poll(agent.registration_id, agent.claim_token), 400, "access_denied");
      const late = await new ClaimVisitor(server().url).get(agent.claim.verification_uri);
      expect(late.status).toBe(410);
    });

    it("an anonymous agent's claim (login_hint at /agent/identity/claim) is bound the same way", async () => {
      const alice = await person("alice");
      const mallory = await person("mallory");
      const agent = await registerAnonymous(server(), "Scout");
      const started = await identity(
        server(),
        { type: "login_hint", claim_token: agent.claim_token, login_hint: alice.email },
        "/agent/identity/claim",
      );
      expect(started.status, started.text).toBe(200);
      const claim = started.json.claim_attempt as ClaimBlock;
      const sandbox = (
        await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })
      ).workspaceId!;

      const intruder = new ClaimVisitor(server().url);
      expect((await intruder.signIn(claim.verification_uri, mallory.email, PASSWORD)).text).toContain(
        `This request is for ${alice.email}.`,
      );
      const forged = await intruder.decide(claim.verification_uri, "approve", { code: claim.user_code });
      expect(forged.status).toBe(403);
      expect(forged.text).toContain(`Only ${alice.email} can approve this request`);
      expect(await decide(server(), claim, mallory.userId)).toEqual({
        outcome: "wrong_person",
        loginHint: alice.email,
      });
      expect(await db().membership.count({ where: { workspaceId: sandbox } })).toBe(0);
      expect(
        (await db().workspace.findUniqueOrThrow({ where: { id: sandbox } })).sandboxExpiresAt,
      ).not.toBeNull();
      await expectUndecided(agent.registration_id, agent.claim_token, claim);

      const owner = new ClaimVisitor(server().url);
      await owner.signIn(claim.verification_uri, alice.email, PASSWORD);
      expect((await owner.decide(claim.verification_uri, "approve", { code: claim.user_code })).status).toBe(
        200,
      );
      const claimed = await db().workspace.findUniqueOrThrow({
        where: { id: sandbox },
        include: { memberships: true },
      });
      expect(claimed.sandboxExpiresAt).toBeNull();
      expect(claimed.memberships).toEqual([expect.objectContaining({ userId: alice.userId, role: "owner" })]);
      granted(await poll(agent.registration_id, agent.claim_token));
    });
  });

  describe("identity assertions (ID-JAG)", () => {
    let provider: IdJagProvider;
    let tenant: Tenant;
    beforeAll(async () => {
      provider = await IdJagProvider.start();
      tenant = await server().tenant({ plan: "pro" });
      const trusted = await rest(server().api, tenant.key).post("/trusted-providers", {
        issuer: provider.issuer,
        jwks_url: provider.jwksUrl,
      });
      expect(trusted.status, JSON.stringify(trusted.body)).toBe(201);
    });
    afterAll(() => provider?.close());

    const register = async (sub: string, claims: Record<string, unknown> = {}) =>
      identity(server(), {
        type: "identity_assertion",
        assertion_type: ID_JAG,
        assertion: await provider.idJag(server().url, sub, claims),
      });

    it("the first link is bound to the ID-JAG's e-mail: an owner of the trusting workspace with another e-mail cannot confirm it", async () => {
      const sub = `user-${randomUUID()}`;
      const email = `Idp-${sub}@Example.COM`;
      const first = await register(sub, { email });
      expect(first.status, first.text).toBe(401);
      const claim = first.json.claim as ClaimBlock;
      const other = await ownerOf(server(), tenant.workspaceId);
      expect(await decide(server(), claim, other.userId, { workspaceId: tenant.workspaceId })).toEqual({
        outcome: "wrong_person",
        loginHint: email,
      });
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: first.json.registration_id } }))
          .status,
      ).toBe("pending");

      const named = await ownerNamed(server(), tenant.workspaceId, email);
      expect(await decide(server(), claim, named.userId, { workspaceId: tenant.workspaceId })).toEqual({
        outcome: "approved",
        workspaceId: tenant.workspaceId,
      });
      expect((await register(sub, { email })).status).toBe(200);
    });

    it("an ID-JAG without an e-mail names no one: any owner of a trusting workspace may confirm it", async () => {
      const sub = `user-${randomUUID()}`;
      const first = await register(sub, {
        email: undefined,
        email_verified: undefined,
        phone_number_verified: true,
      });
      expect(first.status, first.text).toBe(401);
      const other = await ownerOf(server(), tenant.workspaceId);
      expect(
        await decide(server(), first.json.claim, other.userId, { workspaceId: tenant.workspaceId }),
      ).toMatchObject({ outcome: "approved" });
    });
  });

  describe("in a browser", () => {
    async function openPage(): Promise<{ context: BrowserContext; page: Page }> {
      const context = await browser().newContext({ viewport: { width: 390, height: 844 } });
      await context.route("**/*", (route) =>
        route.request().url().startsWith(server().url) ? route.continue() : route.abort(),
      );
      return { context, page: await context.newPage() };
    }

    async function signIn(page: Page, email: string) {
      await page.fill("#email", email);
      await page.fill("#password", PASSWORD);
      await page.click("button:has-text('Sign in')");
      await page.waitForLoadState();
    }

    it("the wrong account sees whom the request is for, cannot approve (a forged approval fails), signs out; the named person approves", async () => {
      const alice = await person("alice");
      const mallory = await person("mallory");
      const agent = await registerServiceAuth(server(), alice.email, { agent_name: "Ledger bot" });
      const { context, page } = await openPage();

      await page.goto(agent.claim.verification_uri);
      await expect(page.locator("h1").textContent()).resolves.toBe("Sign in to Kontor");
      expect(await page.locator("main").innerText()).toContain(`An agent asks to work for ${alice.email}.`);
      await signIn(page, mallory.email);
      await expect(page.locator("h1").textContent()).resolves.toBe("This request is for someone else");
      await expect(page.locator(".banner-warn").innerText()).resolves.toBe(
        `This request is for ${alice.email}.`,
      );
      const body = await page.locator("main").innerText();
      expect(body).toContain(
        `“Ledger bot” asks to work for ${alice.email}, and only that account can approve it. You are signed in as ${mallory.email}.`,
      );
      expect(await page.locator("button:has-text('Approve')").count()).toBe(0);
      expect(await page.locator("#code, #workspace_id").count()).toBe(0);
      expect(await page.locator("button:has-text('Deny')").isVisible()).toBe(true);

      // A forged approval with the session's own CSRF token and the right code.
      const forged = await context.request.post(`${server().url}/agent/claim`, {
        headers: { origin: server().url },
        form: {
          action: "approve",
          claim_attempt_token: attemptTokenOf(agent.claim),
          csrf_token: await page.locator("input[name=csrf_token]").first().inputValue(),
          code: agent.claim.user_code,
          workspace_id: mallory.workspaceId,
        },
      });
      expect(forged.status()).toBe(403);
      expect(await forged.text()).toContain(`Only ${alice.email} can approve this request`);
      await expectUndecided(agent.registration_id, agent.claim_token, agent.claim);

      // Sign out returns to the claim page, where the named person signs in and approves.
      await page.click("button:has-text('Sign out')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Sign in to Kontor");
      expect(page.url()).toBe(agent.claim.verification_uri);
      expect(await db().session.count({ where: { userId: mallory.userId } })).toBe(0);
      await signIn(page, alice.email.toUpperCase());
      await page.fill("#code", agent.claim.user_code);
      await page.click("button:has-text('Approve')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Agent approved");
      expect(
        await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } }),
      ).toMatchObject({
        status: "active",
        workspaceId: alice.workspaceId,
        claimedByUserId: alice.userId,
      });
      granted(await poll(agent.registration_id, agent.claim_token));
      await context.close();
    });

    it("the wrong account can deny", async () => {
      const alice = await person("alice");
      const mallory = await person("mallory");
      const agent = await registerServiceAuth(server(), alice.email);
      const { context, page } = await openPage();
      await page.goto(agent.claim.verification_uri);
      await signIn(page, mallory.email);
      await expect(page.locator(".banner-warn").innerText()).resolves.toBe(
        `This request is for ${alice.email}.`,
      );
      await page.click("button:has-text('Deny')");
      await expect(page.locator("h1").textContent()).resolves.toBe("Agent denied");
      expect(await page.locator("main").innerText()).toContain("The agent was not let in.");
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })).status,
      ).toBe("denied");
      expect(
        await db().claimAttempt.findFirstOrThrow({ where: { registrationId: agent.registration_id } }),
      ).toMatchObject({ status: "denied", userId: mallory.userId });
      await context.close();
    });
  });
});
