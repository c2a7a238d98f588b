import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { prepare } from "../../../server/control/commands.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { e2e } from "../../support/suite.ts";
import { agentOf, auditHelpers, expectRecord, type Owned, uniqueEmail } from "./support.ts";

e2e("audit log: accounts, keys and members", (server) => {
  const { db, reader, ownedWorkspace, cliContext, asOwner } = auditHelpers(server);

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
      const wrong = await dashboard.api(
        "POST",
        "/sign-in",
        { email: owned.email.toUpperCase(), password: "not the password at all" },
        { headers: { "user-agent": uaWrong } },
      );
      expect(wrong.status).toBe(401);
      expectRecord((await owned.audit("action=session.sign_in_failed"))[0], {
        action: "session.sign_in_failed",
        actor: { type: "user", id: null, email: owned.email },
        target,
        userAgent: uaWrong,
        requestId: wrong.headers.get("x-request-id")!,
      });

      const uaIn = agentOf("sign-in");
      const signedIn = await dashboard.api(
        "POST",
        "/sign-in",
        { email: owned.email, password: PASSWORD },
        { headers: { "user-agent": uaIn } },
      );
      expect(signedIn.status).toBe(200);
      const inRecord = (await owned.audit("action=session.signed_in")).find(
        (r) => r.request_id === signedIn.headers.get("x-request-id"),
      );
      expectRecord(inRecord, {
        action: "session.signed_in",
        actor: user,
        target,
        userAgent: uaIn,
        requestId: signedIn.headers.get("x-request-id")!,
      });

      const uaPassword = agentOf("password");
      const newPassword = `${PASSWORD} again`;
      const changed = await dashboard.api(
        "POST",
        "/password",
        { current_password: PASSWORD, new_password: newPassword },
        { headers: { "user-agent": uaPassword } },
      );
      expect(changed.status, changed.text).toBe(204);
      expectRecord((await owned.audit("action=user.password_changed"))[0], {
        action: "user.password_changed",
        actor: user,
        target,
        userAgent: uaPassword,
        requestId: changed.headers.get("x-request-id")!,
      });

      // A wrong current password changes nothing and records no change.
      const refused = await dashboard.api("POST", "/password", {
        current_password: "wrong wrong wrong",
        new_password: "whatever it is now",
      });
      expect(refused.status).toBe(400);
      expect(await owned.audit("action=user.password_changed")).toHaveLength(1);

      // Joined to a second workspace, the user's sign-out is recorded in both.
      const other = await ownedWorkspace("account-other");
      await db().membership.create({
        data: { workspaceId: other.workspaceId, userId: owned.userId, role: "member" },
      });
      const uaOut = agentOf("sign-out");
      const out = await dashboard.api("POST", "/sign-out", undefined, { headers: { "user-agent": uaOut } });
      expect(out.status).toBe(204);
      for (const audit of [owned.audit, other.audit]) {
        expectRecord((await audit("action=session.signed_out"))[0], {
          action: "session.signed_out",
          actor: user,
          target,
          userAgent: uaOut,
          requestId: out.headers.get("x-request-id")!,
        });
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
      expect(
        (await dashboard.api("POST", "/sign-in", { email: nobody, password: "not a password of anyone" }))
          .status,
      ).toBe(401);
      expect(await db().auditEvent.count({ where: { actorEmail: nobody } })).toBe(0);
      expect(await db().auditEvent.count()).toBe(before);
    });

    it("sign-up records the new workspace and the sign-in, both by the new user", async () => {
      const dashboard = new DashboardClient(server().url);
      await dashboard.session();
      const email = uniqueEmail("signup");
      const ua = agentOf("sign-up");
      const res = await dashboard.api(
        "POST",
        "/sign-up",
        { email, password: PASSWORD, workspace_name: "Signed up" },
        { headers: { "user-agent": ua } },
      );
      expect(res.status, res.text).toBe(201);
      const workspaceId = res.json.workspaces[0].id as string;
      const records = await reader((await server().key(workspaceId, ["audit.read"])).key)();
      const actor = { type: "user", id: res.json.user.id, email };
      const requestId = res.headers.get("x-request-id")!;
      expect(records.map((r) => r.action)).toEqual(["session.signed_in", "workspace.created"]);
      expectRecord(records[1], {
        action: "workspace.created",
        actor,
        target: { type: "workspace", id: workspaceId },
        userAgent: ua,
        requestId,
      });
      expectRecord(records[0], {
        action: "session.signed_in",
        actor,
        target: { type: "user", id: res.json.user.id },
        userAgent: ua,
        requestId,
      });
    });
  });

  describe("API keys, members and invitations (dashboard GraphQL)", () => {
    const CREATE = `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { api_key { id } } }`;
    const REVOKE = `mutation($id: ID!) { revokeApiKey(id: $id) { id revoked_at } }`;
    const ROTATE = `mutation($id: ID!) { rotateApiKey(id: $id, grace_seconds: 60) { api_key { id } previous { id } } }`;

    it("create, rotate and revoke a key: each change by the owner, with its request", async () => {
      const owner = { type: "user", id: acme.userId, email: acme.email };
      const uaCreate = agentOf("key-create");
      const created = await asOwner(
        acme,
        CREATE,
        { input: { name: "Audited", scopes: ["leads.read"] } },
        uaCreate,
      );
      const keyId = created.data.createApiKey.api_key.id as string;
      expectRecord((await acme.audit(`target_id=${keyId}`))[0], {
        action: "api_key.created",
        actor: owner,
        target: { type: "api_key", id: keyId },
        userAgent: uaCreate,
        requestId: created.requestId,
      });

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
      expectRecord((await acme.audit(`target_id=${successor}`))[0], {
        action: "api_key.created",
        actor: owner,
        target: { type: "api_key", id: successor },
        userAgent: uaRotate,
        requestId: rotated.requestId,
      });

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
      const bad = await asOwner(
        acme,
        CREATE,
        { input: { name: "Bad", scopes: ["leads.read", "everything"] } },
        agentOf("bad"),
      );
      expect(bad.errors?.[0]?.extensions.code).toBe("validation_failed");
      const last = await asOwner(
        acme,
        `mutation($id: ID!) { removeMember(user_id: $id) { user_id } }`,
        { id: acme.userId },
        agentOf("last-owner"),
      );
      expect(last.errors?.[0]?.extensions.code).toBe("invalid_state");
      const same = await asOwner(
        acme,
        `mutation($id: ID!) { updateMember(user_id: $id, role: owner) { role } }`,
        { id: acme.userId },
        agentOf("same-role"),
      );
      expect(same.errors).toBeUndefined();
      expect(await acme.audit()).toEqual(before);
    });

    it("invite, revoke an invitation, accept one, change a role, remove a member", async () => {
      const owned = await ownedWorkspace("members");
      const owner = { type: "user", id: owned.userId, email: owned.email };
      const INVITE = `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { invitation { id } accept_url } }`;
      const inviteeEmail = uniqueEmail("invitee");

      const uaFirst = agentOf("invite-1");
      const first = await asOwner(
        owned,
        INVITE,
        { input: { email: uniqueEmail("never"), role: "member" } },
        uaFirst,
      );
      const firstId = first.data.inviteMember.invitation.id as string;
      expectRecord((await owned.audit(`target_id=${firstId}`))[0], {
        action: "member.invited",
        actor: owner,
        target: { type: "invitation", id: firstId },
        userAgent: uaFirst,
        requestId: first.requestId,
      });
      const uaRevoke = agentOf("invite-revoke");
      const revoked = await asOwner(
        owned,
        `mutation($id: ID!) { revokeInvitation(id: $id) { id } }`,
        { id: firstId },
        uaRevoke,
      );
      expectRecord((await owned.audit(`target_id=${firstId}&action=invitation.revoked`))[0], {
        action: "invitation.revoked",
        actor: owner,
        target: { type: "invitation", id: firstId },
        userAgent: uaRevoke,
        requestId: revoked.requestId,
      });

      const invited = await asOwner(
        owned,
        INVITE,
        { input: { email: inviteeEmail, role: "member" } },
        agentOf("invite-2"),
      );
      const invitationId = invited.data.inviteMember.invitation.id as string;
      const token = new URL(invited.data.inviteMember.accept_url).hash.replace(/^#token=/, "");
      const inviteeWorkspace = await prepare([
        "workspace",
        "create",
        "--name",
        "Invitee's",
        "--plan",
        "free",
        "--owner-email",
        inviteeEmail,
        "--owner-password",
        PASSWORD,
        "--json",
      ]).run(cliContext());
      const inviteeId = (inviteeWorkspace.json as { owner_id: string }).owner_id;
      const invitee = new DashboardClient(server().url);
      await invitee.signIn(inviteeEmail);
      const uaAccept = agentOf("accept");
      const accepted = await invitee.api(
        "POST",
        "/invitations/accept",
        { token },
        { headers: { "user-agent": uaAccept } },
      );
      expect(accepted.status, accepted.text).toBe(200);
      expectRecord((await owned.audit("action=invitation.accepted"))[0], {
        action: "invitation.accepted",
        actor: { type: "user", id: inviteeId, email: inviteeEmail },
        target: { type: "invitation", id: invitationId },
        userAgent: uaAccept,
        requestId: accepted.headers.get("x-request-id")!,
      });

      const uaRole = agentOf("role");
      const promoted = await asOwner(
        owned,
        `mutation($id: ID!) { updateMember(user_id: $id, role: owner) { role } }`,
        { id: inviteeId },
        uaRole,
      );
      expect(promoted.data.updateMember.role).toBe("owner");
      expectRecord((await owned.audit("action=member.role_changed"))[0], {
        action: "member.role_changed",
        actor: owner,
        target: { type: "user", id: inviteeId },
        userAgent: uaRole,
        requestId: promoted.requestId,
      });

      const uaRemove = agentOf("remove");
      const removed = await asOwner(
        owned,
        `mutation($id: ID!) { removeMember(user_id: $id) { user_id } }`,
        { id: inviteeId },
        uaRemove,
      );
      expect(removed.errors).toBeUndefined();
      expectRecord((await owned.audit("action=member.removed"))[0], {
        action: "member.removed",
        actor: owner,
        target: { type: "user", id: inviteeId },
        userAgent: uaRemove,
        requestId: removed.requestId,
      });
    });
  });

  describe("the CLI", () => {
    it("workspace create, keys create and keys revoke are the system's, with no request", async () => {
      const made = await prepare([
        "workspace",
        "create",
        "--name",
        "CLI",
        "--plan",
        "free",
        "--owner-email",
        uniqueEmail("cli"),
        "--json",
      ]).run(cliContext());
      const workspaceId = (made.json as { workspace_id: string }).workspace_id;
      const key = (
        await prepare(["keys", "create", "--workspace", workspaceId, "--scopes", "audit.read", "--json"]).run(
          cliContext(),
        )
      ).json as { id: string; key: string };
      const other = (
        await prepare(["keys", "create", "--workspace", workspaceId, "--scopes", "leads.read", "--json"]).run(
          cliContext(),
        )
      ).json as { id: string };
      await prepare(["keys", "revoke", other.id]).run(cliContext());
      await prepare(["keys", "revoke", other.id]).run(cliContext());
      const records = await reader(key.key)();
      const system = { type: "system", id: null, email: null };
      const bare = { client_ip: null, user_agent: null, request_id: null };
      expect(records).toEqual([
        expect.objectContaining({
          action: "api_key.revoked",
          actor: system,
          target: { type: "api_key", id: other.id },
          ...bare,
        }),
        expect.objectContaining({
          action: "api_key.created",
          actor: system,
          target: { type: "api_key", id: other.id },
          ...bare,
        }),
        expect.objectContaining({
          action: "api_key.created",
          actor: system,
          target: { type: "api_key", id: key.id },
          ...bare,
        }),
        expect.objectContaining({
          action: "workspace.created",
          actor: system,
          target: { type: "workspace", id: workspaceId },
          ...bare,
        }),
      ]);
    });
  });
});
