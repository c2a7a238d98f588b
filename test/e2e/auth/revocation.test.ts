/**
 * Revocation at once, on the process that answered the revocation: for each kind of credential the
 * cache is warmed first (a request that succeeds), then revoked, and the very next request fails.
 * The other processes of a deployment are test/e2e/auth/revocation-processes.test.ts.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { runCli } from "../../../server/control/run.ts";
import {
  CLAIM_GRANT_TYPE,
  decide,
  forgetLastPoll,
  granted,
  ownerOf,
  registerAnonymous,
  registerServiceAuth,
  tokenClient,
} from "../../support/agent-flow.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";

const unique = (label: string) => `${label}-${randomBytes(4).toString("hex")}@example.com`;

e2e("revocation at once", (server) => {
  const db = () => server().running.db.prisma;
  const workspace = (key: string) =>
    raw(`${server().api}/workspace`, { headers: { authorization: `Bearer ${key}` } });

  /** An owner signed in to the dashboard, in a workspace of their own. */
  async function owner() {
    const email = unique("owner");
    const created = await createWorkspace(db(), {
      name: "Revocations",
      plan: "pro",
      ownerEmail: email,
      ownerPassword: PASSWORD,
    });
    const dashboard = new DashboardClient(server().url);
    expect((await dashboard.signIn(email)).status).toBe(200);
    return { dashboard, email, workspaceId: created.workspace_id, userId: created.owner_id };
  }

  /** A key with a warm cache entry: it has just worked. */
  async function warmKey(workspaceId: string) {
    const key = await server().key(workspaceId, ["leads.read", "agents.write"]);
    expect((await workspace(key.key)).status).toBe(200);
    expect((await workspace(key.key)).status).toBe(200);
    return key;
  }

  describe("API keys", () => {
    it("revoked in the dashboard: the next request is 401", async () => {
      const { dashboard, workspaceId } = await owner();
      const key = await warmKey(workspaceId);
      const revoked = await dashboard.graphql(
        `mutation ($id: ID!) { revokeApiKey(id: $id) { id revoked_at } }`,
        { id: key.id },
      );
      expect(revoked.json.data.revokeApiKey.revoked_at).not.toBeNull();
      const next = await workspace(key.key);
      expect(next.status).toBe(401);
      expect(next.json.error.code).toBe("invalid_token");
    });

    it("rotated without grace: the old key's next request is 401, the new key works", async () => {
      const { dashboard, workspaceId } = await owner();
      const key = await warmKey(workspaceId);
      const rotated = await dashboard.graphql(
        `mutation ($id: ID!) { rotateApiKey(id: $id, grace_seconds: 0) { secret } }`,
        { id: key.id },
      );
      expect(rotated.json.errors).toBeUndefined();
      expect((await workspace(key.key)).status).toBe(401);
      expect((await workspace(rotated.json.data.rotateApiKey.secret)).status).toBe(200);
    });

    it("rotated with a grace period: the old key works until it ends, even from the cache", async () => {
      const { dashboard, workspaceId } = await owner();
      const key = await warmKey(workspaceId);
      await dashboard.graphql(
        `mutation ($id: ID!) { rotateApiKey(id: $id, grace_seconds: 3600) { secret } }`,
        { id: key.id },
      );
      expect((await workspace(key.key)).status).toBe(200);
      // The grace ends early (as a second rotation or a revoke would end it): the next request knows.
      await dashboard.graphql(`mutation ($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: key.id });
      expect((await workspace(key.key)).status).toBe(401);
    });

    it("revoked with the CLI: the next request is 401", async () => {
      const { workspaceId } = await owner();
      const key = await warmKey(workspaceId);
      const out: string[] = [];
      const env = {
        ...process.env,
        KONTOR_LOG: "silent",
        DATA_DIR: server().config.dataDir,
        DATABASE_URL: server().config.databaseUrl,
        REDIS_URL: server().config.redisUrl,
      };
      const code = await runCli(["keys", "revoke", key.id, "--json"], {
        env,
        out: (line) => out.push(line),
        err: (line) => out.push(line),
      });
      expect(code, out.join("\n")).toBe(0);
      expect((await workspace(key.key)).status).toBe(401);
    });
  });

  describe("agents", () => {
    /** An anonymous agent's pre-claim token, warm in the cache. */
    async function agentToken() {
      const agent = await registerAnonymous(server());
      const exchanged = await raw(`${server().url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
          assertion: agent.identity_assertion,
        }).toString(),
      });
      expect(exchanged.status, exchanged.text).toBe(200);
      const token = exchanged.json.access_token as string;
      expect((await workspace(token)).status).toBe(200);
      expect((await workspace(token)).status).toBe(200);
      return { agent, token };
    }
    const revokeAt = (token: string) =>
      raw(`${server().url}/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `token=${encodeURIComponent(token)}`,
      });

    it("an access token revoked at /oauth2/revoke: the next request is 401", async () => {
      const { token } = await agentToken();
      expect((await revokeAt(token)).status).toBe(200);
      expect((await workspace(token)).status).toBe(401);
    });

    it("a registration revoked with its identity assertion: its tokens' next request is 401", async () => {
      const { agent, token } = await agentToken();
      expect((await revokeAt(agent.identity_assertion)).status).toBe(200);
      expect((await workspace(token)).status).toBe(401);
    });

    it("a registration revoked by the owner, and agent access turned off: the next request is 401", async () => {
      const { workspaceId } = await owner();
      const key = await warmKey(workspaceId);
      const admin = await server().key(workspaceId, ["agents.write"]);
      const { email, userId } = await ownerOf(server(), workspaceId);
      const agent = await registerServiceAuth(server(), email);
      expect(await decide(server(), agent.claim, userId, { workspaceId })).toMatchObject({
        outcome: "approved",
      });
      await forgetLastPoll(server(), agent.registration_id);
      const token = granted(
        await tokenClient(server().url)(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }),
      ).access_token;
      expect((await workspace(token)).status).toBe(200);

      const off = await raw(`${server().api}/agent-settings`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${admin.key}`, "content-type": "application/json" },
        body: '{"agent_auth_enabled":false}',
      });
      expect(off.status, off.text).toBe(200);
      expect((await workspace(token)).status).toBe(401);
      await raw(`${server().api}/agent-settings`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${admin.key}`, "content-type": "application/json" },
        body: '{"agent_auth_enabled":true}',
      });
      expect((await workspace(token)).status).toBe(200);

      const revoked = await raw(`${server().api}/agent-registrations/${agent.registration_id}/revoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${admin.key}` },
      });
      expect(revoked.status, revoked.text).toBe(200);
      expect((await workspace(token)).status).toBe(401);
      expect((await workspace(key.key)).status).toBe(200);
    });

    it("a claim revokes the pre-claim tokens: their next request is 401", async () => {
      const { token, agent } = await agentToken();
      const { email, userId } = await owner();
      const started = await raw(`${server().url}/agent/identity/claim`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "login_hint", claim_token: agent.claim_token, login_hint: email }),
      });
      expect(started.status, started.text).toBe(200);
      expect(await decide(server(), started.json.claim_attempt, userId)).toMatchObject({
        outcome: "approved",
      });
      expect((await workspace(token)).status).toBe(401);
    });
  });

  describe("sessions and members", () => {
    const viewer = (dashboard: DashboardClient) => dashboard.graphql(`{ viewer { email } }`);

    it("signed out: the cookie's next request is 401", async () => {
      const { dashboard } = await owner();
      expect((await viewer(dashboard)).status).toBe(200);
      const cookie = dashboard.cookieHeader();
      const csrf = dashboard.csrf;
      expect((await dashboard.api("POST", "/sign-out")).status).toBe(204);
      const stale = new DashboardClient(server().url);
      for (const part of cookie.split("; "))
        stale.cookies.set(part.slice(0, part.indexOf("=")), part.slice(part.indexOf("=") + 1));
      stale.csrf = csrf;
      expect((await viewer(stale)).status).toBe(401);
    });

    it("a password change ends the other sessions: their next request is 401", async () => {
      const { dashboard, email } = await owner();
      const other = new DashboardClient(server().url);
      expect((await other.signIn(email)).status).toBe(200);
      expect((await viewer(other)).status).toBe(200);
      const changed = await dashboard.api("POST", "/password", {
        current_password: PASSWORD,
        new_password: `${PASSWORD} again`,
      });
      expect(changed.status, changed.text).toBeLessThan(300);
      expect((await viewer(other)).status).toBe(401);
      expect((await viewer(dashboard)).status).toBe(200);
    });

    it("a removed member's next request is refused", async () => {
      const { dashboard, workspaceId } = await owner();
      const memberEmail = unique("member");
      const elsewhere = await createWorkspace(db(), {
        name: "Member's own",
        plan: "free",
        ownerEmail: memberEmail,
        ownerPassword: PASSWORD,
      });
      await db().membership.create({ data: { userId: elsewhere.owner_id, workspaceId, role: "member" } });
      const member = new DashboardClient(server().url);
      expect((await member.signIn(memberEmail)).status).toBe(200);
      member.workspace = workspaceId;
      expect((await member.v1("GET", "/leads")).status).toBe(200);
      const removed = await dashboard.graphql(`mutation ($id: ID!) { removeMember(user_id: $id) { role } }`, {
        id: elsewhere.owner_id,
      });
      expect(removed.json.errors, JSON.stringify(removed.json)).toBeUndefined();
      const next = await member.v1("GET", "/leads");
      expect(next.status).toBe(403);
      expect(next.json.error.code).toBe("not_a_member");
    });
  });
});
