import { beforeAll, describe, expect, it } from "vitest";
import { schema } from "../../../schema/index.ts";
import { AUDIT_RETENTION_DAYS } from "../../../schema/lib/audit.ts";
import { newId } from "../../../schema/lib/ids.ts";
import { sweepExpiredAuditEvents } from "../../../server/audit/sweep.ts";
import { prepare } from "../../../server/control/commands.ts";
import {
  granted,
  identity,
  JWT_BEARER_GRANT_TYPE,
  registerAnonymous,
  tokenClient,
} from "../../support/agent-flow.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { call, rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { type AuditRecord, auditHelpers, DAY_MS, type Owned, uniqueEmail } from "./support.ts";

e2e("audit log: reading and retention", (server) => {
  const { db, ownedWorkspace, cliContext, asOwner } = auditHelpers(server);

  let acme: Owned;
  beforeAll(async () => {
    acme = await ownedWorkspace("acme");
  });

  describe("reading", () => {
    let owned: Owned;
    let keyIds: string[];
    beforeAll(async () => {
      owned = await ownedWorkspace("reading");
      keyIds = [];
      for (let i = 0; i < 5; i++) {
        const made = await asOwner(
          owned,
          `mutation { createApiKey(input: { name: "k${i}", scopes: ["leads.read"] }) { api_key { id } } }`,
          {},
          "audit-test/reading",
        );
        keyIds.push(made.data.createApiKey.api_key.id);
      }
      await asOwner(
        owned,
        `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`,
        { id: keyIds[0] },
        "audit-test/reading",
      );
    });

    it("pages newest first with limit and cursor, and retrieves one by id over REST and GraphQL", async () => {
      const all = await owned.audit();
      expect(all.map((r) => r.action)).toEqual([
        "api_key.revoked",
        ...Array(5).fill("api_key.created"),
        "session.signed_in",
        "workspace.created",
      ]);
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
        body: JSON.stringify({
          query: `query($id: ID!) { auditEvent(id: $id) { id action actor { type id email } target { type id } } auditEvents(limit: 2) { data { id } has_more } }`,
          variables: { id: all[0]!.id },
        }),
      });
      const body = (await gql.json()) as any;
      expect(body.errors).toBeUndefined();
      expect(body.data.auditEvent).toEqual({
        id: all[0]!.id,
        action: all[0]!.action,
        actor: all[0]!.actor,
        target: all[0]!.target,
      });
      expect(body.data.auditEvents).toEqual({
        data: [{ id: all[0]!.id }, { id: all[1]!.id }],
        has_more: true,
      });
    });

    it("filters by action, actor_id, target_id and a time range", async () => {
      const all = await owned.audit();
      expect((await owned.audit("action=api_key.created")).map((r) => r.id)).toEqual(
        all.filter((r) => r.action === "api_key.created").map((r) => r.id),
      );
      expect((await owned.audit(`actor_id=${owned.userId}`)).map((r) => r.id)).toEqual(
        all.filter((r) => r.actor.id === owned.userId).map((r) => r.id),
      );
      expect((await owned.audit(`target_id=${keyIds[0]}`)).map((r) => r.action)).toEqual([
        "api_key.revoked",
        "api_key.created",
      ]);
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
      expect(((await gql.json()) as any).errors[0].extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "audit.read",
      });
    });

    it("an owner's session reads it; a member's session gets 403", async () => {
      const owner = await acme.dashboard.v1("GET", "/audit-events?limit=1");
      expect(owner.status).toBe(200);
      const memberEmail = uniqueEmail("member");
      const made = await prepare([
        "workspace",
        "create",
        "--name",
        "Member's",
        "--plan",
        "free",
        "--owner-email",
        memberEmail,
        "--owner-password",
        PASSWORD,
        "--json",
      ]).run(cliContext());
      await db().membership.create({
        data: {
          workspaceId: acme.workspaceId,
          userId: (made.json as { owner_id: string }).owner_id,
          role: "member",
        },
      });
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
      const tokens = granted(
        await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
      );
      const res = await rest(server().api, tokens.access_token).get("/audit-events");
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "audit.read" });

      // Asking for it at registration or at the token endpoint is refused.
      const asked = await identity(server(), {
        type: "service_auth",
        login_hint: acme.email,
        agent_name: "Greedy",
        scope: "leads.read audit.read",
      });
      expect(asked.status).toBe(400);
      expect(asked.json.error).toBe("invalid_request");
      const narrowed = await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, {
        assertion: agent.identity_assertion,
        scope: "audit.read",
      });
      expect(narrowed.ok).toBe(false);

      // Even a token row that says audit.read does not carry it.
      const fresh = granted(
        await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
      );
      await db().agentToken.updateMany({
        where: { registrationId: agent.registration_id, revokedAt: null },
        data: { scopes: { push: "audit.read" } },
      });
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
