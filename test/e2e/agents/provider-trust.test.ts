import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findClaimAttempt } from "../../../server/agents/claims.ts";
import {
  type ClaimBlock,
  decide,
  granted,
  identity,
  JWT_BEARER_GRANT_TYPE,
  ownerNamed,
  refused,
  tokenClient,
} from "../../support/agent-flow.ts";
import { rest } from "../../support/http.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { Tenant, TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Trust in an ID-JAG provider is per workspace (docs/security.md#trusted-identity-providers):
 * two workspaces trusting the same issuer string with different key sets (two local providers,
 * one issuer, separate JWKS servers on 127.0.0.1) cannot reach each other's registrations, by
 * ID-JAG or by security event; removing an entry revokes the agents linked through it at once;
 * and a key set that fails to load, or JWTs naming unknown kids, cannot make Kontor hammer a
 * provider (counted by the fake JWKS servers, within the minute only: the minute itself is
 * tested with a clock in test/unit/provider-keys.test.ts).
 */

const ASSERTION_TYPE = "urn:ietf:params:oauth:token-type:id-jag";

const register = (server: TestServer, assertion: string, extra: Record<string, unknown> = {}) =>
  identity(server, { type: "identity_assertion", assertion_type: ASSERTION_TYPE, assertion, ...extra });

const notify = (server: TestServer, set: string) =>
  fetch(`${server.url}/agent/event/notify`, {
    method: "POST",
    headers: { "content-type": "application/secevent+jwt" },
    body: set,
  });

/** The workspace trusts `provider`'s issuer with `provider`'s JWKS URL; returns the entry's id. */
async function trust(server: TestServer, tenant: Tenant, provider: IdJagProvider): Promise<string> {
  const res = await rest(server.api, tenant.key).post("/trusted-providers", {
    issuer: provider.issuer,
    jwks_url: provider.jwksUrl,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** The status and error code of an answer of /agent/identity. */
const outcome = (res: { status: number; json: any }) => ({
  status: res.status,
  error: res.json?.error as string | undefined,
});

/** The person an ID-JAG for `sub` names (`${sub}@example.com`), as an owner of the tenant. */
const personOf = (server: TestServer, tenant: Tenant, sub: string) =>
  ownerNamed(server, tenant.workspaceId, `${sub}@example.com`);

/** Links `sub` in `tenant` through `provider` (the person approves), and gets an access token for it. */
async function linkedAgent(server: TestServer, tenant: Tenant, provider: IdJagProvider, sub: string) {
  const first = await register(server, await provider.idJag(server.url, sub));
  expect(outcome(first)).toEqual({ status: 401, error: "interaction_required" });
  const { userId } = await personOf(server, tenant, sub);
  expect(
    await decide(server, first.json.claim as ClaimBlock, userId, { workspaceId: tenant.workspaceId }),
  ).toEqual({ outcome: "approved", workspaceId: tenant.workspaceId });
  const linked = await register(server, await provider.idJag(server.url, sub));
  expect(linked.status, linked.text).toBe(200);
  const token = granted(
    await tokenClient(server.url)(JWT_BEARER_GRANT_TYPE, { assertion: linked.json.identity_assertion }),
  ).access_token;
  return {
    registrationId: linked.json.registration_id as string,
    assertion: linked.json.identity_assertion as string,
    v1: rest(server.api, token),
  };
}

e2e("trust in ID-JAG providers is per workspace", (server) => {
  const registration = (id: string) =>
    server().running.db.prisma.agentRegistration.findUniqueOrThrow({ where: { id } });

  describe("two workspaces trusting one issuer with different key sets", () => {
    /** A's provider, and a second key set published under the same issuer string, trusted by B. */
    let idp: IdJagProvider;
    let impostor: IdJagProvider;
    let a: Tenant;
    let b: Tenant;
    beforeAll(async () => {
      idp = await IdJagProvider.start();
      impostor = await IdJagProvider.start({ issuer: idp.issuer });
      [a, b] = await Promise.all([server().tenant({ plan: "pro" }), server().tenant({ plan: "pro" })]);
      await trust(server(), a, idp);
      await trust(server(), b, impostor);
    });
    afterAll(() => Promise.all([idp?.close(), impostor?.close()]));

    it("an ID-JAG links only in the workspace whose keys verified it; B's ID-JAG for the same sub cannot re-scope, rename or restart A's pending link", async () => {
      const sub = `user-${randomUUID()}`;
      const first = await register(server(), await idp.idJag(server().url, sub), {
        agent_name: "Calendar",
        scope: "leads.read",
      });
      expect(outcome(first)).toEqual({ status: 401, error: "interaction_required" });
      const pendingId = first.json.registration_id as string;
      expect(await registration(pendingId)).toMatchObject({
        workspaceId: a.workspaceId,
        status: "pending",
        agentName: "Calendar",
        postClaimScopes: ["leads.read"],
      });

      const forged = await register(server(), await impostor.idJag(server().url, sub), {
        agent_name: "Rogue",
        scope: "leads.read leads.write invoices.write",
      });
      expect(outcome(forged)).toEqual({ status: 401, error: "interaction_required" });
      expect(forged.json.registration_id).not.toBe(pendingId);
      expect(await registration(forged.json.registration_id)).toMatchObject({
        workspaceId: b.workspaceId,
        status: "pending",
        agentName: "Rogue",
      });

      // A's pending link is as A's provider left it, and its claim attempt is still open.
      expect(await registration(pendingId)).toMatchObject({
        workspaceId: a.workspaceId,
        status: "pending",
        agentName: "Calendar",
        postClaimScopes: ["leads.read"],
      });
      const attemptToken = new URL((first.json.claim as ClaimBlock).verification_uri).searchParams.get(
        "claim_attempt_token",
      )!;
      expect((await findClaimAttempt(server().running.db.prisma, attemptToken))?.status).toBe("pending");

      // B's request cannot be approved into A; A's can.
      const { userId } = await personOf(server(), a, sub);
      expect(await decide(server(), forged.json.claim, userId, { workspaceId: a.workspaceId })).toMatchObject(
        { outcome: "refused", reason: "issuer_not_trusted" },
      );
      expect(await decide(server(), first.json.claim, userId, { workspaceId: a.workspaceId })).toEqual({
        outcome: "approved",
        workspaceId: a.workspaceId,
      });
      const linked = await register(server(), await idp.idJag(server().url, sub));
      expect(linked.status, linked.text).toBe(200);
      expect(linked.json).toMatchObject({ registration_id: pendingId, scopes: ["leads.read"] });
    });

    it("B's ID-JAG for a sub linked in A does not reach A's active registration; a security event signed with B's keys does not revoke it, one signed with A's does", async () => {
      const sub = `user-${randomUUID()}`;
      const agent = await linkedAgent(server(), a, idp, sub);
      expect((await agent.v1.get("/workspace")).body.id).toBe(a.workspaceId);

      const forged = await register(server(), await impostor.idJag(server().url, sub), {
        agent_name: "Rogue",
        scope: "invoices.write",
      });
      expect(outcome(forged)).toEqual({ status: 401, error: "interaction_required" });
      expect(forged.json.registration_id).not.toBe(agent.registrationId);
      const forgedRow = await registration(forged.json.registration_id);
      expect(forgedRow.workspaceId).toBe(b.workspaceId);
      expect(await registration(agent.registrationId)).toMatchObject({
        workspaceId: a.workspaceId,
        status: "active",
        agentName: null,
        revokedAt: null,
      });

      // Signed with B's keys: only B's registration of that sub is revoked.
      expect((await notify(server(), await impostor.revokedSet(server().url, sub))).status).toBe(202);
      expect((await registration(forgedRow.id)).status).toBe("revoked");
      expect(await registration(agent.registrationId)).toMatchObject({ status: "active", revokedAt: null });
      expect((await agent.v1.get("/workspace")).status).toBe(200);

      // Signed with A's keys: A's registration is revoked, and its token is refused on its next request.
      expect((await notify(server(), await idp.revokedSet(server().url, sub))).status).toBe(202);
      expect((await registration(agent.registrationId)).status).toBe("revoked");
      expect((await agent.v1.get("/workspace")).status).toBe(401);
    });
  });

  it("removing an entry revokes the agents linked through it at once (active and pending); another workspace's agents of that issuer keep working", async () => {
    const leaving = await IdJagProvider.start();
    const twin = await IdJagProvider.start({ issuer: leaving.issuer });
    try {
      const [c, d] = await Promise.all([server().tenant({ plan: "pro" }), server().tenant({ plan: "pro" })]);
      const entry = await trust(server(), c, leaving);
      await trust(server(), d, twin);
      const sub = `user-${randomUUID()}`;
      const active = await linkedAgent(server(), c, leaving, sub);
      const elsewhere = await linkedAgent(server(), d, twin, sub);
      const pending = await register(server(), await leaving.idJag(server().url, `user-${randomUUID()}`));
      expect(outcome(pending)).toEqual({ status: 401, error: "interaction_required" });
      expect((await active.v1.get("/workspace")).status).toBe(200);
      const fetchesBefore = leaving.jwksFetches;

      expect((await rest(server().api, c.key).delete(`/trusted-providers/${entry}`)).status).toBe(200);
      // No waiting: the very next request is refused.
      const next = await active.v1.get("/workspace");
      expect(next.status).toBe(401);
      expect(next.body.error.code).toBe("invalid_token");
      expect((await elsewhere.v1.get("/workspace")).body.id).toBe(d.workspaceId);

      const revoked = await rest(server().api, c.key).get("/agent-registrations?status=revoked");
      expect(revoked.body.data.map((r: { id: string }) => r.id).sort()).toEqual(
        [active.registrationId, pending.json.registration_id].sort(),
      );
      for (const id of [active.registrationId, pending.json.registration_id])
        expect(await registration(id)).toMatchObject({ status: "revoked", revokedAt: expect.any(Date) });
      expect((await registration(elsewhere.registrationId)).status).toBe("active");
      // The pending link's claim is closed, and the revoked agent's assertion no longer exchanges.
      const { userId } = await ownerNamed(server(), c.workspaceId, `owner-${randomUUID()}@example.com`);
      expect(
        await decide(server(), pending.json.claim, userId, { workspaceId: c.workspaceId, approve: false }),
      ).toMatchObject({ outcome: "closed" });
      refused(
        await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: active.assertion }),
        400,
        "invalid_grant",
      );
      // Its ID-JAGs now act nowhere: the remaining entry for the issuer has other keys.
      expect(outcome(await register(server(), await leaving.idJag(server().url, sub)))).toEqual({
        status: 400,
        error: "invalid_signature",
      });

      // The removed entry's key set was dropped: trusting it again fetches the keys afresh.
      await trust(server(), c, leaving);
      expect(outcome(await register(server(), await leaving.idJag(server().url, sub)))).toEqual({
        status: 401,
        error: "interaction_required",
      });
      expect(leaving.jwksFetches).toBe(fetchesBefore + 1);
    } finally {
      await Promise.all([leaving.close(), twin.close()]);
    }
  });

  describe("key sets are not hammered", () => {
    it("a JWKS URL that answers 500 is fetched once for several ID-JAGs and security events within a minute, even when another entry of the issuer works", async () => {
      const healthy = await IdJagProvider.start();
      const broken = await IdJagProvider.start({ issuer: healthy.issuer });
      const alone = await IdJagProvider.start();
      try {
        broken.jwksStatus = 500;
        alone.jwksStatus = 500;
        const pro = () => server().tenant({ plan: "pro" });
        const [e, f, g] = await Promise.all([pro(), pro(), pro()]);
        await trust(server(), e, healthy);
        await trust(server(), f, broken);
        await trust(server(), g, alone);

        for (let i = 0; i < 4; i++) {
          expect(
            outcome(await register(server(), await alone.idJag(server().url, `user-${randomUUID()}`))),
          ).toEqual({ status: 400, error: "invalid_signature" });
          expect(
            outcome(await register(server(), await healthy.idJag(server().url, `user-${randomUUID()}`))),
          ).toEqual({ status: 401, error: "interaction_required" });
        }
        const set = await notify(server(), await alone.revokedSet(server().url, "someone"));
        expect({ status: set.status, err: ((await set.json()) as { err: string }).err }).toEqual({
          status: 400,
          err: "invalid_key",
        });
        expect(alone.jwksFetches).toBe(1);
        expect(broken.jwksFetches).toBe(1);
        expect(healthy.jwksFetches).toBe(1);

        // Answering again within the minute changes nothing yet: the failure is remembered.
        alone.jwksStatus = 200;
        expect(
          outcome(await register(server(), await alone.idJag(server().url, `user-${randomUUID()}`))),
        ).toEqual({ status: 400, error: "invalid_signature" });
        expect(alone.jwksFetches).toBe(1);
      } finally {
        await Promise.all([healthy.close(), broken.close(), alone.close()]);
      }
    });

    it("ID-JAGs naming unknown kids make at most one refetch of the key set", async () => {
      const provider = await IdJagProvider.start();
      try {
        await trust(server(), await server().tenant({ plan: "pro" }), provider);
        expect(
          outcome(await register(server(), await provider.idJag(server().url, `user-${randomUUID()}`))),
        ).toEqual({ status: 401, error: "interaction_required" });
        expect(provider.jwksFetches).toBe(1);
        for (let i = 0; i < 5; i++) {
          const ghost = await provider.addKey(false);
          expect(
            outcome(
              await register(
                server(),
                await provider.idJag(server().url, `user-${randomUUID()}`, {}, { kid: ghost }),
              ),
            ),
          ).toEqual({
            status: 400,
            error: "invalid_signature",
          });
        }
        expect(provider.jwksFetches).toBe(2);
      } finally {
        await provider.close();
      }
    });
  });
});
