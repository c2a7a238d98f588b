import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { AGENT_SCOPES } from "../../../schema/lib/scopes.ts";
import { sweepAgentLeftovers, sweepExpiredSandboxes } from "../../../server/agents/sandbox.ts";
import {
  decide,
  granted,
  identity,
  JWT_BEARER_GRANT_TYPE,
  registerAnonymous,
  registerServiceAuth,
  tokenClient,
} from "../../support/agent-flow.ts";
import { raw, rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { expectOAuthError, useAgentTenant } from "./support.ts";

const PRE_CLAIM = [
  "clients.read",
  "clients.write",
  "leads.read",
  "leads.write",
  "inventory.read",
  "inventory.write",
  "invoices.read",
  "invoices.write",
  "projects.read",
  "projects.write",
  "payments.write",
];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const DAY = 24 * 3600 * 1000;

e2e(
  "agent registration",
  (server) => {
    const { owner } = useAgentTenant(server);

    describe("service_auth", () => {
      it("answers a pending registration with a claim token and a claim ceremony", async () => {
        const res = await identity(server(), {
          type: "service_auth",
          login_hint: owner().email,
          agent_name: "Billing bot",
        });
        expect(res.status).toBe(200);
        expect(res.headers.get("cache-control")).toBe("no-store");
        const body = res.json;
        expect(body).toMatchObject({
          registration_id: expect.stringMatching(/^areg_/),
          registration_type: "service_auth",
          claim_url: `${server().url}/agent/identity/claim`,
          claim_token: expect.stringMatching(/^clm_[0-9A-Za-z]{43}$/),
          claim_token_expires: expect.stringMatching(ISO),
          post_claim_scopes: [...AGENT_SCOPES],
          claim: { user_code: expect.stringMatching(/^\d{6}$/), expires_in: 600, interval: 5 },
        });
        expect(Date.parse(body.claim_token_expires)).toBeGreaterThan(Date.now());
        const link = new URL(body.claim.verification_uri);
        expect(link.origin + link.pathname).toBe(`${server().url}/agent/claim`);
        expect(link.searchParams.get("claim_attempt_token")).toMatch(/^cat_/);
        expect(body.claim.verification_uri).not.toContain(body.claim.user_code);
        expect(body.post_claim_scopes.some((s: string) => s.startsWith("agents."))).toBe(false);

        const row = await server().running.db.prisma.agentRegistration.findUniqueOrThrow({
          where: { id: body.registration_id },
        });
        expect(row).toMatchObject({
          type: "service_auth",
          status: "pending",
          workspaceId: null,
          agentName: "Billing bot",
          loginHint: owner().email,
          scopes: [],
        });
        expect(row.claimTokenHash).not.toContain(body.claim_token);
      });

      it("answers an e-mail without an account exactly as one with an account", async () => {
        const known = await identity(server(), { type: "service_auth", login_hint: owner().email });
        const unknown = await identity(server(), {
          type: "service_auth",
          login_hint: "nobody-here@example.com",
        });
        expect(unknown.status).toBe(known.status);
        expect(Object.keys(unknown.json).sort()).toEqual(Object.keys(known.json).sort());
        expect(Object.keys(unknown.json.claim).sort()).toEqual(Object.keys(known.json.claim).sort());
      });

      it("narrows post_claim_scopes to scope", async () => {
        const body = await registerServiceAuth(server(), owner().email, {
          scope: "leads.write clients.read leads.write",
        });
        expect(body.post_claim_scopes).toEqual(["clients.read", "leads.write"]);
      });

      it.each([
        ["agents.read", "an agents.* scope"],
        ["leads.read agents.write", "agents.* among others"],
        ["leads.delete", "an unknown scope"],
        ["   ", "no scope at all"],
        [["leads.read"], "a list instead of a string"],
      ] as [unknown, string][])("refuses scope %j (%s) with invalid_request", async (scope) => {
        const res = await identity(server(), { type: "service_auth", login_hint: owner().email, scope });
        expectOAuthError(res, 400, "invalid_request");
      });

      it.each([
        [undefined],
        [""],
        ["not-an-email"],
        ["two@at@example"],
        [42],
        ["a@b"],
        [`${"x".repeat(250)}@example.com`],
      ])("refuses login_hint %j with invalid_login_hint", async (loginHint) => {
        const res = await identity(server(), { type: "service_auth", login_hint: loginHint });
        expectOAuthError(res, 400, "invalid_login_hint");
      });

      it("refuses an agent_name that is not a short string", async () => {
        for (const agentName of [7, "", "x".repeat(101), "line\nbreak"]) {
          const res = await identity(server(), {
            type: "service_auth",
            login_hint: owner().email,
            agent_name: agentName,
          });
          expectOAuthError(res, 400, "invalid_request");
        }
      });
    });

    describe("anonymous", () => {
      it("makes a free sandbox with agent auth on, and answers an identity assertion Kontor signed", async () => {
        const body = await registerAnonymous(server(), "Sandbox bot");
        expect(body).toMatchObject({
          registration_type: "anonymous",
          assertion_expires: expect.stringMatching(ISO),
          pre_claim_scopes: PRE_CLAIM,
          claim_url: `${server().url}/agent/identity/claim`,
          claim_token: expect.stringMatching(/^clm_/),
          claim_token_expires: expect.stringMatching(ISO),
          post_claim_scopes: [...AGENT_SCOPES],
        });
        const prisma = server().running.db.prisma;
        const row = await prisma.agentRegistration.findUniqueOrThrow({
          where: { id: body.registration_id },
          include: { workspace: true },
        });
        expect(row).toMatchObject({ type: "anonymous", status: "pending", scopes: PRE_CLAIM });
        expect(row.workspace).toMatchObject({ plan: "free", agentAuthEnabled: true });
        const lifetime = row.workspace!.sandboxExpiresAt!.getTime() - Date.now();
        expect(lifetime).toBeGreaterThan(7 * DAY - 60_000);
        expect(lifetime).toBeLessThanOrEqual(7 * DAY);
        expect(Date.parse(body.claim_token_expires)).toBe(row.workspace!.sandboxExpiresAt!.getTime());
        expect(await prisma.membership.count({ where: { workspaceId: row.workspaceId! } })).toBe(0);

        const jwks = createRemoteJWKSet(new URL(`${server().url}/.well-known/jwks.json`));
        const { payload, protectedHeader } = await jwtVerify(body.identity_assertion, jwks, {
          issuer: server().url,
          audience: server().url,
        });
        expect(protectedHeader.alg).toBe("ES256");
        expect(payload.sub).toBe(body.registration_id);
        const lifetimeDays = (payload.exp! - payload.iat!) / 86_400;
        expect(lifetimeDays).toBe(30);
        expect(Math.abs(payload.exp! * 1000 - Date.parse(body.assertion_expires))).toBeLessThan(2_000);
        expect(decodeProtectedHeader(body.identity_assertion).kid).toBeTruthy();
      });

      it("refuses an agent_name that is not a string", async () => {
        expectOAuthError(
          await identity(server(), { type: "anonymous", agent_name: { x: 1 } }),
          400,
          "invalid_request",
        );
      });
    });

    describe("POST /agent/identity/claim", () => {
      it("starts a ceremony for an anonymous agent, and a new one ends the old", async () => {
        const agent = await registerAnonymous(server());
        const first = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email },
          "/agent/identity/claim",
        );
        expect(first.status).toBe(200);
        expect(first.json).toMatchObject({
          registration_id: agent.registration_id,
          registration_type: "anonymous",
          status: "initiated",
          expires_at: expect.stringMatching(ISO),
          claim_attempt: { user_code: expect.stringMatching(/^\d{6}$/), expires_in: 600, interval: 5 },
        });
        expect(first.json.claim).toEqual(first.json.claim_attempt);
        const second = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email },
          "/agent/identity/claim",
        );
        expect(second.status).toBe(200);
        expect(await decide(server(), first.json.claim_attempt, owner().userId)).toMatchObject({
          outcome: "closed",
          reason: "decided",
        });
        expect(await decide(server(), second.json.claim_attempt, owner().userId)).toMatchObject({
          outcome: "approved",
        });

        const again = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email },
          "/agent/identity/claim",
        );
        expectOAuthError(again, 400, "invalid_request");
      });

      it("restarts a service_auth ceremony only for the e-mail it registered with", async () => {
        const agent = await registerServiceAuth(server(), owner().email);
        const other = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: "else@example.com" },
          "/agent/identity/claim",
        );
        expectOAuthError(other, 400, "invalid_login_hint");
        const same = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email.toUpperCase() },
          "/agent/identity/claim",
        );
        expect(same.status).toBe(200);
        expect(same.json.registration_type).toBe("service_auth");
      });

      it("refuses a wrong type, an unknown or expired claim token, and a bad login_hint", async () => {
        const agent = await registerAnonymous(server());
        const claim = (body: unknown) => identity(server(), body, "/agent/identity/claim");
        expectOAuthError(
          await claim({ type: "email", claim_token: agent.claim_token, login_hint: owner().email }),
          400,
          "invalid_request",
        );
        expectOAuthError(
          await claim({ type: "login_hint", login_hint: owner().email }),
          400,
          "invalid_request",
        );
        expectOAuthError(
          await claim({
            type: "login_hint",
            claim_token: `clm_${"A".repeat(43)}`,
            login_hint: owner().email,
          }),
          400,
          "invalid_request",
        );
        expectOAuthError(
          await claim({ type: "login_hint", claim_token: agent.claim_token, login_hint: "nope" }),
          400,
          "invalid_login_hint",
        );
        await server().running.db.prisma.agentRegistration.update({
          where: { id: agent.registration_id },
          data: { claimExpiresAt: new Date(Date.now() - 1000) },
        });
        expectOAuthError(
          await claim({ type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email }),
          400,
          "credential_expired",
        );
      });
    });

    describe("bad input", () => {
      const post = (init: RequestInit, path = "/agent/identity") =>
        raw(`${server().url}${path}`, { method: "POST", ...init });

      it.each(["/agent/identity", "/agent/identity/claim"])(
        "%s refuses bodies that are not a JSON object",
        async (path) => {
          const cases: RequestInit[] = [
            { headers: { "content-type": "application/x-www-form-urlencoded" }, body: "type=anonymous" },
            { body: JSON.stringify({ type: "anonymous" }) },
            { headers: { "content-type": "application/json" }, body: "{not json" },
            { headers: { "content-type": "application/json" }, body: "[]" },
            { headers: { "content-type": "application/json" }, body: "null" },
          ];
          for (const init of cases) expectOAuthError(await post(init, path), 400, "invalid_request");
          // Over the agent protocol's 64 KiB body limit (docs/api/limits.md): 413 before it is read, in the same shape.
          const huge = {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ type: "anonymous", agent_name: "x".repeat(70_000) }),
          };
          expectOAuthError(await post(huge, path), 413, "payload_too_large");
        },
      );

      it("refuses a missing or unknown type", async () => {
        for (const body of [{}, { type: "password" }, { type: 3 }])
          expectOAuthError(await identity(server(), body), 400, "invalid_request");
      });

      it("answers GET with 405 and Allow", async () => {
        const res = await raw(`${server().url}/agent/identity`);
        expectOAuthError(res, 405, "method_not_allowed");
        expect(res.headers.get("allow")).toBe("POST");
      });
    });

    describe("sandbox sweep", () => {
      it("deletes an unclaimed sandbox past its time with everything in it, and keeps the others", async () => {
        const prisma = server().running.db.prisma;
        const doomed = await registerAnonymous(server(), "Doomed");
        const young = await registerAnonymous(server(), "Young");
        const claimed = await registerAnonymous(server(), "Claimed");
        const token = granted(
          await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: doomed.identity_assertion }),
        ).access_token;
        const api = rest(server().api, token);
        const client = await api.post("/clients", { name: "Sandbox client" });
        expect(client.status).toBe(201);
        const invoice = await api.post("/invoices", {
          client_id: client.body.id,
          items: [{ description: "Work", quantity: 1, unit_price: 100 }],
        });
        expect(invoice.status).toBe(201);

        const startClaim = await identity(
          server(),
          { type: "login_hint", claim_token: claimed.claim_token, login_hint: owner().email },
          "/agent/identity/claim",
        );
        expect(await decide(server(), startClaim.json.claim_attempt, owner().userId)).toMatchObject({
          outcome: "approved",
        });

        const workspaceOf = async (id: string) =>
          (await prisma.agentRegistration.findUniqueOrThrow({ where: { id } })).workspaceId!;
        const [doomedWs, youngWs, claimedWs] = [
          await workspaceOf(doomed.registration_id),
          await workspaceOf(young.registration_id),
          await workspaceOf(claimed.registration_id),
        ];
        const past = new Date(Date.now() - 1000);
        await prisma.workspace.update({ where: { id: doomedWs }, data: { sandboxExpiresAt: past } });

        expect(await sweepExpiredSandboxes(prisma, server().running.revocations)).toBe(1);
        expect(await prisma.workspace.findUnique({ where: { id: doomedWs } })).toBeNull();
        expect(
          await prisma.agentRegistration.findUnique({ where: { id: doomed.registration_id } }),
        ).toBeNull();
        expect(await prisma.client.count({ where: { workspaceId: doomedWs } })).toBe(0);
        expect(await prisma.invoice.count({ where: { workspaceId: doomedWs } })).toBe(0);
        expect(await prisma.workspace.findUnique({ where: { id: youngWs } })).not.toBeNull();
        const kept = await prisma.workspace.findUniqueOrThrow({ where: { id: claimedWs } });
        expect(kept.sandboxExpiresAt).toBeNull();

        // The sweep's answer is in: the sandbox's tokens fail on the very next request.
        expect((await api.get("/clients")).status).toBe(401);
        expect(await sweepExpiredSandboxes(prisma, server().running.revocations)).toBe(0);
      });

      it("removes what can no longer matter: unclaimed service_auth registrations a day past their claim token, old tokens, used jtis", async () => {
        const prisma = server().running.db.prisma;
        const stale = await registerServiceAuth(server(), "stale@example.com");
        const fresh = await registerServiceAuth(server(), "fresh@example.com");
        const longAgo = new Date(Date.now() - 2 * 86_400_000);
        await prisma.agentRegistration.update({
          where: { id: stale.registration_id },
          data: { claimExpiresAt: longAgo },
        });
        await prisma.usedJti.create({
          data: { issuer: "https://old.example", jti: "gone", expiresAt: longAgo },
        });
        await prisma.usedJti.create({
          data: { issuer: "https://old.example", jti: "kept", expiresAt: new Date(Date.now() + 86_400_000) },
        });

        expect(await sweepAgentLeftovers(prisma)).toBeGreaterThanOrEqual(2);
        expect(
          await prisma.agentRegistration.findUnique({ where: { id: stale.registration_id } }),
        ).toBeNull();
        expect(
          await prisma.agentRegistration.findUnique({ where: { id: fresh.registration_id } }),
        ).not.toBeNull();
        expect(
          (await prisma.usedJti.findMany({ where: { issuer: "https://old.example" } })).map((row) => row.jti),
        ).toEqual(["kept"]);
      });
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "1000" },
);
