import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { AGENT_SCOPES, SCOPES } from "../../../schema/lib/scopes.ts";
import { issueAgentToken } from "../../../server/auth/agent-tokens.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import type { Tenant, TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Owners' controls over agents (docs/api/agents.md): agent settings, trusted ID-JAG
 * providers and registrations over /v1 and GraphQL, behind agents.read / agents.write, which agent
 * tokens can never hold; the plan caps on providers at their boundaries.
 */

const NEVER_PROVIDER = "tpr_01J00000000000000000000000";
const NEVER_REGISTRATION = "areg_01J00000000000000000000000";
const ISSUER = (n: number | string) => `https://127.0.0.1:9/idp-${n}`;

async function activeRegistration(
  server: TestServer,
  workspaceId: string,
  overrides: Record<string, unknown> = {},
) {
  return server.running.db.prisma.agentRegistration.create({
    data: {
      id: newId("agentRegistration"),
      workspaceId,
      type: "service_auth",
      status: "active",
      agentName: "Helper bot",
      loginHint: "owner@example.com",
      scopes: ["leads.read", "clients.read"],
      postClaimScopes: ["leads.read", "clients.read"],
      claimedAt: new Date(),
      ...overrides,
    },
  });
}

e2e("agent owner controls", (server) => {
  let tenant: Tenant;
  let admin: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant({ plan: "pro" });
    admin = rest(server().api, tenant.key);
  });

  describe("agent settings", () => {
    it("shows agent auth on, the plan's caps and the counts on pro", async () => {
      const res = await admin.get("/agent-settings");
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        object: "agent_settings",
        agent_auth_enabled: true,
        plan: "pro",
        limits: {
          agent_registrations: 50,
          agent_tokens_per_registration: 10,
          agent_token_lifetime_seconds: 12 * 3600,
          trusted_providers: 3,
        },
        active_registrations: 0,
        trusted_providers: 0,
      });
    });

    it("is off by default on free, and an owner can turn it on (opt-in)", async () => {
      const free = await server().tenant({ plan: "free" });
      const api = rest(server().api, free.key);
      expect((await api.get("/agent-settings")).body).toMatchObject({
        agent_auth_enabled: false,
        limits: { trusted_providers: 0 },
      });
      const on = await api.patch("/agent-settings", { agent_auth_enabled: true });
      expect(on.status).toBe(200);
      expect(on.body.agent_auth_enabled).toBe(true);
      expect((await api.get("/workspace")).body.agent_auth_enabled).toBe(true);
    });

    it("turning it off stops the workspace's agent tokens; on again revives live ones", async () => {
      const own = await server().tenant({ plan: "plus" });
      const api = rest(server().api, own.key);
      const registration = await activeRegistration(server(), own.workspaceId);
      const token = await issueAgentToken(server().running.db.prisma, {
        registrationId: registration.id,
        workspaceId: own.workspaceId,
        scopes: ["leads.read"],
        lifetimeSeconds: 600,
      });
      const asAgent = rest(server().api, token.token);
      expect((await asAgent.get("/leads")).status).toBe(200);

      expect(
        (await api.patch("/agent-settings", { agent_auth_enabled: false })).body.agent_auth_enabled,
      ).toBe(false);
      const refused = await eventually(
        () => asAgent.get("/leads"),
        (res) => res.status === 401,
        8_000,
      );
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe("invalid_token");

      await api.patch("/agent-settings", { agent_auth_enabled: true });
      const back = await eventually(
        () => asAgent.get("/leads"),
        (res) => res.status === 200,
        8_000,
      );
      expect(back.status).toBe(200);
    });

    it("an empty PATCH changes nothing; null is refused", async () => {
      expect((await admin.patch("/agent-settings", {})).body.agent_auth_enabled).toBe(true);
      const res = await admin.patch("/agent-settings", { agent_auth_enabled: null });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param: "agent_auth_enabled" });
      const wrongType = await admin.patch("/agent-settings", { agent_auth_enabled: "no" });
      expect(wrongType.status).toBe(400);
      expect((await admin.get("/agent-settings")).body.agent_auth_enabled).toBe(true);
    });

    it("works through GraphQL", async () => {
      const own = await server().tenant({ plan: "max" });
      const gql = graphql(server().url, own.key);
      const off = await gql(
        `mutation { updateAgentSettings(agent_auth_enabled: false) { object agent_auth_enabled plan limits { trusted_providers } } }`,
      );
      expect(off.errors).toBeUndefined();
      expect(off.data.updateAgentSettings).toEqual({
        object: "agent_settings",
        agent_auth_enabled: false,
        plan: "max",
        limits: { trusted_providers: 10 },
      });
      const read = await gql(
        `{ agentSettings { agent_auth_enabled active_registrations } workspace { agent_auth_enabled } }`,
      );
      expect(read.data).toEqual({
        agentSettings: { agent_auth_enabled: false, active_registrations: 0 },
        workspace: { agent_auth_enabled: false },
      });
    });
  });

  describe("scopes", () => {
    it("reading needs agents.read, changing needs agents.write (neither stands in for the other)", async () => {
      const everythingElse = SCOPES.filter((s) => !s.startsWith("agents."));
      const none = rest(server().api, (await server().key(tenant.workspaceId, everythingElse)).key);
      const readOnly = rest(server().api, (await server().key(tenant.workspaceId, ["agents.read"])).key);
      const writeOnly = rest(server().api, (await server().key(tenant.workspaceId, ["agents.write"])).key);

      for (const [client, method, path, body, scope] of [
        [none, "GET", "/agent-settings", undefined, "agents.read"],
        [none, "GET", "/trusted-providers", undefined, "agents.read"],
        [none, "GET", "/agent-registrations", undefined, "agents.read"],
        [writeOnly, "GET", "/agent-registrations", undefined, "agents.read"],
        [readOnly, "PATCH", "/agent-settings", { agent_auth_enabled: false }, "agents.write"],
        [
          readOnly,
          "POST",
          "/trusted-providers",
          { issuer: ISSUER("scoped"), jwks_url: `${ISSUER("scoped")}/jwks` },
          "agents.write",
        ],
        [readOnly, "DELETE", `/trusted-providers/${NEVER_PROVIDER}`, undefined, "agents.write"],
        [readOnly, "POST", `/agent-registrations/${NEVER_REGISTRATION}/revoke`, undefined, "agents.write"],
      ] as const) {
        const res = await (method === "GET"
          ? client.get(path)
          : method === "PATCH"
            ? client.patch(path, body)
            : method === "POST"
              ? client.post(path, body)
              : client.delete(path));
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.error).toMatchObject({
          type: "permission_error",
          code: "insufficient_scope",
          required_scope: scope,
        });
      }
      expect((await readOnly.get("/agent-settings")).status).toBe(200);
      expect((await admin.get("/agent-settings")).body.agent_auth_enabled).toBe(true);
      expect((await admin.get("/trusted-providers")).body.data).toEqual([]);
    });

    it("an agent token never reaches the owners' controls, even when agents.* was written into it", async () => {
      const registration = await activeRegistration(server(), tenant.workspaceId);
      const token = await issueAgentToken(server().running.db.prisma, {
        registrationId: registration.id,
        workspaceId: tenant.workspaceId,
        scopes: [...SCOPES],
        lifetimeSeconds: 600,
      });
      const asAgent = rest(server().api, token.token);
      expect((await asAgent.get("/leads")).status).toBe(200);
      for (const res of [await asAgent.get("/agent-settings"), await asAgent.get("/agent-registrations")]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "agents.read" });
      }
      const revoke = await asAgent.post(`/agent-registrations/${registration.id}/revoke`);
      expect(revoke.status).toBe(403);
      expect(revoke.body.error.required_scope).toBe("agents.write");
      const gql = await graphql(server().url, token.token)(`{ agentSettings { agent_auth_enabled } }`);
      expect(gql.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "agents.read",
      });
      expect(AGENT_SCOPES.some((s) => s.startsWith("agents."))).toBe(false);
    });
  });

  describe("trusted providers", () => {
    it("free allows none: the first is refused with plan_limit_reached", async () => {
      const free = rest(server().api, (await server().tenant({ plan: "free" })).key);
      const res = await free.post("/trusted-providers", {
        issuer: ISSUER("free"),
        jwks_url: `${ISSUER("free")}/jwks`,
      });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ type: "permission_error", code: "plan_limit_reached" });
      expect((await free.get("/trusted-providers")).body.data).toEqual([]);
    });

    it("plus allows exactly one; deleting it makes room again", async () => {
      const plus = rest(server().api, (await server().tenant({ plan: "plus" })).key);
      expect(PLAN_LIMITS.plus.trusted_providers).toBe(1);
      const first = await plus.post("/trusted-providers", {
        issuer: ISSUER("plus-1"),
        jwks_url: `${ISSUER("plus-1")}/.well-known/jwks.json`,
        max_auth_age: 600,
      });
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        object: "trusted_provider",
        id: expect.stringMatching(/^tpr_[0-9A-HJKMNP-TV-Z]{26}$/),
        issuer: ISSUER("plus-1"),
        jwks_url: `${ISSUER("plus-1")}/.well-known/jwks.json`,
        max_auth_age: 600,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const second = await plus.post("/trusted-providers", {
        issuer: ISSUER("plus-2"),
        jwks_url: `${ISSUER("plus-2")}/jwks`,
      });
      expect(second.status).toBe(403);
      expect(second.body.error.code).toBe("plan_limit_reached");

      const deleted = await plus.delete(`/trusted-providers/${first.body.id}`);
      expect(deleted.body).toEqual({ id: first.body.id, object: "trusted_provider", deleted: true });
      expect((await plus.get(`/trusted-providers/${first.body.id}`)).status).toBe(404);
      expect(
        (
          await plus.post("/trusted-providers", {
            issuer: ISSUER("plus-2"),
            jwks_url: `${ISSUER("plus-2")}/jwks`,
          })
        ).status,
      ).toBe(201);
    });

    it("pro allows three, the fourth is refused; list and retrieve stay within the workspace", async () => {
      const own = await server().tenant({ plan: "pro" });
      const api = rest(server().api, own.key);
      const ids: string[] = [];
      for (let n = 1; n <= PLAN_LIMITS.pro.trusted_providers; n++) {
        const res = await api.post("/trusted-providers", {
          issuer: ISSUER(`pro-${n}`),
          jwks_url: `${ISSUER(`pro-${n}`)}/jwks`,
        });
        expect(res.status).toBe(201);
        ids.push(res.body.id);
      }
      const over = await api.post("/trusted-providers", {
        issuer: ISSUER("pro-4"),
        jwks_url: `${ISSUER("pro-4")}/jwks`,
      });
      expect(over.status).toBe(403);
      expect(over.body.error.code).toBe("plan_limit_reached");

      const list = await api.get("/trusted-providers?limit=2");
      expect(list.body).toMatchObject({ object: "list", has_more: true });
      expect(list.body.data.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1]]);
      expect((await api.get(`/trusted-providers/${ids[0]}`)).body.issuer).toBe(ISSUER("pro-1"));
      expect((await api.get("/agent-settings")).body.trusted_providers).toBe(3);

      // Another workspace sees none of them and cannot delete them.
      expect((await admin.get(`/trusted-providers/${ids[0]}`)).status).toBe(404);
      const foreignDelete = await admin.delete(`/trusted-providers/${ids[0]}`);
      expect(foreignDelete.status).toBe(404);
      expect(foreignDelete.body.error).toMatchObject({ code: "not_found", param: "id" });
      expect((await api.get(`/trusted-providers/${ids[0]}`)).status).toBe(200);
    });

    it.each([
      ["an ftp issuer", { issuer: "ftp://idp.example.com", jwks_url: "https://127.0.0.1:9/jwks" }, "issuer"],
      [
        "an http issuer off loopback",
        { issuer: "http://idp.example.com", jwks_url: "https://127.0.0.1:9/jwks" },
        "issuer",
      ],
      [
        "an http JWKS URL off loopback",
        { issuer: "https://127.0.0.1:9/idp", jwks_url: "http://idp.example.com/jwks" },
        "jwks_url",
      ],
      ["a relative JWKS URL", { issuer: "https://127.0.0.1:9/idp", jwks_url: "/jwks" }, "jwks_url"],
      [
        "credentials in the JWKS URL",
        { issuer: "https://127.0.0.1:9/idp", jwks_url: "https://user:pw@idp.example.com/jwks" },
        "jwks_url",
      ],
      [
        "a link-local JWKS URL",
        { issuer: "https://127.0.0.1:9/idp", jwks_url: "https://169.254.169.254/jwks" },
        "jwks_url",
      ],
      [
        "max_auth_age 0",
        { issuer: "https://127.0.0.1:9/idp", jwks_url: "https://127.0.0.1:9/jwks", max_auth_age: 0 },
        "max_auth_age",
      ],
      ["a missing issuer", { jwks_url: "https://127.0.0.1:9/jwks" }, "issuer"],
    ])("refuses %s with validation_failed", async (_label, body, param) => {
      const res = await admin.post("/trusted-providers", body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "validation_failed",
        param,
      });
      expect((await admin.get("/trusted-providers")).body.data).toEqual([]);
    });

    it("accepts loopback http outside production, and refuses the same issuer twice", async () => {
      const own = rest(server().api, (await server().tenant({ plan: "max" })).key);
      const body = { issuer: "http://127.0.0.1:9/idp", jwks_url: "http://localhost:9/jwks" };
      expect((await own.post("/trusted-providers", body)).status).toBe(201);
      const again = await own.post("/trusted-providers", body);
      expect(again.status).toBe(400);
      expect(again.body.error).toMatchObject({ code: "validation_failed", param: "issuer" });
      expect((await own.get("/trusted-providers")).body.data).toHaveLength(1);
    });

    it("unknown ids are not_found", async () => {
      for (const res of [
        await admin.get(`/trusted-providers/${NEVER_PROVIDER}`),
        await admin.delete(`/trusted-providers/${NEVER_PROVIDER}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe("not_found");
      }
    });

    it("works through GraphQL, with the cap as a plan_limit_reached error", async () => {
      const plus = await server().tenant({ plan: "plus" });
      const gql = graphql(server().url, plus.key);
      const create = `mutation($issuer: String!) { createTrustedProvider(issuer: $issuer, jwks_url: "https://127.0.0.1:9/jwks") { id issuer max_auth_age } }`;
      const first = await gql(create, { issuer: ISSUER("gql-1") });
      expect(first.errors).toBeUndefined();
      expect(first.data.createTrustedProvider).toMatchObject({ issuer: ISSUER("gql-1"), max_auth_age: null });
      const second = await gql(create, { issuer: ISSUER("gql-2") });
      expect(second.errors?.[0]?.extensions).toMatchObject({
        code: "plan_limit_reached",
        type: "permission_error",
      });
      const list = await gql(`{ trustedProviders { data { id } } }`);
      expect(list.data.trustedProviders.data).toEqual([{ id: first.data.createTrustedProvider.id }]);
      const removed = await gql(`mutation($id: ID!) { deleteTrustedProvider(id: $id) { deleted } }`, {
        id: first.data.createTrustedProvider.id,
      });
      expect(removed.data.deleteTrustedProvider.deleted).toBe(true);
    });
  });

  describe("registrations", () => {
    it("lists the workspace's agents with scopes, live tokens and last use, and retrieves one", async () => {
      const own = await server().tenant({ plan: "pro" });
      const api = rest(server().api, own.key);
      const prisma = server().running.db.prisma;
      const idle = await activeRegistration(server(), own.workspaceId, { agentName: "Idle bot" });
      const busy = await activeRegistration(server(), own.workspaceId, {
        agentName: "Busy bot",
        scopes: ["leads.read"],
      });
      await activeRegistration(server(), tenant.workspaceId, { agentName: "Someone else's bot" });
      const tokens = [];
      for (let i = 0; i < 2; i++) {
        tokens.push(
          await issueAgentToken(prisma, {
            registrationId: busy.id,
            workspaceId: own.workspaceId,
            scopes: ["leads.read"],
            lifetimeSeconds: 600,
          }),
        );
      }
      const expired = await issueAgentToken(prisma, {
        registrationId: busy.id,
        workspaceId: own.workspaceId,
        scopes: ["leads.read"],
        lifetimeSeconds: 600,
      });
      await prisma.agentToken.update({
        where: { id: expired.id },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      expect((await rest(server().api, tokens[0]!.token).get("/leads")).status).toBe(200);

      const list = await eventually(
        () => api.get("/agent-registrations"),
        (res) => res.body.data?.[0]?.last_used_at !== null,
        8_000,
      );
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
      expect(list.body.data).toEqual([
        {
          object: "agent_registration",
          id: busy.id,
          type: "service_auth",
          status: "active",
          agent_name: "Busy bot",
          login_hint: "owner@example.com",
          scopes: ["leads.read"],
          provider_issuer: null,
          provider_subject: null,
          live_tokens: 2,
          last_used_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
          claimed_at: expect.any(String),
          revoked_at: null,
          created_at: expect.any(String),
        },
        expect.objectContaining({ id: idle.id, agent_name: "Idle bot", live_tokens: 0, last_used_at: null }),
      ]);
      expect((await api.get(`/agent-registrations/${idle.id}`)).body).toMatchObject({
        id: idle.id,
        status: "active",
      });
      expect((await api.get("/agent-settings")).body.active_registrations).toBe(2);
      expect((await api.get("/agent-registrations?status=revoked")).body.data).toEqual([]);
      const bad = await api.get("/agent-registrations?status=asleep");
      expect(bad.status).toBe(400);
    });

    it("revoking kills every token of the agent at once and is idempotent", async () => {
      const own = await server().tenant({ plan: "pro" });
      const api = rest(server().api, own.key);
      const prisma = server().running.db.prisma;
      const registration = await activeRegistration(server(), own.workspaceId);
      const tokens = [];
      for (let i = 0; i < 2; i++) {
        tokens.push(
          await issueAgentToken(prisma, {
            registrationId: registration.id,
            workspaceId: own.workspaceId,
            scopes: ["leads.read"],
            lifetimeSeconds: 600,
          }),
        );
      }
      for (const token of tokens)
        expect((await rest(server().api, token.token).get("/leads")).status).toBe(200);

      const revoked = await api.post(`/agent-registrations/${registration.id}/revoke`);
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({
        id: registration.id,
        status: "revoked",
        live_tokens: 0,
        revoked_at: expect.any(String),
      });
      for (const token of tokens) {
        const res = await eventually(
          () => rest(server().api, token.token).get("/leads"),
          (r) => r.status === 401,
          8_000,
        );
        expect(res.body.error.code).toBe("invalid_token");
      }
      const again = await api.post(`/agent-registrations/${registration.id}/revoke`);
      expect(again.status).toBe(200);
      expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
      expect(
        (await api.get("/agent-registrations?status=revoked")).body.data.map((r: { id: string }) => r.id),
      ).toEqual([registration.id]);
      expect((await api.get("/agent-settings")).body.active_registrations).toBe(0);
    });

    it("another workspace's registration and unknown ids are not_found", async () => {
      const own = await server().tenant({ plan: "pro" });
      const foreign = await activeRegistration(server(), own.workspaceId);
      for (const res of [
        await admin.get(`/agent-registrations/${foreign.id}`),
        await admin.post(`/agent-registrations/${foreign.id}/revoke`),
        await admin.get(`/agent-registrations/${NEVER_REGISTRATION}`),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ code: "not_found", param: "id" });
      }
      const row = await server().running.db.prisma.agentRegistration.findUniqueOrThrow({
        where: { id: foreign.id },
      });
      expect(row.status).toBe("active");
    });

    it("works through GraphQL", async () => {
      const own = await server().tenant({ plan: "pro" });
      const gql = graphql(server().url, own.key);
      const registration = await activeRegistration(server(), own.workspaceId, { agentName: "Graph bot" });
      const list = await gql(
        `{ agentRegistrations(status: active) { data { id agent_name status live_tokens } } }`,
      );
      expect(list.data.agentRegistrations.data).toEqual([
        { id: registration.id, agent_name: "Graph bot", status: "active", live_tokens: 0 },
      ]);
      const revoke = await gql(`mutation($id: ID!) { revokeAgentRegistration(id: $id) { status } }`, {
        id: registration.id,
      });
      expect(revoke.data.revokeAgentRegistration.status).toBe("revoked");
      const missing = await gql(`{ agentRegistration(id: "${NEVER_REGISTRATION}") { id } }`);
      expect(missing.errors?.[0]?.extensions.code).toBe("not_found");
    });
  });

  it("REST answers are checked against the OpenAPI document, including plan_limit_reached", async () => {
    const free = await server().tenant({ plan: "free" });
    const res = await call("POST", `${server().api}/trusted-providers`, {
      key: free.key,
      body: { issuer: ISSUER("doc"), jwks_url: `${ISSUER("doc")}/jwks` },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("x-request-id")).toBe(res.body.error.request_id);
  });
});
