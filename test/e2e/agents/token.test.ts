import { createRemoteJWKSet, generateKeyPair, jwtVerify, SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import {
  CLAIM_GRANT_TYPE,
  decide,
  forgetLastPoll,
  granted,
  JWT_BEARER_GRANT_TYPE,
  ownerOf,
  refused,
  registerAnonymous,
  registerServiceAuth,
} from "../../support/agent-flow.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { expectOAuthError, signingKeys, useAgentTenant } from "./support.ts";

e2e(
  "agent token endpoint",
  (server) => {
    const { tenant, owner, grant } = useAgentTenant(server);
    const prisma = () => server().running.db.prisma;

    const poll = (claimToken: string) => grant(CLAIM_GRANT_TYPE, { claim_token: claimToken });

    describe("claim grant", () => {
      it("is pending, slows a fast poller down, and once approved answers a token and an identity assertion, once", async () => {
        const agent = await registerServiceAuth(server(), owner().email, {
          scope: "leads.read leads.write clients.read",
        });
        const pending = refused(await poll(agent.claim_token), 400, "authorization_pending");
        expect(pending.interval).toBe(5);
        refused(await poll(agent.claim_token), 400, "slow_down");
        refused(await poll(agent.claim_token), 400, "slow_down");
        await forgetLastPoll(server(), agent.registration_id);
        refused(await poll(agent.claim_token), 400, "authorization_pending");

        expect(
          await decide(server(), agent.claim, owner().userId, { workspaceId: tenant().workspaceId }),
        ).toMatchObject({ outcome: "approved" });
        const body = granted(await poll(agent.claim_token));
        expect(body).toMatchObject({
          token_type: "bearer",
          expires_in: 3600,
          scope: "clients.read leads.read leads.write",
        });
        expect(body.access_token).toMatch(/^ktr_agt_[0-9A-Za-z]{43}$/);
        expect(body.refresh_token).toBeUndefined();
        const jwks = createRemoteJWKSet(new URL(`${server().url}/.well-known/jwks.json`));
        const { payload } = await jwtVerify(body.identity_assertion as string, jwks, {
          issuer: server().url,
          audience: server().url,
        });
        expect(payload.sub).toBe(agent.registration_id);
        expect(Math.abs(payload.exp! * 1000 - Date.parse(body.assertion_expires as string))).toBeLessThan(
          2_000,
        );

        const token = await prisma().agentToken.findFirstOrThrow({
          where: { registrationId: agent.registration_id },
        });
        expect(token).toMatchObject({
          workspaceId: tenant().workspaceId,
          scopes: ["clients.read", "leads.read", "leads.write"],
        });
        expect(token.hash).not.toContain(body.access_token);

        refused(await poll(agent.claim_token), 400, "invalid_grant");
      });

      it("answers access_denied after the user denies", async () => {
        const agent = await registerServiceAuth(server(), owner().email);
        expect(await decide(server(), agent.claim, owner().userId, { approve: false })).toEqual({
          outcome: "denied",
        });
        refused(await poll(agent.claim_token), 400, "access_denied");
      });

      it("answers expired_token once the claim token, or the attempt without a new one, has expired", async () => {
        const late = await registerServiceAuth(server(), owner().email);
        await prisma().agentRegistration.update({
          where: { id: late.registration_id },
          data: { claimExpiresAt: new Date(Date.now() - 1) },
        });
        refused(await poll(late.claim_token), 400, "expired_token");

        const stale = await registerServiceAuth(server(), owner().email);
        await prisma().claimAttempt.updateMany({
          where: { registrationId: stale.registration_id },
          data: { expiresAt: new Date(Date.now() - 1) },
        });
        refused(await poll(stale.claim_token), 400, "expired_token");

        const guessed = await registerServiceAuth(server(), owner().email);
        const wrong = guessed.claim.user_code === "000000" ? "111111" : "000000";
        for (let i = 0; i < 5; i++) await decide(server(), guessed.claim, owner().userId, { code: wrong });
        expect(await decide(server(), guessed.claim, owner().userId)).toMatchObject({
          outcome: "closed",
          reason: "too_many_wrong_codes",
        });
        refused(await poll(guessed.claim_token), 400, "expired_token");
      });

      it("refuses an unknown claim token, and a workspace with agent auth off", async () => {
        refused(await poll(`clm_${"Z".repeat(43)}`), 400, "invalid_grant");
        const other = await server().tenant({ plan: "plus" });
        const otherOwner = await ownerOf(server(), other.workspaceId);
        const agent = await registerServiceAuth(server(), otherOwner.email);
        expect(
          await decide(server(), agent.claim, otherOwner.userId, { workspaceId: other.workspaceId }),
        ).toMatchObject({ outcome: "approved" });
        await prisma().workspace.update({
          where: { id: other.workspaceId },
          data: { agentAuthEnabled: false },
        });
        refused(await poll(agent.claim_token), 403, "agent_auth_disabled");
        await prisma().workspace.update({
          where: { id: other.workspaceId },
          data: { agentAuthEnabled: true },
        });
        // The refusal did not spend the claim token.
        granted(await poll(agent.claim_token));
      });
    });

    describe("jwt-bearer grant", () => {
      it("exchanges Kontor's identity assertion for an access token, without a refresh token", async () => {
        const agent = await registerAnonymous(server());
        const body = granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }));
        expect(body).toMatchObject({
          token_type: "bearer",
          expires_in: 3600,
          scope: agent.pre_claim_scopes.join(" "),
        });
        expect(body.refresh_token).toBeUndefined();
        expect(body.identity_assertion).toBeUndefined();
      });

      it("narrows to scope, and refuses scopes the registration lacks (agents.* among them)", async () => {
        const agent = await registerAnonymous(server());
        const narrow = granted(
          await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion, scope: "leads.read" }),
        );
        expect(narrow.scope).toBe("leads.read");
        for (const scope of ["agents.read", "webhooks.read", "leads.read agents.write", "bogus", " "]) {
          refused(
            await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion, scope }),
            400,
            "invalid_scope",
          );
        }
      });

      it("refuses garbage, unsigned, foreign, tampered, expired and misaddressed assertions with invalid_grant", async () => {
        const agent = await registerAnonymous(server());
        const url = server().url;
        const foreignKey = (await generateKeyPair("ES256")).privateKey;
        const foreign = await new SignJWT({})
          .setProtectedHeader({ alg: "ES256", kid: "sk_foreign" })
          .setIssuer(url)
          .setAudience(url)
          .setSubject(agent.registration_id)
          .setIssuedAt()
          .setExpirationTime("1h")
          .sign(foreignKey);
        const unsigned = new UnsecuredJWT({ sub: agent.registration_id })
          .setIssuer(url)
          .setAudience(url)
          .setExpirationTime("1h")
          .encode();
        const [header, , signature] = agent.identity_assertion.split(".");
        const tampered = `${header}.${Buffer.from(JSON.stringify({ iss: url, aud: url, sub: "areg_other", exp: 9e9 })).toString("base64url")}.${signature}`;
        const keys = signingKeys(server());
        const expired = await keys.sign(
          {},
          { issuer: url, audience: url, subject: agent.registration_id, expiresInSeconds: -60 },
        );
        const elsewhere = await keys.sign(
          {},
          {
            issuer: url,
            audience: "https://example.invalid",
            subject: agent.registration_id,
            expiresInSeconds: 60,
          },
        );
        const nobody = await keys.sign(
          {},
          { issuer: url, audience: url, subject: "areg_01NOSUCHREGISTRATION0000", expiresInSeconds: 60 },
        );
        for (const assertion of [
          "garbage",
          "a.b.c",
          unsigned,
          foreign,
          tampered,
          expired,
          elsewhere,
          nobody,
        ]) {
          refused(await grant(JWT_BEARER_GRANT_TYPE, { assertion }), 400, "invalid_grant");
        }
      });

      it("refuses the assertion of a revoked registration", async () => {
        const revoked = await registerAnonymous(server());
        await prisma().agentRegistration.update({
          where: { id: revoked.registration_id },
          data: { status: "revoked", revokedAt: new Date() },
        });
        refused(
          await grant(JWT_BEARER_GRANT_TYPE, { assertion: revoked.identity_assertion }),
          400,
          "invalid_grant",
        );
      });

      it("answers agent_auth_disabled (403) when the workspace turned agent auth off", async () => {
        const agent = await registerAnonymous(server());
        const { workspaceId } = await prisma().agentRegistration.findUniqueOrThrow({
          where: { id: agent.registration_id },
        });
        await prisma().workspace.update({ where: { id: workspaceId! }, data: { agentAuthEnabled: false } });
        refused(
          await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
          403,
          "agent_auth_disabled",
        );
      });
    });

    describe("plan caps", () => {
      it("keeps at most the free plan's live tokens per registration, revoking the oldest past the cap", async () => {
        const cap = PLAN_LIMITS.free.agent_tokens_per_registration;
        const agent = await registerAnonymous(server());
        const tokens: string[] = [];
        const live = () =>
          prisma().agentToken.count({ where: { registrationId: agent.registration_id, revokedAt: null } });
        for (let i = 0; i < cap; i++)
          tokens.push(
            granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion })).access_token,
          );
        expect(await live()).toBe(cap);
        tokens.push(
          granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion })).access_token,
        );
        expect(await live()).toBe(cap);
        const rows = await prisma().agentToken.findMany({
          where: { registrationId: agent.registration_id },
          orderBy: { createdAt: "asc" },
        });
        expect(rows.map((row) => row.revokedAt !== null)).toEqual([true, ...Array(cap).fill(false)]);
      });

      it("caps the token lifetime at the plan's (1 h on free) and keeps 3600 s below it", async () => {
        const free = await registerAnonymous(server());
        const freeBody = granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: free.identity_assertion }));
        expect(freeBody.expires_in).toBe(PLAN_LIMITS.free.agent_token_lifetime_seconds);
        const row = await prisma().agentToken.findFirstOrThrow({
          where: { registrationId: free.registration_id },
        });
        const lifetime = (row.expiresAt.getTime() - row.createdAt.getTime()) / 1000;
        expect(Math.abs(lifetime - PLAN_LIMITS.free.agent_token_lifetime_seconds)).toBeLessThan(2);

        const agent = await registerServiceAuth(server(), owner().email);
        await decide(server(), agent.claim, owner().userId, { workspaceId: tenant().workspaceId });
        expect(granted(await poll(agent.claim_token)).expires_in).toBe(3600);
        expect(PLAN_LIMITS.pro.agent_token_lifetime_seconds).toBeGreaterThan(3600);
      });
    });

    describe("bad input", () => {
      const post = (body: string, contentType = "application/x-www-form-urlencoded") =>
        raw(`${server().url}/oauth2/token`, {
          method: "POST",
          headers: { "content-type": contentType },
          body,
        });

      it.each([
        [
          "a JSON body",
          JSON.stringify({ grant_type: JWT_BEARER_GRANT_TYPE, assertion: "x" }),
          "application/json",
          "invalid_request",
        ],
        ["no grant_type", "assertion=x", undefined, "invalid_request"],
        [
          "grant_type twice",
          `grant_type=${encodeURIComponent(JWT_BEARER_GRANT_TYPE)}&grant_type=${encodeURIComponent(CLAIM_GRANT_TYPE)}`,
          undefined,
          "invalid_request",
        ],
        // Over the 64 KiB of the OAuth routes: refused from its Content-Length, before it is read.
        [
          "a huge body",
          `grant_type=${encodeURIComponent(JWT_BEARER_GRANT_TYPE)}&assertion=${"a".repeat(100_000)}`,
          undefined,
          "payload_too_large",
          413,
        ],
        [
          "an unknown grant",
          "grant_type=password&username=a&password=b",
          undefined,
          "unsupported_grant_type",
        ],
        [
          "no claim_token",
          `grant_type=${encodeURIComponent(CLAIM_GRANT_TYPE)}`,
          undefined,
          "invalid_request",
        ],
        [
          "no assertion",
          `grant_type=${encodeURIComponent(JWT_BEARER_GRANT_TYPE)}`,
          undefined,
          "invalid_request",
        ],
        [
          "an overlong assertion",
          `grant_type=${encodeURIComponent(JWT_BEARER_GRANT_TYPE)}&assertion=${"a".repeat(20_000)}`,
          undefined,
          "invalid_request",
        ],
      ])("answers %s with an RFC 6749 error", async (_name, body, contentType, error, status = 400) => {
        const res = await post(body, contentType);
        expectOAuthError(res, status, error);
        expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      });

      it("answers GET with 405", async () => {
        const res = await raw(`${server().url}/oauth2/token`);
        expect(res.status).toBe(405);
        expect(res.json.error).toBe("method_not_allowed");
      });
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "1000" },
);
