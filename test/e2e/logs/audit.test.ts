import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_RETENTION_DAYS } from "../../../schema/lib/audit.ts";
import { newId } from "../../../schema/lib/ids.ts";
import { schema } from "../../../schema/index.ts";
import { sweepExpiredAuditEvents } from "../../../server/audit/sweep.ts";
import { prepare } from "../../../server/control/commands.ts";
import { decide, granted, identity, JWT_BEARER_GRANT_TYPE, ownerNamed, registerAnonymous, registerServiceAuth, tokenClient, type ClaimBlock } from "../../support/agent-flow.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { call, raw, rest } from "../../support/http.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The audit log (docs/security.md "Audit log"): every change to access writes one record in its
 * own transaction, with who made it, from where, and the request that made it; GET /v1/audit-events
 * reads them (audit.read: API keys and owners only), nothing changes them, and the sweep drops them
 * after 400 days.
 */

const DAY_MS = 86_400_000;
const LOOPBACK = ["127.0.0.1", "::1"];
const uniqueEmail = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.com`;
/** A User-Agent of its own for each change, so each record's user_agent is known. */
const agentOf = (label: string) => `audit-test/${label} (${randomUUID().slice(0, 8)})`;

interface AuditRecord {
  object: "audit_event";
  id: string;
  action: string;
  actor: { type: string; id: string | null; email: string | null };
  target: { type: string; id: string | null };
  client_ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  created_at: string;
}

/** What a change made over HTTP must have written. */
interface Expected {
  action: string;
  actor: { type: string; id: string | null; email?: string | null };
  target: { type: string; id: string | null };
  userAgent: string;
  requestId: string;
}

function expectRecord(record: AuditRecord | undefined, expected: Expected) {
  expect(record, `a ${expected.action} record`).toBeDefined();
  expect(record).toMatchObject({
    object: "audit_event",
    id: expect.stringMatching(/^aud_[0-9A-Z]{26}$/),
    action: expected.action,
    actor: { type: expected.actor.type, id: expected.actor.id, email: expected.actor.email ?? null },
    target: expected.target,
    user_agent: expected.userAgent,
    request_id: expected.requestId,
  });
  expect(LOOPBACK).toContain(record!.client_ip);
}

/** A workspace with its owner (signed in through the account API) and a key that reads the audit log. */
interface Owned {
  workspaceId: string;
  email: string;
  userId: string;
  dashboard: DashboardClient;
  /** Holds audit.read, agents.*, webhooks.* and leads.read. */
  key: { id: string; key: string };
  audit: (query?: string) => Promise<AuditRecord[]>;
}

e2e("audit log", (server) => {
  const db = () => server().running.db.prisma;

  /** The records of a workspace, newest first, read through the API with a key holding audit.read. */
  const reader = (key: string) => async (query = "") => {
    const res = await rest(server().api, key).get(`/audit-events?limit=100${query ? `&${query}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as AuditRecord[];
  };

  async function ownedWorkspace(label: string, plan: "free" | "pro" = "pro"): Promise<Owned> {
    const email = uniqueEmail(label);
    const cli = await prepare(["workspace", "create", "--name", `Audit ${label}`, "--plan", plan, "--owner-email", email, "--owner-password", PASSWORD, "--json"]).run(cliContext());
    const { workspace_id: workspaceId, owner_id: userId } = cli.json as { workspace_id: string; owner_id: string };
    const key = await server().key(workspaceId, ["audit.read", "agents.read", "agents.write", "webhooks.read", "webhooks.write", "leads.read"]);
    const dashboard = new DashboardClient(server().url);
    await dashboard.session();
    const signedIn = await dashboard.api("POST", "/sign-in", { email, password: PASSWORD });
    expect(signedIn.status, signedIn.text).toBe(200);
    dashboard.workspace = workspaceId;
    return { workspaceId, email, userId, dashboard, key, audit: reader(key.key) };
  }

  const cliContext = () => ({
    prisma: db(),
    migrate: async () => [],
    signingKeys: () => {
      throw new Error("not needed");
    },
    revocations: server().running.revocations,
  });

  /** A GraphQL request with the session of `owned`, a User-Agent of its own; answers the data and the response's request id. */
  async function asOwner(owned: Owned, query: string, variables: Record<string, unknown>, userAgent: string) {
    const res = await owned.dashboard.graphql(query, variables, { headers: { "user-agent": userAgent } });
    expect(res.status).toBe(200);
    return { data: res.json.data as any, errors: res.json.errors, requestId: res.headers.get("x-request-id")! };
  }

  /** A /v1 call with a key and a User-Agent of its own. */
  async function withKey(key: string, method: string, path: string, body: unknown, userAgent: string) {
    const res = await call(method, `${server().api}${path}`, { key, body, headers: { "user-agent": userAgent } });
    return { ...res, requestId: res.headers.get("x-request-id")! };
  }

  let acme: Owned;
  beforeAll(async () => {
    acme = await ownedWorkspace("acme");
  });

  describe("account events of the dashboard", () => {
    it("sign-in, a refused sign-in, a password change and sign-out each write their record, in every workspace of the user", async () => {
      const owned = await ownedWorkspace("account");
      const user = { type: "user", id: owned.userId, email: owned.email };
      const target = { type: "user", id: owned.userId };
      const dashboard = new DashboardClient(server().url);
      await dashboard.session();

      const uaWrong = agentOf("wrong-password");
      const wrong = await dashboard.api("POST", "/sign-in", { email: owned.email.toUpperCase(), password: "not the password at all" }, { headers: { "user-agent": uaWrong } });
      expect(wrong.status).toBe(401);
      expectRecord((await owned.audit("action=session.sign_in_failed"))[0], {
        action: "session.sign_in_failed",
        actor: { type: "user", id: null, email: owned.email },
        target,
        userAgent: uaWrong,
        requestId: wrong.headers.get("x-request-id")!,
      });

      const uaIn = agentOf("sign-in");
      const signedIn = await dashboard.api("POST", "/sign-in", { email: owned.email, password: PASSWORD }, { headers: { "user-agent": uaIn } });
      expect(signedIn.status).toBe(200);
      const inRecord = (await owned.audit("action=session.signed_in")).find((r) => r.request_id === signedIn.headers.get("x-request-id"));
      expectRecord(inRecord, { action: "session.signed_in", actor: user, target, userAgent: uaIn, requestId: signedIn.headers.get("x-request-id")! });

      const uaPassword = agentOf("password");
      const newPassword = `${PASSWORD} again`;
      const changed = await dashboard.api("POST", "/password", { current_password: PASSWORD, new_password: newPassword }, { headers: { "user-agent": uaPassword } });
      expect(changed.status, changed.text).toBe(204);
      expectRecord((await owned.audit("action=user.password_changed"))[0], {
        action: "user.password_changed",
        actor: user,
        target,
        userAgent: uaPassword,
        requestId: changed.headers.get("x-request-id")!,
      });

      // A wrong current password changes nothing and records no change.
      const refused = await dashboard.api("POST", "/password", { current_password: "wrong wrong wrong", new_password: "whatever it is now" });
      expect(refused.status).toBe(400);
      expect(await owned.audit("action=user.password_changed")).toHaveLength(1);

      // Joined to a second workspace, the user's sign-out is recorded in both.
      const other = await ownedWorkspace("account-other");
      await db().membership.create({ data: { workspaceId: other.workspaceId, userId: owned.userId, role: "member" } });
      const uaOut = agentOf("sign-out");
      const out = await dashboard.api("POST", "/sign-out", undefined, { headers: { "user-agent": uaOut } });
      expect(out.status).toBe(204);
      for (const audit of [owned.audit, other.audit]) {
        expectRecord((await audit("action=session.signed_out"))[0], { action: "session.signed_out", actor: user, target, userAgent: uaOut, requestId: out.headers.get("x-request-id")! });
      }
      // Signing out again (no session left) records nothing more.
      await dashboard.api("POST", "/sign-out");
      expect(await owned.audit("action=session.signed_out")).toHaveLength(1);
    });

    it("an unknown e-mail's refused sign-in belongs to no workspace and is not recorded", async () => {
      const before = await db().auditEvent.count();
      const dashboard = new DashboardClient(server().url);
      await dashboard.session();
      const nobody = uniqueEmail("nobody");
      expect((await dashboard.api("POST", "/sign-in", { email: nobody, password: "not a password of anyone" })).status).toBe(401);
      expect(await db().auditEvent.count({ where: { actorEmail: nobody } })).toBe(0);
      expect(await db().auditEvent.count()).toBe(before);
    });

    it("sign-up records the new workspace and the sign-in, both by the new user", async () => {
      const dashboard = new DashboardClient(server().url);
      await dashboard.session();
      const email = uniqueEmail("signup");
      const ua = agentOf("sign-up");
      const res = await dashboard.api("POST", "/sign-up", { email, password: PASSWORD, workspace_name: "Signed up" }, { headers: { "user-agent": ua } });
      expect(res.status, res.text).toBe(201);
      const workspaceId = res.json.workspaces[0].id as string;
      const records = await reader((await server().key(workspaceId, ["audit.read"])).key)();
      const actor = { type: "user", id: res.json.user.id, email };
      const requestId = res.headers.get("x-request-id")!;
      expect(records.map((r) => r.action)).toEqual(["session.signed_in", "workspace.created"]);
      expectRecord(records[1], { action: "workspace.created", actor, target: { type: "workspace", id: workspaceId }, userAgent: ua, requestId });
      expectRecord(records[0], { action: "session.signed_in", actor, target: { type: "user", id: res.json.user.id }, userAgent: ua, requestId });
    });
  });

  describe("API keys, members and invitations (dashboard GraphQL)", () => {
    const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { api_key { id } } }`;
    const REVOKE = `mutation($id: ID!) { revokeApiKey(id: $id) { id revoked_at } }`;
    const ROTATE = `mutation($id: ID!) { rotateApiKey(id: $id, grace_seconds: 60) { api_key { id } previous { id } } }`;

    it("create, rotate and revoke a key: each change by the owner, with its request", async () => {
      const owner = { type: "user", id: acme.userId, email: acme.email };
      const uaCreate = agentOf("key-create");
      const created = await asOwner(acme, CREATE, { input: { name: "Audited", scopes: ["leads.read"] } }, uaCreate);
      const keyId = created.data.createApiKey.api_key.id as string;
      expectRecord((await acme.audit(`target_id=${keyId}`))[0], { action: "api_key.created", actor: owner, target: { type: "api_key", id: keyId }, userAgent: uaCreate, requestId: created.requestId });

      const uaRotate = agentOf("key-rotate");
      const rotated = await asOwner(acme, ROTATE, { id: keyId }, uaRotate);
      const successor = rotated.data.rotateApiKey.api_key.id as string;
      expectRecord((await acme.audit(`target_id=${keyId}&action=api_key.rotated`))[0], {
        action: "api_key.rotated",
        actor: owner,
        target: { type: "api_key", id: keyId },
        userAgent: uaRotate,
        requestId: rotated.requestId,
      });
      expectRecord((await acme.audit(`target_id=${successor}`))[0], { action: "api_key.created", actor: owner, target: { type: "api_key", id: successor }, userAgent: uaRotate, requestId: rotated.requestId });

      const uaRevoke = agentOf("key-revoke");
      const revoked = await asOwner(acme, REVOKE, { id: successor }, uaRevoke);
      expect(revoked.errors).toBeUndefined();
      expectRecord((await acme.audit(`target_id=${successor}&action=api_key.revoked`))[0], {
        action: "api_key.revoked",
        actor: owner,
        target: { type: "api_key", id: successor },
        userAgent: uaRevoke,
        requestId: revoked.requestId,
      });
      // Revoking it again changes nothing, and records nothing.
      await asOwner(acme, REVOKE, { id: successor }, uaRevoke);
      expect(await acme.audit(`target_id=${successor}&action=api_key.revoked`)).toHaveLength(1);
    });

    it("a change that fails leaves no record: an unknown key, a bad scope, the last owner", async () => {
      const before = await acme.audit();
      const unknown = await asOwner(acme, REVOKE, { id: newId("apiKey") }, agentOf("unknown"));
      expect(unknown.errors?.[0]?.extensions.code).toBe("not_found");
      const bad = await asOwner(acme, CREATE, { input: { name: "Bad", scopes: ["leads.read", "everything"] } }, agentOf("bad"));
      expect(bad.errors?.[0]?.extensions.code).toBe("validation_failed");
      const last = await asOwner(acme, `mutation($id: ID!) { removeMember(user_id: $id) { user_id } }`, { id: acme.userId }, agentOf("last-owner"));
      expect(last.errors?.[0]?.extensions.code).toBe("invalid_state");
      const same = await asOwner(acme, `mutation($id: ID!) { updateMember(user_id: $id, role: owner) { role } }`, { id: acme.userId }, agentOf("same-role"));
      expect(same.errors).toBeUndefined();
      expect(await acme.audit()).toEqual(before);
    });

    it("invite, revoke an invitation, accept one, change a role, remove a member", async () => {
      const owned = await ownedWorkspace("members");
      const owner = { type: "user", id: owned.userId, email: owned.email };
      const INVITE = `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { invitation { id } accept_url } }`;
      const inviteeEmail = uniqueEmail("invitee");

      const uaFirst = agentOf("invite-1");
      const first = await asOwner(owned, INVITE, { input: { email: uniqueEmail("never"), role: "member" } }, uaFirst);
      const firstId = first.data.inviteMember.invitation.id as string;
      expectRecord((await owned.audit(`target_id=${firstId}`))[0], { action: "member.invited", actor: owner, target: { type: "invitation", id: firstId }, userAgent: uaFirst, requestId: first.requestId });
      const uaRevoke = agentOf("invite-revoke");
      const revoked = await asOwner(owned, `mutation($id: ID!) { revokeInvitation(id: $id) { id } }`, { id: firstId }, uaRevoke);
      expectRecord((await owned.audit(`target_id=${firstId}&action=invitation.revoked`))[0], {
        action: "invitation.revoked",
        actor: owner,
        target: { type: "invitation", id: firstId },
        userAgent: uaRevoke,
        requestId: revoked.requestId,
      });

      const invited = await asOwner(owned, INVITE, { input: { email: inviteeEmail, role: "member" } }, agentOf("invite-2"));
      const invitationId = invited.data.inviteMember.invitation.id as string;
      const token = new URL(invited.data.inviteMember.accept_url).hash.replace(/^#token=/, "");
      const inviteeWorkspace = await prepare(["workspace", "create", "--name", "Invitee's", "--plan", "free", "--owner-email", inviteeEmail, "--owner-password", PASSWORD, "--json"]).run(cliContext());
      const inviteeId = (inviteeWorkspace.json as { owner_id: string }).owner_id;
      const invitee = new DashboardClient(server().url);
      await invitee.signIn(inviteeEmail);
      const uaAccept = agentOf("accept");
      const accepted = await invitee.api("POST", "/invitations/accept", { token }, { headers: { "user-agent": uaAccept } });
      expect(accepted.status, accepted.text).toBe(200);
      expectRecord((await owned.audit("action=invitation.accepted"))[0], {
        action: "invitation.accepted",
        actor: { type: "user", id: inviteeId, email: inviteeEmail },
        target: { type: "invitation", id: invitationId },
        userAgent: uaAccept,
        requestId: accepted.headers.get("x-request-id")!,
      });

      const uaRole = agentOf("role");
      const promoted = await asOwner(owned, `mutation($id: ID!) { updateMember(user_id: $id, role: owner) { role } }`, { id: inviteeId }, uaRole);
      expect(promoted.data.updateMember.role).toBe("owner");
      expectRecord((await owned.audit("action=member.role_changed"))[0], { action: "member.role_changed", actor: owner, target: { type: "user", id: inviteeId }, userAgent: uaRole, requestId: promoted.requestId });

      const uaRemove = agentOf("remove");
      const removed = await asOwner(owned, `mutation($id: ID!) { removeMember(user_id: $id) { user_id } }`, { id: inviteeId }, uaRemove);
      expect(removed.errors).toBeUndefined();
      expectRecord((await owned.audit("action=member.removed"))[0], { action: "member.removed", actor: owner, target: { type: "user", id: inviteeId }, userAgent: uaRemove, requestId: removed.requestId });
    });
  });

  describe("agent access, trusted providers and webhook endpoints (API keys)", () => {
    it("agent access off and on: a record per change, none when nothing changes", async () => {
      const owned = await ownedWorkspace("agent-access");
      const actor = { type: "api_key", id: owned.key.id };
      const target = { type: "workspace", id: owned.workspaceId };
      const uaOff = agentOf("off");
      const off = await withKey(owned.key.key, "PATCH", "/agent-settings", { agent_auth_enabled: false }, uaOff);
      expect(off.status).toBe(200);
      const uaOn = agentOf("on");
      const on = await withKey(owned.key.key, "PATCH", "/agent-settings", { agent_auth_enabled: true }, uaOn);
      await withKey(owned.key.key, "PATCH", "/agent-settings", { agent_auth_enabled: true }, uaOn);
      const records = await owned.audit("action=agent_access.enabled");
      expect(records).toHaveLength(1);
      expectRecord(records[0], { action: "agent_access.enabled", actor, target, userAgent: uaOn, requestId: on.requestId });
      expectRecord((await owned.audit("action=agent_access.disabled"))[0], { action: "agent_access.disabled", actor, target, userAgent: uaOff, requestId: off.requestId });
    });

    it("webhook endpoints: create, rotate the secret, delete; a refused URL records nothing", async () => {
      const actor = { type: "api_key", id: acme.key.id };
      const uaCreate = agentOf("endpoint-create");
      const created = await withKey(acme.key.key, "POST", "/webhook-endpoints", { url: "http://127.0.0.1:9/audit-hook", events: ["lead.created"] }, uaCreate);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      const target = { type: "webhook_endpoint", id };
      expectRecord((await acme.audit(`target_id=${id}`))[0], { action: "webhook_endpoint.created", actor, target, userAgent: uaCreate, requestId: created.requestId });
      const uaRotate = agentOf("endpoint-rotate");
      const rotated = await withKey(acme.key.key, "POST", `/webhook-endpoints/${id}/rotate-secret`, undefined, uaRotate);
      expect(rotated.status).toBe(200);
      expectRecord((await acme.audit(`target_id=${id}`))[0], { action: "webhook_endpoint.secret_rotated", actor, target, userAgent: uaRotate, requestId: rotated.requestId });
      const uaDelete = agentOf("endpoint-delete");
      const deleted = await withKey(acme.key.key, "DELETE", `/webhook-endpoints/${id}`, undefined, uaDelete);
      expect(deleted.status).toBe(200);
      expectRecord((await acme.audit(`target_id=${id}`))[0], { action: "webhook_endpoint.deleted", actor, target, userAgent: uaDelete, requestId: deleted.requestId });

      const before = (await acme.audit()).length;
      expect((await withKey(acme.key.key, "POST", "/webhook-endpoints", { url: "ftp://127.0.0.1/x", events: ["lead.created"] }, uaCreate)).status).toBe(400);
      expect((await withKey(acme.key.key, "DELETE", `/webhook-endpoints/${newId("webhookEndpoint")}`, undefined, uaDelete)).status).toBe(404);
      expect(await acme.audit()).toHaveLength(before);
    });

    it("the record and its change are one: when the record cannot be written, the change is not made", async () => {
      const repair = await breakAudit(server());
      try {
        const res = await withKey(acme.key.key, "POST", "/webhook-endpoints", { url: "http://127.0.0.1:9/never", events: ["lead.created"] }, agentOf("broken"));
        expect(res.status).toBe(500);
        const key = await asOwner(acme, `mutation { createApiKey(input: { name: "Never", scopes: ["leads.read"] }) { api_key { id } } }`, {}, agentOf("broken"));
        expect(key.errors?.[0]?.extensions.code).toBe("internal_error");
      } finally {
        await repair();
      }
      expect(await db().webhookEndpoint.count({ where: { workspaceId: acme.workspaceId, url: "http://127.0.0.1:9/never" } })).toBe(0);
      expect(await db().apiKey.count({ where: { workspaceId: acme.workspaceId, name: "Never" } })).toBe(0);
    });
  });

  describe("agents", () => {
    let provider: IdJagProvider;
    beforeAll(async () => {
      provider = await IdJagProvider.start();
    });
    afterAll(() => provider?.close());

    it("trusted providers, a provider's revocation (SET), a deletion that revokes its agents", async () => {
      const owned = await ownedWorkspace("provider");
      const actor = { type: "api_key", id: owned.key.id };
      const uaTrust = agentOf("trust");
      const trusted = await withKey(owned.key.key, "POST", "/trusted-providers", { issuer: provider.issuer, jwks_url: provider.jwksUrl }, uaTrust);
      expect(trusted.status, JSON.stringify(trusted.body)).toBe(201);
      const providerId = trusted.body.id as string;
      expectRecord((await owned.audit(`target_id=${providerId}`))[0], {
        action: "trusted_provider.created",
        actor,
        target: { type: "trusted_provider", id: providerId },
        userAgent: uaTrust,
        requestId: trusted.requestId,
      });

      const first = await link(server(), owned.workspaceId, provider, `audit-${randomUUID()}`);
      const second = await link(server(), owned.workspaceId, provider, `audit-${randomUUID()}`);
      // The provider says the first user's assertion is revoked: the system acted, on that entry's word.
      const notified = await fetch(`${server().url}/agent/event/notify`, {
        method: "POST",
        headers: { "content-type": "application/secevent+jwt", "user-agent": "audit-test/provider" },
        body: await provider.revokedSet(server().url, first.sub),
      });
      expect(notified.status).toBe(202);
      expectRecord((await owned.audit(`target_id=${first.registrationId}`))[0], {
        action: "agent_registration.revoked",
        actor: { type: "system", id: providerId },
        target: { type: "agent_registration", id: first.registrationId },
        userAgent: "audit-test/provider",
        requestId: notified.headers.get("x-request-id")!,
      });

      const uaDelete = agentOf("distrust");
      const deleted = await withKey(owned.key.key, "DELETE", `/trusted-providers/${providerId}`, undefined, uaDelete);
      expect(deleted.status).toBe(200);
      expectRecord((await owned.audit(`target_id=${providerId}`))[0], {
        action: "trusted_provider.deleted",
        actor,
        target: { type: "trusted_provider", id: providerId },
        userAgent: uaDelete,
        requestId: deleted.requestId,
      });
      expectRecord((await owned.audit(`target_id=${second.registrationId}&action=agent_registration.revoked`))[0], {
        action: "agent_registration.revoked",
        actor,
        target: { type: "agent_registration", id: second.registrationId },
        userAgent: uaDelete,
        requestId: deleted.requestId,
      });
    });

    it("the claim page: a refused sign-in, sign-in, approval, sign-out by the user; an owner's revocation by its key", async () => {
      const owned = await ownedWorkspace("claim");
      const user = { type: "user", id: owned.userId, email: owned.email };
      const agent = await registerServiceAuth(server(), owned.email);
      const page = new ClaimPage(server().url);
      const failed = await page.failSignIn(agent.claim.verification_uri, owned.email, agentOf("claim-wrong-password"));
      expectRecord((await owned.audit("action=session.sign_in_failed"))[0], {
        action: "session.sign_in_failed",
        actor: { type: "user", id: null, email: owned.email },
        target: { type: "user", id: owned.userId },
        ...failed,
      });
      const signIn = await page.signIn(agent.claim.verification_uri, owned.email, agentOf("claim-sign-in"));
      expectRecord((await owned.audit("action=session.signed_in"))[0], { action: "session.signed_in", actor: user, target: { type: "user", id: owned.userId }, ...signIn });

      const approved = await page.decide(agent.claim.verification_uri, "approve", { code: agent.claim.user_code, workspace_id: owned.workspaceId }, agentOf("approve"));
      expect(approved.status, approved.text).toBe(200);
      const registration = { type: "agent_registration", id: agent.registration_id };
      expectRecord((await owned.audit(`target_id=${agent.registration_id}`))[0], { action: "agent_registration.approved", actor: user, target: registration, ...approved.seen });

      const signedOut = await page.signOut(agent.claim.verification_uri, agentOf("claim-sign-out"));
      expectRecord((await owned.audit("action=session.signed_out"))[0], { action: "session.signed_out", actor: user, target: { type: "user", id: owned.userId }, ...signedOut });

      const uaRevoke = agentOf("revoke-agent");
      const revoked = await withKey(owned.key.key, "POST", `/agent-registrations/${agent.registration_id}/revoke`, undefined, uaRevoke);
      expect(revoked.status).toBe(200);
      expectRecord((await owned.audit(`target_id=${agent.registration_id}`))[0], {
        action: "agent_registration.revoked",
        actor: { type: "api_key", id: owned.key.id },
        target: registration,
        userAgent: uaRevoke,
        requestId: revoked.requestId,
      });
      // Revoking it again changes nothing.
      await withKey(owned.key.key, "POST", `/agent-registrations/${agent.registration_id}/revoke`, undefined, uaRevoke);
      expect(await owned.audit(`target_id=${agent.registration_id}&action=agent_registration.revoked`)).toHaveLength(1);
    });

    it("an anonymous agent's sandbox: a denial by the user, then the agent revoking itself", async () => {
      const owned = await ownedWorkspace("sandbox");
      const agent = await registerAnonymous(server(), "Sandboxed");
      const sandboxId = (await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })).workspaceId!;
      const sandbox = reader((await server().key(sandboxId, ["audit.read"])).key);
      const started = await identity(server(), { type: "login_hint", claim_token: agent.claim_token, login_hint: owned.email }, "/agent/identity/claim");
      expect(started.status, started.text).toBe(200);
      const uri = started.json.claim.verification_uri as string;
      const page = new ClaimPage(server().url);
      await page.signIn(uri, owned.email, agentOf("sandbox-sign-in"));
      const denied = await page.decide(uri, "deny", {}, agentOf("deny"));
      expect(denied.status, denied.text).toBe(200);
      const registration = { type: "agent_registration", id: agent.registration_id };
      expectRecord((await sandbox("action=agent_registration.denied"))[0], {
        action: "agent_registration.denied",
        actor: { type: "user", id: owned.userId, email: owned.email },
        target: registration,
        ...denied.seen,
      });

      const uaAgent = agentOf("agent-revokes-itself");
      const revoked = await raw(`${server().url}/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": uaAgent },
        body: new URLSearchParams({ token: agent.identity_assertion }).toString(),
      });
      expect(revoked.status).toBe(200);
      expectRecord((await sandbox("action=agent_registration.revoked"))[0], {
        action: "agent_registration.revoked",
        actor: { type: "agent", id: agent.registration_id },
        target: registration,
        userAgent: uaAgent,
        requestId: revoked.headers.get("x-request-id")!,
      });
    });
  });

  describe("the CLI", () => {
    it("workspace create, keys create and keys revoke are the system's, with no request", async () => {
      const made = await prepare(["workspace", "create", "--name", "CLI", "--plan", "free", "--owner-email", uniqueEmail("cli"), "--json"]).run(cliContext());
      const workspaceId = (made.json as { workspace_id: string }).workspace_id;
      const key = (await prepare(["keys", "create", "--workspace", workspaceId, "--scopes", "audit.read", "--json"]).run(cliContext())).json as { id: string; key: string };
      const other = (await prepare(["keys", "create", "--workspace", workspaceId, "--scopes", "leads.read", "--json"]).run(cliContext())).json as { id: string };
      await prepare(["keys", "revoke", other.id]).run(cliContext());
      await prepare(["keys", "revoke", other.id]).run(cliContext());
      const records = await reader(key.key)();
      const system = { type: "system", id: null, email: null };
      const bare = { client_ip: null, user_agent: null, request_id: null };
      expect(records).toEqual([
        expect.objectContaining({ action: "api_key.revoked", actor: system, target: { type: "api_key", id: other.id }, ...bare }),
        expect.objectContaining({ action: "api_key.created", actor: system, target: { type: "api_key", id: other.id }, ...bare }),
        expect.objectContaining({ action: "api_key.created", actor: system, target: { type: "api_key", id: key.id }, ...bare }),
        expect.objectContaining({ action: "workspace.created", actor: system, target: { type: "workspace", id: workspaceId }, ...bare }),
      ]);
    });
  });

  describe("reading", () => {
    let owned: Owned;
    let keyIds: string[];
    beforeAll(async () => {
      owned = await ownedWorkspace("reading");
      keyIds = [];
      for (let i = 0; i < 5; i++) {
        const made = await asOwner(owned, `mutation { createApiKey(input: { name: "k${i}", scopes: ["leads.read"] }) { api_key { id } } }`, {}, "audit-test/reading");
        keyIds.push(made.data.createApiKey.api_key.id);
      }
      await asOwner(owned, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: keyIds[0] }, "audit-test/reading");
    });

    it("pages newest first with limit and cursor, and retrieves one by id over REST and GraphQL", async () => {
      const all = await owned.audit();
      expect(all.map((r) => r.action)).toEqual(["api_key.revoked", ...Array(5).fill("api_key.created"), "session.signed_in", "workspace.created"]);
      expect(all.map((r) => r.id)).toEqual([...all.map((r) => r.id)].sort().reverse());
      const api = rest(server().api, owned.key.key);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await api.get(`/audit-events?limit=4${cursor ? `&cursor=${cursor}` : ""}`);
        expect(page.status).toBe(200);
        expect(page.body.object).toBe("list");
        expect(page.body.data.length).toBeLessThanOrEqual(4);
        seen.push(...page.body.data.map((r: AuditRecord) => r.id));
        cursor = page.body.next_cursor;
        expect(page.body.has_more).toBe(cursor !== null);
      } while (cursor);
      expect(seen).toEqual(all.map((r) => r.id));

      const one = await api.get(`/audit-events/${all[0]!.id}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(all[0]);
      expect((await api.get(`/audit-events/${newId("auditEvent")}`)).status).toBe(404);
      // Another workspace's record is not found.
      expect((await rest(server().api, acme.key.key).get(`/audit-events/${all[0]!.id}`)).status).toBe(404);

      const gql = await fetch(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${owned.key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: `query($id: ID!) { auditEvent(id: $id) { id action actor { type id email } target { type id } } auditEvents(limit: 2) { data { id } has_more } }`, variables: { id: all[0]!.id } }),
      });
      const body = (await gql.json()) as any;
      expect(body.errors).toBeUndefined();
      expect(body.data.auditEvent).toEqual({ id: all[0]!.id, action: all[0]!.action, actor: all[0]!.actor, target: all[0]!.target });
      expect(body.data.auditEvents).toEqual({ data: [{ id: all[0]!.id }, { id: all[1]!.id }], has_more: true });
    });

    it("filters by action, actor_id, target_id and a time range", async () => {
      const all = await owned.audit();
      expect((await owned.audit("action=api_key.created")).map((r) => r.id)).toEqual(all.filter((r) => r.action === "api_key.created").map((r) => r.id));
      expect((await owned.audit(`actor_id=${owned.userId}`)).map((r) => r.id)).toEqual(all.filter((r) => r.actor.id === owned.userId).map((r) => r.id));
      expect((await owned.audit(`target_id=${keyIds[0]}`)).map((r) => r.action)).toEqual(["api_key.revoked", "api_key.created"]);
      expect(await owned.audit(`target_id=${keyIds[0]}&action=api_key.rotated`)).toEqual([]);

      const middle = all[3]!;
      const at = encodeURIComponent(middle.created_at);
      const from = await owned.audit(`from=${at}`);
      expect(from.length).toBeGreaterThan(0);
      expect(from.every((r) => r.created_at >= middle.created_at)).toBe(true);
      const to = await owned.audit(`to=${at}`);
      expect(to.every((r) => r.created_at < middle.created_at)).toBe(true);
      expect(from.length + to.length).toBe(all.length);
      const past = encodeURIComponent(new Date(Date.now() - 3 * DAY_MS).toISOString());
      const longAgo = encodeURIComponent(new Date(Date.now() - 4 * DAY_MS).toISOString());
      expect(await owned.audit(`from=${longAgo}&to=${past}`)).toEqual([]);

      const api = rest(server().api, owned.key.key);
      const unknown = await api.get("/audit-events?action=api_key.exploded");
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toMatchObject({ code: "validation_failed", param: "action" });
      const backwards = await api.get(`/audit-events?from=${at}&to=${longAgo}`);
      expect(backwards.status).toBe(400);
      expect(backwards.body.error).toMatchObject({ code: "validation_failed", param: "to" });
    });

    it("is read-only: no mutation, and no other method on its paths", async () => {
      const mutations = Object.keys(schema.getMutationType()!.getFields());
      expect(mutations.filter((name) => /audit/i.test(name))).toEqual([]);
      const [record] = await owned.audit();
      for (const [method, path] of [
        ["POST", "/audit-events"],
        ["PUT", "/audit-events"],
        ["DELETE", "/audit-events"],
        ["PATCH", `/audit-events/${record!.id}`],
        ["PUT", `/audit-events/${record!.id}`],
        ["DELETE", `/audit-events/${record!.id}`],
        ["POST", `/audit-events/${record!.id}`],
      ] as const) {
        const res = await call(method, `${server().api}${path}`, { key: owned.key.key });
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.body.error.code).toBe("method_not_allowed");
        expect(res.headers.get("allow")).toBe("GET");
      }
      expect((await owned.audit())[0]).toEqual(record);
    });
  });

  describe("who may read it", () => {
    it("a key without audit.read: 403 insufficient_scope, on REST and GraphQL", async () => {
      const key = await server().key(acme.workspaceId, ["leads.read", "logs.read", "agents.read"]);
      const res = await rest(server().api, key.key).get("/audit-events");
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "audit.read" });
      const gql = await fetch(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "{ auditEvents { data { id } } }" }),
      });
      expect(((await gql.json()) as any).errors[0].extensions).toMatchObject({ code: "insufficient_scope", required_scope: "audit.read" });
    });

    it("an owner's session reads it; a member's session gets 403", async () => {
      const owner = await acme.dashboard.v1("GET", "/audit-events?limit=1");
      expect(owner.status).toBe(200);
      const memberEmail = uniqueEmail("member");
      const made = await prepare(["workspace", "create", "--name", "Member's", "--plan", "free", "--owner-email", memberEmail, "--owner-password", PASSWORD, "--json"]).run(cliContext());
      await db().membership.create({ data: { workspaceId: acme.workspaceId, userId: (made.json as { owner_id: string }).owner_id, role: "member" } });
      const member = new DashboardClient(server().url);
      await member.signIn(memberEmail);
      member.workspace = acme.workspaceId;
      const res = await member.v1("GET", "/audit-events");
      expect(res.status).toBe(403);
      expect(res.json.error.type).toBe("permission_error");
      expect(res.json.error).toMatchObject({ code: "owner_required", required_role: "owner" });
      const gql = await member.graphql("{ auditEvents { data { id } } }");
      expect(gql.json.errors?.[0]?.extensions.code).toBe("owner_required");
      // Reading the rest of the workspace still works for the member.
      expect((await member.v1("GET", "/leads")).status).toBe(200);
    });

    it("agent tokens get 403 and can never hold audit.read", async () => {
      const agent = await registerAnonymous(server(), "Curious");
      const tokens = granted(await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }));
      const res = await rest(server().api, tokens.access_token).get("/audit-events");
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "audit.read" });

      // Asking for it at registration or at the token endpoint is refused.
      const asked = await identity(server(), { type: "service_auth", login_hint: acme.email, agent_name: "Greedy", scope: "leads.read audit.read" });
      expect(asked.status).toBe(400);
      expect(asked.json.error).toBe("invalid_request");
      const narrowed = await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion, scope: "audit.read" });
      expect(narrowed.ok).toBe(false);

      // Even a token row that says audit.read does not carry it.
      const fresh = granted(await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }));
      await db().agentToken.updateMany({ where: { registrationId: agent.registration_id, revokedAt: null }, data: { scopes: { push: "audit.read" } } });
      expect((await rest(server().api, fresh.access_token).get("/audit-events")).status).toBe(403);
    });
  });

  describe("retention", () => {
    it(`the sweep removes records older than ${AUDIT_RETENTION_DAYS} days, and only those`, async () => {
      const workspaceId = newId("workspace");
      const now = new Date();
      const row = (ageDays: number) => ({
        id: newId("auditEvent"),
        workspaceId,
        action: "api_key.created",
        actorType: "system" as const,
        targetType: "api_key",
        targetId: newId("apiKey"),
        createdAt: new Date(now.getTime() - ageDays * DAY_MS),
      });
      const old = [row(AUDIT_RETENTION_DAYS + 30), row(AUDIT_RETENTION_DAYS + 0.01)];
      const kept = [row(AUDIT_RETENTION_DAYS - 0.01), row(1), row(0)];
      await db().auditEvent.createMany({ data: [...old, ...kept] });
      const everywhere = await db().auditEvent.count();
      expect(await sweepExpiredAuditEvents(db(), now)).toBe(2);
      const left = await db().auditEvent.findMany({ where: { workspaceId }, select: { id: true } });
      expect(left.map((r) => r.id).sort()).toEqual(kept.map((r) => r.id).sort());
      expect(await db().auditEvent.count()).toBe(everywhere - 2);
      expect(await sweepExpiredAuditEvents(db(), now)).toBe(0);
    });
  });
});

/**
 * A user of `sub` at `provider` linked into the workspace: their first ID-JAG, approved by the
 * person it names (an owner). Answers the registration that became active.
 */
async function link(server: TestServer, workspaceId: string, provider: IdJagProvider, sub: string) {
  const first = await identity(server, { type: "identity_assertion", assertion_type: "urn:ietf:params:oauth:token-type:id-jag", assertion: await provider.idJag(server.url, sub) });
  expect(first.status, first.text).toBe(401);
  const { userId } = await ownerNamed(server, workspaceId, `${sub}@example.com`);
  expect(await decide(server, first.json.claim as ClaimBlock, userId, { workspaceId })).toMatchObject({ outcome: "approved" });
  const active = await server.running.db.prisma.agentRegistration.findFirstOrThrow({ where: { providerSubject: sub, workspaceId, status: "active" } });
  return { sub, registrationId: active.id };
}

/** Makes every insert into the audit log fail until the returned function is called: a real failure inside the writing transaction. */
async function breakAudit(server: TestServer): Promise<() => Promise<void>> {
  const db = server.running.db.prisma;
  await db.$executeRawUnsafe("create or replace function kontor_test_break_audit() returns trigger language plpgsql as $$ begin raise exception 'audit log unavailable'; end $$");
  await db.$executeRawUnsafe("create trigger kontor_test_break_audit before insert on audit_events for each row execute function kontor_test_break_audit()");
  return async () => {
    await db.$executeRawUnsafe("drop trigger if exists kontor_test_break_audit on audit_events");
    await db.$executeRawUnsafe("drop function if exists kontor_test_break_audit()");
  };
}

/**
 * The claim page driven like a browser, with a User-Agent of each request's own: what each answer
 * must have recorded is `seen` (its User-Agent and X-Request-Id).
 */
class ClaimPage {
  private readonly cookies = new Map<string, string>();
  private csrf = "";

  constructor(private readonly base: string) {}

  private async send(url: string, userAgent: string, form?: Record<string, string>) {
    const headers: Record<string, string> = { cookie: [...this.cookies].map(([n, v]) => `${n}=${v}`).join("; "), "user-agent": userAgent };
    if (form) Object.assign(headers, { origin: this.base, "content-type": "application/x-www-form-urlencoded" });
    const response = await fetch(url, { method: form ? "POST" : "GET", headers, body: form && new URLSearchParams(form).toString(), redirect: "manual" });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair!.indexOf("=");
      if (attributes.some((a) => a.trim().toLowerCase() === "max-age=0")) this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const text = await response.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(text)?.[1] ?? this.csrf;
    return { status: response.status, text, seen: { userAgent, requestId: response.headers.get("x-request-id")! } };
  }

  private post(uri: string, fields: Record<string, string>, userAgent: string) {
    const attemptToken = new URL(uri).searchParams.get("claim_attempt_token")!;
    return this.send(`${this.base}/agent/claim`, userAgent, { claim_attempt_token: attemptToken, csrf_token: this.csrf, ...fields });
  }

  /** Opens the link and signs in through its form: what the sign-in answer recorded. */
  async signIn(uri: string, email: string, userAgent: string) {
    expect((await this.send(uri, userAgent)).status).toBe(200);
    const answer = await this.post(uri, { action: "sign_in", email, password: PASSWORD }, userAgent);
    expect(answer.status, answer.text).toBe(303);
    expect((await this.send(uri, userAgent)).status).toBe(200);
    return answer.seen;
  }

  /** Opens the link and signs in with a wrong password: what the refusal recorded. */
  async failSignIn(uri: string, email: string, userAgent: string) {
    expect((await this.send(uri, userAgent)).status).toBe(200);
    const answer = await this.post(uri, { action: "sign_in", email, password: "not the password at all" }, userAgent);
    expect(answer.status).toBe(401);
    return answer.seen;
  }

  decide(uri: string, action: "approve" | "deny", fields: Record<string, string>, userAgent: string) {
    return this.post(uri, { action, ...fields }, userAgent);
  }

  async signOut(uri: string, userAgent: string) {
    const answer = await this.post(uri, { action: "sign_out" }, userAgent);
    expect(answer.status).toBe(303);
    return answer.seen;
  }
}
