import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import {
  decideClaim,
  findClaimAttempt,
  MAX_WRONG_CODES,
  startClaimAttempt,
} from "../../../server/agents/claims.ts";
import { AgentTokenResolver, issueAgentToken } from "../../../server/auth/agent-tokens.ts";
import { e2e } from "../../support/suite.ts";

/** The claim decision itself (server/agents/claims.ts), against a real database: the rules every way of claiming relies on. */
e2e("agent claim decisions", (server) => {
  const db = () => server().running.db.prisma;
  let ownerId: string;
  let workspaceId: string;

  async function workspace(plan: PlanName, agentAuth = true) {
    const ws = await createWorkspace(db(), {
      name: "Claims",
      plan,
      ownerEmail: `owner-${newId("request")}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    if (!agentAuth)
      await db().workspace.update({ where: { id: ws.workspace_id }, data: { agentAuthEnabled: false } });
    return { workspaceId: ws.workspace_id, ownerId: ws.owner_id };
  }

  async function pending(type: "service_auth" | "anonymous" = "service_auth", sandbox: string | null = null) {
    const registration = await db().agentRegistration.create({
      data: {
        id: newId("agentRegistration"),
        type,
        status: "pending",
        workspaceId: sandbox,
        agentName: "Test agent",
        scopes: type === "anonymous" ? ["leads.read"] : [],
        postClaimScopes: ["leads.read", "leads.write"],
      },
    });
    const started = await startClaimAttempt(db(), {
      registrationId: registration.id,
      loginHint: null,
      hostUrl: server().url,
    });
    const token = new URL(started.claim.verification_uri).searchParams.get("claim_attempt_token")!;
    return {
      registration,
      attemptId: started.attemptId,
      code: started.claim.user_code,
      token,
      claim: started.claim,
    };
  }

  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

  beforeAll(async () => {
    ({ workspaceId, ownerId } = await workspace("pro"));
  });

  it("starts an attempt: a 6-digit code, a verification_uri on the claim page that carries the attempt token and never the code", async () => {
    const { claim, token, attemptId } = await pending();
    expect(claim.user_code).toMatch(/^\d{6}$/);
    expect(claim).toMatchObject({ expires_in: 600, interval: 5 });
    expect(claim.verification_uri.startsWith(`${server().url}/agent/claim?claim_attempt_token=cat_`)).toBe(
      true,
    );
    expect(claim.verification_uri).not.toContain(claim.user_code);
    const view = await findClaimAttempt(db(), token);
    expect(view).toMatchObject({
      attemptId,
      status: "pending",
      wrongCodesLeft: MAX_WRONG_CODES,
      registration: { agentName: "Test agent", scopes: ["leads.read", "leads.write"] },
    });
    expect(await findClaimAttempt(db(), `cat_${"A".repeat(43)}`)).toBeNull();
    expect(await findClaimAttempt(db(), "not-a-token")).toBeNull();
  });

  it("approves with the right code into a workspace the user owns: the registration is active at its post-claim scopes", async () => {
    const { registration, attemptId, code, token } = await pending();
    expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code, workspaceId })).toEqual(
      { outcome: "approved", workspaceId },
    );
    const after = await db().agentRegistration.findUniqueOrThrow({ where: { id: registration.id } });
    expect(after).toMatchObject({
      status: "active",
      workspaceId,
      scopes: ["leads.read", "leads.write"],
      claimedByUserId: ownerId,
    });
    expect((await findClaimAttempt(db(), token))?.status).toBe("approved");
    // Decided once: a second answer changes nothing.
    expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: false })).toEqual({
      outcome: "closed",
      reason: "decided",
    });
  });

  it(`counts wrong codes; the ${MAX_WRONG_CODES}th kills the attempt and the right code is refused after it`, async () => {
    const { attemptId, code, registration } = await pending();
    for (let left = MAX_WRONG_CODES - 1; left >= 1; left--) {
      expect(
        await decideClaim(db(), {
          attemptId,
          userId: ownerId,
          approve: true,
          code: wrong(code),
          workspaceId,
        }),
      ).toEqual({ outcome: "wrong_code", wrongCodesLeft: left });
    }
    expect(
      await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code: wrong(code), workspaceId }),
    ).toEqual({ outcome: "closed", reason: "too_many_wrong_codes" });
    expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code, workspaceId })).toEqual(
      { outcome: "closed", reason: "too_many_wrong_codes" },
    );
    expect((await db().agentRegistration.findUniqueOrThrow({ where: { id: registration.id } })).status).toBe(
      "pending",
    );
  });

  it("counts concurrent wrong codes one by one", async () => {
    const { attemptId, code } = await pending();
    const answers = await Promise.all(
      Array.from({ length: MAX_WRONG_CODES + 3 }, () =>
        decideClaim(db(), { attemptId, userId: ownerId, approve: true, code: wrong(code), workspaceId }),
      ),
    );
    expect(answers.filter((a) => a.outcome === "wrong_code")).toHaveLength(MAX_WRONG_CODES - 1);
    expect((await db().claimAttempt.findUniqueOrThrow({ where: { id: attemptId } })).failedCodes).toBe(
      MAX_WRONG_CODES,
    );
  });

  it("an expired attempt cannot be approved", async () => {
    const { attemptId, code, token } = await pending();
    await db().claimAttempt.update({
      where: { id: attemptId },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect((await findClaimAttempt(db(), token))?.status).toBe("expired");
    expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code, workspaceId })).toEqual(
      { outcome: "closed", reason: "expired" },
    );
  });

  it("a denial ends a service_auth registration", async () => {
    const { attemptId, registration } = await pending();
    expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: false })).toEqual({
      outcome: "denied",
    });
    expect((await db().agentRegistration.findUniqueOrThrow({ where: { id: registration.id } })).status).toBe(
      "denied",
    );
  });

  it("refuses a workspace the user does not own, one with agent auth off, and one at its plan's cap", async () => {
    const stranger = await workspace("pro");
    const { attemptId, code } = await pending();
    expect(
      await decideClaim(db(), {
        attemptId,
        userId: ownerId,
        approve: true,
        code,
        workspaceId: stranger.workspaceId,
      }),
    ).toMatchObject({ outcome: "refused", reason: "not_owner" });

    const off = await workspace("pro", false);
    const second = await pending();
    expect(
      await decideClaim(db(), {
        attemptId: second.attemptId,
        userId: off.ownerId,
        approve: true,
        code: second.code,
        workspaceId: off.workspaceId,
      }),
    ).toMatchObject({
      outcome: "refused",
      reason: "agent_auth_disabled",
    });

    const free = await workspace("free");
    await db().workspace.update({ where: { id: free.workspaceId }, data: { agentAuthEnabled: true } });
    const cap = PLAN_LIMITS.free.agent_registrations;
    for (let i = 0; i < cap; i++) {
      const next = await pending();
      expect(
        await decideClaim(db(), {
          attemptId: next.attemptId,
          userId: free.ownerId,
          approve: true,
          code: next.code,
          workspaceId: free.workspaceId,
        }),
      ).toMatchObject({ outcome: "approved" });
    }
    const over = await pending();
    expect(
      await decideClaim(db(), {
        attemptId: over.attemptId,
        userId: free.ownerId,
        approve: true,
        code: over.code,
        workspaceId: free.workspaceId,
      }),
    ).toMatchObject({
      outcome: "refused",
      reason: "plan_limit_reached",
    });
  });

  it("an agent vouched for by an ID-JAG provider joins only a workspace that trusts that provider", async () => {
    const issuer = "http://127.0.0.1:9/idp";
    const registration = await db().agentRegistration.create({
      data: {
        id: newId("agentRegistration"),
        type: "identity_assertion",
        status: "pending",
        providerIssuer: issuer,
        providerSubject: "user-1",
        scopes: [],
        postClaimScopes: ["leads.read"],
      },
    });
    const started = await startClaimAttempt(db(), {
      registrationId: registration.id,
      loginHint: null,
      hostUrl: server().url,
    });
    const refused = await decideClaim(db(), {
      attemptId: started.attemptId,
      userId: ownerId,
      approve: true,
      code: started.claim.user_code,
      workspaceId,
    });
    expect(refused).toMatchObject({ outcome: "refused", reason: "issuer_not_trusted" });
    await db().trustedProvider.create({
      data: { id: newId("trustedProvider"), workspaceId, issuer, jwksUrl: `${issuer}/jwks.json` },
    });
    expect(
      await decideClaim(db(), {
        attemptId: started.attemptId,
        userId: ownerId,
        approve: true,
        code: started.claim.user_code,
        workspaceId,
      }),
    ).toEqual({
      outcome: "approved",
      workspaceId,
    });
  });

  describe("anonymous agents", () => {
    it("the claim makes the sandbox the user's, and the pre-claim tokens stop", async () => {
      const sandbox = await db().workspace.create({
        data: {
          id: newId("workspace"),
          name: "Sandbox",
          plan: "free",
          agentAuthEnabled: true,
          sandboxExpiresAt: new Date(Date.now() + 7 * 86_400_000),
        },
      });
      const { registration, attemptId, code } = await pending("anonymous", sandbox.id);
      const preClaim = await issueAgentToken(db(), {
        registrationId: registration.id,
        workspaceId: sandbox.id,
        scopes: ["leads.read"],
        lifetimeSeconds: 3600,
      });
      const before = await fetch(`${server().api}/leads`, {
        headers: { authorization: `Bearer ${preClaim.token}` },
      });
      expect(before.status).toBe(200);

      // Whatever workspace is asked for, an anonymous agent is claimed into its sandbox.
      expect(
        await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code, workspaceId }),
      ).toEqual({ outcome: "approved", workspaceId: sandbox.id });
      const claimed = await db().workspace.findUniqueOrThrow({
        where: { id: sandbox.id },
        include: { memberships: true },
      });
      expect(claimed.sandboxExpiresAt).toBeNull();
      expect(claimed.memberships).toEqual([expect.objectContaining({ userId: ownerId, role: "owner" })]);
      expect(
        (await db().agentToken.findUniqueOrThrow({ where: { id: preClaim.id } })).revokedAt,
      ).not.toBeNull();
      // Revocation reaches every process within the 4 s credential cache; this one sees it at once once the cache lapses.
      const deadline = Date.now() + 6_000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (
          await fetch(`${server().api}/leads`, { headers: { authorization: `Bearer ${preClaim.token}` } })
        ).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 250));
      }
      expect(status).toBe(401);
    });

    it("a denial leaves the anonymous agent its sandbox", async () => {
      const sandbox = await db().workspace.create({
        data: { id: newId("workspace"), name: "Sandbox", plan: "free", agentAuthEnabled: true },
      });
      const { registration, attemptId } = await pending("anonymous", sandbox.id);
      expect(await decideClaim(db(), { attemptId, userId: ownerId, approve: false })).toEqual({
        outcome: "denied",
      });
      expect(
        (await db().agentRegistration.findUniqueOrThrow({ where: { id: registration.id } })).status,
      ).toBe("pending");
    });
  });

  it("an agent token works on /v1 and /graphql like an API key, and never carries agents.* or audit.read whatever its row says", async () => {
    const { registration, attemptId, code } = await pending();
    await decideClaim(db(), { attemptId, userId: ownerId, approve: true, code, workspaceId });
    const token = await issueAgentToken(db(), {
      registrationId: registration.id,
      workspaceId,
      scopes: [...SCOPES],
      lifetimeSeconds: 3600,
    });
    const credential = await new AgentTokenResolver(db(), server().running.revocations).resolve(token.token);
    expect(credential).toMatchObject({ kind: "agent", id: registration.id, workspaceId, plan: "pro" });
    expect([...credential!.scopes].sort()).toEqual(
      SCOPES.filter((scope) => !scope.startsWith("agents.") && scope !== "audit.read").sort(),
    );
    const res = await fetch(`${server().api}/workspace`, {
      headers: { authorization: `Bearer ${token.token}` },
    });
    expect(res.status).toBe(200);
    const gql = await fetch(`${server().url}/graphql`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: "{ leads { data { id } } }" }),
    });
    expect((await gql.json()).errors).toBeUndefined();
  });
});
