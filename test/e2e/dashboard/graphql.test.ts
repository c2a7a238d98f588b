import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import { MAX_LIVE_API_KEYS } from "../../../schema/lib/api-key-secret.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { eventually } from "../../support/agent-flow.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { graphql } from "../../support/graphql.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";

const unique = (label: string) => `${label}-${randomBytes(4).toString("hex")}@example.com`;

interface Person {
  email: string;
  userId: string;
  workspaceId: string;
  dashboard: DashboardClient;
}

const API_KEY_FIELDS = "object id name prefix scopes created_at last_used_at revoked_at";
const codeOf = (answer: { json: { errors?: { extensions: Record<string, any> }[] } }) =>
  answer.json.errors?.[0]?.extensions.code;

e2e("dashboard GraphQL", (server) => {
  const db = (): PrismaClient => server().running.db.prisma;

  /** A user who owns a new workspace, signed in to the dashboard. */
  async function owner(name = "Owner Co", plan: "free" | "pro" = "pro"): Promise<Person> {
    const email = unique("owner");
    const created = await createWorkspace(db(), { name, plan, ownerEmail: email, ownerPassword: PASSWORD });
    const dashboard = new DashboardClient(server().url);
    const signedIn = await dashboard.signIn(email);
    expect(signedIn.status, signedIn.text).toBe(200);
    return { email, userId: created.owner_id, workspaceId: created.workspace_id, dashboard };
  }

  /** `person` made a member (or owner) of `workspaceId` directly. */
  async function join(person: Person, workspaceId: string, role: "owner" | "member") {
    await db().membership.create({ data: { workspaceId, userId: person.userId, role } });
  }

  let alice: Person;
  /** Bob owns his own workspace and is a member of Alice's. */
  let bob: Person;

  beforeAll(async () => {
    alice = await owner("Alice Co");
    bob = await owner("Bob Co", "free");
    await join(bob, alice.workspaceId, "member");
  });

  describe("the session credential", () => {
    it("viewer: the user, the workspace of the request and every membership, oldest first", async () => {
      const answer = await bob.dashboard.graphql(
        `{ viewer { user { id email created_at } role workspace { id name plan } workspaces { id name plan role } } }`,
      );
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({
        data: {
          viewer: {
            user: { id: bob.userId, email: bob.email, created_at: expect.any(String) },
            role: "owner",
            workspace: { id: bob.workspaceId, name: "Bob Co", plan: "free" },
            workspaces: [
              { id: bob.workspaceId, name: "Bob Co", plan: "free", role: "owner" },
              { id: alice.workspaceId, name: "Alice Co", plan: "pro", role: "member" },
            ],
          },
        },
      });
    });

    it("Kontor-Workspace switches the workspace; one the user is not a member of is 403 not_a_member", async () => {
      const query = `{ viewer { role workspace { id } } workspace { id } }`;
      const inAlice = await bob.dashboard.graphql(query, undefined, {
        headers: { "kontor-workspace": alice.workspaceId },
      });
      expect(inAlice.json.data).toEqual({
        viewer: { role: "member", workspace: { id: alice.workspaceId } },
        workspace: { id: alice.workspaceId },
      });
      const stranger = await owner("Stranger Co");
      for (const header of [stranger.workspaceId, "ws_nope", "x".repeat(500)]) {
        const refused = await bob.dashboard.graphql(query, undefined, {
          headers: { "kontor-workspace": header },
        });
        expect(refused.status).toBe(403);
        expect(refused.json.errors?.[0]?.extensions).toMatchObject({
          code: "not_a_member",
          type: "permission_error",
        });
        expect(refused.json.data).toBeUndefined();
      }
      const rest = await bob.dashboard.v1("GET", "/workspace", undefined, {
        headers: { "kontor-workspace": stranger.workspaceId },
      });
      expect(rest.status).toBe(403);
      expect(rest.json.error).toMatchObject({ type: "permission_error", code: "not_a_member" });
    });

    it("needs X-CSRF-Token on every method, GraphQL and /v1 alike: missing or wrong is 403 csrf_failed", async () => {
      const query = "{ workspace { id } }";
      for (const csrf of [null, "wrong", `${alice.dashboard.csrf}x`]) {
        const post = await alice.dashboard.graphql(query, undefined, { csrf });
        expect(post.status).toBe(403);
        expect(post.json.errors?.[0]?.extensions).toMatchObject({
          code: "csrf_failed",
          type: "permission_error",
        });
      }
      const cookie = { cookie: alice.dashboard.cookieHeader() };
      const get = await fetch(`${server().url}/graphql?query=${encodeURIComponent(query)}`, {
        headers: { ...cookie, accept: "application/json" },
      });
      expect(get.status).toBe(403);
      const getWithToken = await fetch(`${server().url}/graphql?query=${encodeURIComponent(query)}`, {
        headers: { ...cookie, accept: "application/json", "x-csrf-token": alice.dashboard.csrf },
      });
      expect(getWithToken.status).toBe(200);
      expect(((await getWithToken.json()) as { data: unknown }).data).toEqual({
        workspace: { id: alice.workspaceId },
      });

      const v1 = await alice.dashboard.v1("GET", "/workspace", undefined, { csrf: null });
      expect(v1.status).toBe(403);
      expect(v1.json.error).toMatchObject({ type: "permission_error", code: "csrf_failed" });
      const ok = await alice.dashboard.v1("GET", "/workspace");
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({ id: alice.workspaceId });
    });

    it("an unknown session cookie is 401 session_expired, with the Bearer challenge", async () => {
      const answer = await raw(`${server().api}/workspace`, {
        headers: { cookie: "kontor_session=forged", "x-csrf-token": "x" },
      });
      expect(answer.status).toBe(401);
      expect(answer.json.error).toMatchObject({ type: "authentication_error", code: "session_expired" });
      expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata=/);
    });

    it("a Bearer credential wins over the cookie (and needs no CSRF token); key-only fields refuse other credentials", async () => {
      const key = await createApiKey(db(), { workspaceId: bob.workspaceId, scopes: [...SCOPES] });
      const both = (query: string) =>
        fetch(`${server().url}/graphql`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${key.key}`,
            cookie: alice.dashboard.cookieHeader(),
            "content-type": "application/json",
          },
          body: JSON.stringify({ query }),
        }).then(
          (response) =>
            response.json() as Promise<{
              data: any;
              errors?: { path: string[]; extensions: Record<string, string> }[];
            }>,
        );
      expect(await both("{ workspace { id } }")).toEqual({ data: { workspace: { id: bob.workspaceId } } });
      const viewer = await both("{ viewer { role } }");
      expect(viewer.errors).toEqual([
        expect.objectContaining({
          path: ["viewer"],
          extensions: expect.objectContaining({ code: "session_required", type: "permission_error" }),
        }),
      ]);
      const asKey = graphql(server().url, key.key);
      for (const query of [
        "{ apiKeys { data { id } } }",
        "{ members { user_id } }",
        "{ invitations { id } }",
        'mutation { createApiKey(input: { name: "x", scopes: ["leads.read"] }) { secret } }',
        `mutation { revokeApiKey(id: "${key.id}") { id } }`,
      ]) {
        const refused = await asKey(query);
        expect(refused.errors?.[0]?.extensions, query).toMatchObject({ code: "session_required" });
      }
      expect((await db().apiKey.findUniqueOrThrow({ where: { id: key.id } })).revokedAt).toBeNull();
    });

    it("sessions are rate limited per user at the workspace's plan, and never written to the request log", async () => {
      const person = await owner("Quiet Co", "free");
      const first = await person.dashboard.graphql("{ workspace { id } }");
      expect(first.headers.get("x-ratelimit-plan")).toBe("free");
      expect(first.headers.get("x-ratelimit-limit")).toBe("120");
      const second = await person.dashboard.v1("GET", "/leads");
      expect(second.status).toBe(200);
      expect(Number(second.headers.get("x-ratelimit-remaining"))).toBe(
        Number(first.headers.get("x-ratelimit-remaining")) - 1,
      );
      const key = await createApiKey(db(), { workspaceId: person.workspaceId, scopes: ["leads.read"] });
      expect(
        (await raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${key.key}` } })).status,
      ).toBe(200);
      await flushRequestLogs(server().running.db);
      const logged = await db().requestLog.findMany({ where: { workspaceId: person.workspaceId } });
      expect(logged.map((row) => row.credentialId)).toEqual([key.id]);
      expect(await db().requestLog.count({ where: { credentialId: person.userId } })).toBe(0);
    });

    it("an Idempotency-Key replays a session's mutation instead of running it twice", async () => {
      const mutation = `mutation { createLead(first_name: "Ada", last_name: "Idem") { id } }`;
      const headers = { "idempotency-key": `dash-${randomBytes(4).toString("hex")}` };
      const first = await alice.dashboard.graphql(mutation, undefined, { headers });
      const second = await alice.dashboard.graphql(mutation, undefined, { headers });
      expect(second.headers.get("idempotent-replay")).toBe("true");
      expect(second.json).toEqual(first.json);
      expect(await db().lead.count({ where: { workspaceId: alice.workspaceId, lastName: "Idem" } })).toBe(1);
    });
  });

  describe("roles", () => {
    const memberRefusals: [string, string][] = [
      ["apiKeys", "{ apiKeys { data { id } } }"],
      ["invitations", "{ invitations { id } }"],
      ["createApiKey", 'mutation { createApiKey(input: { name: "m", scopes: ["leads.read"] }) { secret } }'],
      ["revokeApiKey", 'mutation { revokeApiKey(id: "key_01JAAAAAAAAAAAAAAAAAAAAAAA") { id } }'],
      ["rotateApiKey", 'mutation { rotateApiKey(id: "key_01JAAAAAAAAAAAAAAAAAAAAAAA") { secret } }'],
      [
        "inviteMember",
        'mutation { inviteMember(input: { email: "x@example.com", role: member }) { accept_url } }',
      ],
      ["revokeInvitation", 'mutation { revokeInvitation(id: "invt_01JAAAAAAAAAAAAAAAAAAAAAAA") { id } }'],
      [
        "updateMember",
        'mutation { updateMember(user_id: "usr_01JAAAAAAAAAAAAAAAAAAAAAAA", role: owner) { role } }',
      ],
      ["removeMember", 'mutation { removeMember(user_id: "usr_01JAAAAAAAAAAAAAAAAAAAAAAA") { role } }'],
      [
        "createWebhookEndpoint",
        'mutation { createWebhookEndpoint(url: "http://127.0.0.1:9/hook", events: ["lead.created"]) { id } }',
      ],
      [
        "updateAgentSettings",
        "mutation { updateAgentSettings(agent_auth_enabled: false) { agent_auth_enabled } }",
      ],
    ];

    it.each(memberRefusals)(
      "a member is refused %s with owner_required (required_role owner); nothing is written",
      async (_name, query) => {
        const leadsBefore = await db().lead.count({ where: { workspaceId: alice.workspaceId } });
        const answer = await bob.dashboard.graphql(query, undefined, {
          headers: { "kontor-workspace": alice.workspaceId },
        });
        expect(answer.json.errors?.[0]?.extensions).toMatchObject({
          code: "owner_required",
          type: "permission_error",
          required_role: "owner",
        });
        expect(await db().lead.count({ where: { workspaceId: alice.workspaceId } })).toBe(leadsBefore);
        expect(
          (await db().workspace.findUniqueOrThrow({ where: { id: alice.workspaceId } })).agentAuthEnabled,
        ).toBe(true);
      },
    );

    it("a member reads everything but the audit log and writes the business data; on /v1 a webhook endpoint is 403 owner_required", async () => {
      const headers = { "kontor-workspace": alice.workspaceId };
      const read = await bob.dashboard.graphql(
        "{ members { user_id email role created_at } leads { data { id } } requestLogStats(days: 1) { total } }",
        undefined,
        { headers },
      );
      expect(read.json.errors).toBeUndefined();
      expect(read.json.data.members).toEqual([
        { user_id: alice.userId, email: alice.email, role: "owner", created_at: expect.any(String) },
        { user_id: bob.userId, email: bob.email, role: "member", created_at: expect.any(String) },
      ]);
      bob.dashboard.workspace = alice.workspaceId;
      try {
        expect((await bob.dashboard.v1("GET", "/leads")).status).toBe(200);
        const lead = await bob.dashboard.v1("POST", "/leads", { first_name: "By a member" });
        expect(lead.status).toBe(201);
        const client = await bob.dashboard.v1("POST", `/leads/${lead.json.id}/convert`, {});
        expect(client.status, JSON.stringify(client.json)).toBe(200);
        expect(client.json.client_id).toMatch(/^cli_/);
        const bucket = await bob.dashboard.v1("POST", "/buckets", { name: "member-bucket" });
        expect(bucket.status).toBe(201);
        expect((await bob.dashboard.v1("DELETE", `/buckets/${bucket.json.id}`)).status).toBe(200);
        const hooks = await db().webhookEndpoint.count({ where: { workspaceId: alice.workspaceId } });
        const endpoint = await bob.dashboard.v1("POST", "/webhook-endpoints", {
          url: "http://127.0.0.1:9/hook",
          events: ["lead.created"],
        });
        expect(endpoint.status).toBe(403);
        expect(endpoint.json.error).toMatchObject({
          type: "permission_error",
          code: "owner_required",
          required_role: "owner",
        });
        expect(await db().webhookEndpoint.count({ where: { workspaceId: alice.workspaceId } })).toBe(hooks);
        const audit = await bob.dashboard.v1("GET", "/audit-events");
        expect(audit.json.error).toMatchObject({ code: "owner_required" });
      } finally {
        bob.dashboard.workspace = undefined;
      }
    });
  });

  describe("API keys", () => {
    it("create shows the secret once; the key works on /v1; lists never show it; last_used_at follows its use", async () => {
      const created = await alice.dashboard.graphql(
        `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret api_key { ${API_KEY_FIELDS} } } }`,
        { input: { name: "CI deploys", scopes: ["leads.read", "leads.write", "leads.read"] } },
      );
      expect(created.json.errors).toBeUndefined();
      const { secret, api_key } = created.json.data.createApiKey;
      expect(secret).toMatch(/^ktr_live_[0-9A-Za-z]{43}$/);
      expect(api_key).toEqual({
        object: "api_key",
        id: expect.stringMatching(/^key_/),
        name: "CI deploys",
        prefix: secret.slice(0, 13),
        scopes: ["leads.read", "leads.write"],
        created_at: expect.any(String),
        last_used_at: null,
        revoked_at: null,
      });
      const listed = await alice.dashboard.graphql(
        `{ apiKeys(include_revoked: true, limit: 100) { object has_more data { ${API_KEY_FIELDS} } } }`,
      );
      expect(JSON.stringify(listed.json)).not.toContain(secret);
      expect(listed.json.data.apiKeys.data[0]).toEqual(api_key);

      expect(
        (await raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${secret}` } })).status,
      ).toBe(200);
      const used = await eventually(
        () => alice.dashboard.graphql(`{ apiKeys { data { id last_used_at } } }`),
        (answer) =>
          answer.json.data.apiKeys.data.find((k: { id: string }) => k.id === api_key.id)?.last_used_at !==
          null,
        5_000,
      );
      const usedAt = used.json.data.apiKeys.data.find(
        (k: { id: string }) => k.id === api_key.id,
      ).last_used_at;
      expect(Date.parse(usedAt)).toBeGreaterThanOrEqual(Date.parse(api_key.created_at));
    });

    it("revoke: the key fails against /v1 within 5 seconds, and is listed only with include_revoked", async () => {
      const created = await alice.dashboard.graphql(
        `mutation { createApiKey(input: { name: "short-lived", scopes: ["leads.read"] }) { secret api_key { id } } }`,
      );
      const { secret, api_key } = created.json.data.createApiKey;
      const call = () => raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${secret}` } });
      expect((await call()).status).toBe(200);
      const revoked = await alice.dashboard.graphql(
        `mutation($id: ID!) { revokeApiKey(id: $id) { id revoked_at } }`,
        { id: api_key.id },
      );
      expect(Date.parse(revoked.json.data.revokeApiKey.revoked_at)).toBeLessThanOrEqual(Date.now());
      const after = await eventually(call, (answer) => answer.status === 401, 5_000);
      expect(after.status).toBe(401);
      expect(after.json.error.code).toBe("invalid_token");
      const live = await alice.dashboard.graphql(`{ apiKeys(limit: 100) { data { id } } }`);
      expect(live.json.data.apiKeys.data.map((k: { id: string }) => k.id)).not.toContain(api_key.id);
      const all = await alice.dashboard.graphql(
        `{ apiKeys(include_revoked: true, limit: 100) { data { id } } }`,
      );
      expect(all.json.data.apiKeys.data.map((k: { id: string }) => k.id)).toContain(api_key.id);
    });

    it("rotate with grace 0: the old key stops, the new one (same name and scopes) works", async () => {
      const created = await alice.dashboard.graphql(
        `mutation { createApiKey(input: { name: "rotating", scopes: ["leads.read", "clients.read"] }) { secret api_key { id } } }`,
      );
      const old = created.json.data.createApiKey;
      const rotated = await alice.dashboard.graphql(
        `mutation($id: ID!) { rotateApiKey(id: $id) { secret api_key { id name scopes revoked_at } previous { id revoked_at } } }`,
        { id: old.api_key.id },
      );
      expect(rotated.json.errors).toBeUndefined();
      const { secret, api_key, previous } = rotated.json.data.rotateApiKey;
      expect(api_key).toMatchObject({
        name: "rotating",
        scopes: ["leads.read", "clients.read"],
        revoked_at: null,
      });
      expect(api_key.id).not.toBe(old.api_key.id);
      expect(previous.id).toBe(old.api_key.id);
      expect(Date.parse(previous.revoked_at)).toBeLessThanOrEqual(Date.now());
      expect(
        (await raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${old.secret}` } })).status,
      ).toBe(401);
      expect(
        (await raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${secret}` } })).status,
      ).toBe(200);
      const again = await alice.dashboard.graphql(`mutation($id: ID!) { rotateApiKey(id: $id) { secret } }`, {
        id: old.api_key.id,
      });
      expect(codeOf(again)).toBe("invalid_state");
    });

    it("rotate with grace: the old key keeps working until revoked_at, listed as live; revoking ends the grace at once", async () => {
      const created = await alice.dashboard.graphql(
        `mutation { createApiKey(input: { name: "graceful", scopes: ["leads.read"] }) { secret api_key { id } } }`,
      );
      const old = created.json.data.createApiKey;
      const before = Date.now();
      const rotated = await alice.dashboard.graphql(
        `mutation($id: ID!) { rotateApiKey(id: $id, grace_seconds: 3600) { secret previous { id revoked_at } } }`,
        {
          id: old.api_key.id,
        },
      );
      const ends = Date.parse(rotated.json.data.rotateApiKey.previous.revoked_at);
      expect(ends).toBeGreaterThanOrEqual(before + 3600_000);
      expect(ends).toBeLessThanOrEqual(Date.now() + 3600_000);
      // First used after the rotation, so no cache stands between the key and its revoked_at.
      expect(
        (await raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${old.secret}` } })).status,
      ).toBe(200);
      expect(
        (
          await raw(`${server().api}/leads`, {
            headers: { authorization: `Bearer ${rotated.json.data.rotateApiKey.secret}` },
          })
        ).status,
      ).toBe(200);
      const live = await alice.dashboard.graphql(`{ apiKeys(limit: 100) { data { id revoked_at } } }`);
      expect(live.json.data.apiKeys.data).toContainEqual({
        id: old.api_key.id,
        revoked_at: rotated.json.data.rotateApiKey.previous.revoked_at,
      });

      await alice.dashboard.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, {
        id: old.api_key.id,
      });
      const after = await eventually(
        () => raw(`${server().api}/leads`, { headers: { authorization: `Bearer ${old.secret}` } }),
        (answer) => answer.status === 401,
        5_000,
      );
      expect(after.status).toBe(401);
    });

    it("refuses bad input with the documented error and writes nothing", async () => {
      const count = () => db().apiKey.count({ where: { workspaceId: alice.workspaceId } });
      const before = await count();
      const create = (input: unknown) =>
        alice.dashboard.graphql(
          `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { secret } }`,
          { input },
        );
      const cases: [unknown, string][] = [
        [{ name: "", scopes: ["leads.read"] }, "input.name"],
        [{ name: "   ", scopes: ["leads.read"] }, "input.name"],
        [{ name: "n".repeat(201), scopes: ["leads.read"] }, "input.name"],
        [{ name: "ok", scopes: [] }, "input.scopes"],
        [{ name: "ok", scopes: ["leads.read", "root.everything"] }, "input.scopes[1]"],
        [{ name: "ok", scopes: Array.from({ length: 101 }, () => "leads.read") }, "input.scopes"],
      ];
      for (const [input, param] of cases) {
        const answer = await create(input);
        expect(answer.json.errors?.[0]?.extensions, JSON.stringify(input).slice(0, 80)).toMatchObject({
          code: "validation_failed",
          param,
        });
      }
      const existing = await db().apiKey.findFirstOrThrow({
        where: { workspaceId: alice.workspaceId, revokedAt: null },
      });
      for (const grace of [-1, 604_801, 2 ** 31]) {
        const answer = await alice.dashboard.graphql(
          `mutation($id: ID!, $grace: Int) { rotateApiKey(id: $id, grace_seconds: $grace) { secret } }`,
          {
            id: existing.id,
            grace,
          },
        );
        expect(answer.json.errors?.[0]?.extensions.code, String(grace)).toBe("validation_failed");
      }
      const other = await owner("Other Keys Co");
      const foreign = await createApiKey(db(), { workspaceId: other.workspaceId, scopes: ["leads.read"] });
      for (const id of [foreign.id, "key_01JAAAAAAAAAAAAAAAAAAAAAAA", "k".repeat(101)]) {
        const answer = await alice.dashboard.graphql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, {
          id,
        });
        expect(answer.json.errors?.[0]?.extensions.code).toBe(
          id.length > 100 ? "validation_failed" : "not_found",
        );
      }
      expect((await db().apiKey.findUniqueOrThrow({ where: { id: foreign.id } })).revokedAt).toBeNull();
      expect(await count()).toBe(before);
      expect((await db().apiKey.findUniqueOrThrow({ where: { id: existing.id } })).revokedAt).toBeNull();
    });

    it(`a workspace holds at most ${MAX_LIVE_API_KEYS} live keys`, async () => {
      const person = await owner("Many Keys Co");
      const live = await db().apiKey.count({ where: { workspaceId: person.workspaceId } });
      for (let i = live; i < MAX_LIVE_API_KEYS; i++)
        await createApiKey(db(), { workspaceId: person.workspaceId, scopes: ["leads.read"] });
      const refused = await person.dashboard.graphql(
        `mutation { createApiKey(input: { name: "one more", scopes: ["leads.read"] }) { secret } }`,
      );
      expect(codeOf(refused)).toBe("invalid_state");
      expect(await db().apiKey.count({ where: { workspaceId: person.workspaceId } })).toBe(MAX_LIVE_API_KEYS);
    });
  });

  describe("members and invitations", () => {
    it("invite: pending until accepted or revoked; already_member for a member; bad e-mails refused", async () => {
      const team = await owner("Team Co");
      const invite = (email: string, role = "member") =>
        team.dashboard.graphql(
          `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url invitation { object id email role created_at expires_at } } }`,
          { input: { email, role } },
        );
      const made = await invite("  New.Person@Example.com ");
      expect(made.json.errors).toBeUndefined();
      const invitation = made.json.data.inviteMember.invitation;
      expect(invitation).toMatchObject({
        object: "invitation",
        id: expect.stringMatching(/^invt_/),
        email: "new.person@example.com",
        role: "member",
      });
      expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(7 * 24 * 3600_000);
      const token = made.json.data.inviteMember.accept_url.split("#token=")[1];
      const stored = await db().invitation.findUniqueOrThrow({ where: { id: invitation.id } });
      expect(stored.tokenHash).toMatch(/^[0-9a-f]{64}$/);
      expect(stored.tokenHash).not.toContain(token);

      const listed = await team.dashboard.graphql("{ invitations { id email role } }");
      expect(listed.json.data.invitations).toEqual([
        { id: invitation.id, email: "new.person@example.com", role: "member" },
      ]);

      const already = await invite(team.email.toUpperCase());
      expect(already.json.errors?.[0]?.extensions).toMatchObject({
        code: "already_member",
        param: "input.email",
      });
      for (const email of ["not-an-email", `${"a".repeat(250)}@example.com`, "a\u0001@example.com"]) {
        const bad = await invite(email);
        expect(bad.json.errors?.[0]?.extensions).toMatchObject({
          code: "validation_failed",
          param: "input.email",
        });
      }
      const badRole = await invite("someone@example.com", "admin");
      expect(badRole.json.errors?.[0]?.extensions.code).toBe("validation_failed");

      // Inviting the same address again replaces the pending invitation.
      const again = await invite("new.person@example.com", "owner");
      const pending = await team.dashboard.graphql("{ invitations { id role } }");
      expect(pending.json.data.invitations).toEqual([
        { id: again.json.data.inviteMember.invitation.id, role: "owner" },
      ]);

      const revoked = await team.dashboard.graphql(
        `mutation($id: ID!) { revokeInvitation(id: $id) { id } }`,
        {
          id: again.json.data.inviteMember.invitation.id,
        },
      );
      expect(revoked.json.errors).toBeUndefined();
      expect((await team.dashboard.graphql("{ invitations { id } }")).json.data.invitations).toEqual([]);
      expect(await db().invitation.count({ where: { workspaceId: team.workspaceId } })).toBe(2);
      const unknown = await team.dashboard.graphql(
        `mutation { revokeInvitation(id: "invt_01JAAAAAAAAAAAAAAAAAAAAAAA") { id } }`,
      );
      expect(codeOf(unknown)).toBe("not_found");
    });

    it("the last owner can be neither demoted nor removed; members can be promoted, demoted and removed", async () => {
      const team = await owner("Owners Co");
      const helper = await owner("Helper Own");
      await join(helper, team.workspaceId, "member");
      const update = (userId: string, role: string) =>
        team.dashboard.graphql(
          `mutation($id: ID!, $role: MembershipRole!) { updateMember(user_id: $id, role: $role) { user_id email role } }`,
          {
            id: userId,
            role,
          },
        );
      const remove = (userId: string) =>
        team.dashboard.graphql(`mutation($id: ID!) { removeMember(user_id: $id) { user_id role } }`, {
          id: userId,
        });

      expect(codeOf(await update(team.userId, "member"))).toBe("invalid_state");
      expect(codeOf(await remove(team.userId))).toBe("invalid_state");
      expect(codeOf(await update("usr_01JAAAAAAAAAAAAAAAAAAAAAAA", "owner"))).toBe("not_found");
      expect(codeOf(await remove(alice.userId))).toBe("not_found");

      expect((await update(helper.userId, "owner")).json.data.updateMember).toEqual({
        user_id: helper.userId,
        email: helper.email,
        role: "owner",
      });
      expect((await update(team.userId, "member")).json.data.updateMember.role).toBe("member");
      // Now a member, the former owner is refused; the new owner may remove them.
      expect(codeOf(await update(team.userId, "owner"))).toBe("owner_required");
      helper.dashboard.workspace = team.workspaceId;
      const removed = await helper.dashboard.graphql(
        `mutation($id: ID!) { removeMember(user_id: $id) { user_id role } }`,
        { id: team.userId },
      );
      expect(removed.json.data.removeMember).toEqual({ user_id: team.userId, role: "member" });
      const gone = await team.dashboard.graphql("{ workspace { id } }");
      expect(gone.status).toBe(403);
      expect(codeOf(gone)).toBe("not_a_member");
      expect(
        await db().membership.findMany({
          where: { workspaceId: team.workspaceId },
          select: { userId: true, role: true },
        }),
      ).toEqual([{ userId: helper.userId, role: "owner" }]);
    });
  });

  describe("request logs and limits", () => {
    it("requestLogs(route:) keeps one route template; RequestLogDay has error_rate and latency percentiles", async () => {
      const person = await owner("Logs Co");
      const key = await createApiKey(db(), { workspaceId: person.workspaceId, scopes: [...SCOPES] });
      const auth = { authorization: `Bearer ${key.key}` };
      for (let i = 0; i < 3; i++)
        expect((await raw(`${server().api}/leads`, { headers: auth })).status).toBe(200);
      expect(
        (await raw(`${server().api}/leads/lead_01JAAAAAAAAAAAAAAAAAAAAAAA`, { headers: auth })).status,
      ).toBe(404);
      await flushRequestLogs(server().running.db);
      const logs = await person.dashboard.graphql(
        `query($route: String) { requestLogs(route: $route) { data { route status } } requestLogStats(days: 2) { error_rate daily { date requests errors error_rate p50_ms p95_ms } } }`,
        { route: "/v1/leads" },
      );
      expect(logs.json.errors).toBeUndefined();
      expect(logs.json.data.requestLogs.data).toEqual(
        Array.from({ length: 3 }, () => ({ route: "/v1/leads", status: 200 })),
      );
      const [yesterday, today] = logs.json.data.requestLogStats.daily;
      expect(yesterday).toMatchObject({ requests: 0, errors: 0, error_rate: 0, p50_ms: null, p95_ms: null });
      expect(today).toMatchObject({
        requests: 4,
        errors: 1,
        error_rate: 0.25,
        p50_ms: expect.any(Number),
        p95_ms: expect.any(Number),
      });
      expect(today.p95_ms).toBeGreaterThanOrEqual(today.p50_ms);
      const overRest = await raw(
        `${server().api}/request-logs?route=${encodeURIComponent("/v1/leads/{id}")}`,
        { headers: auth },
      );
      expect(
        overRest.json.data.map((row: { route: string; status: number }) => [row.route, row.status]),
      ).toEqual([["/v1/leads/{id}", 404]]);
      const none = await person.dashboard.graphql(
        `{ requestLogs(route: "/v1/nothing/{id}") { data { route } } }`,
      );
      expect(none.json.data.requestLogs.data).toEqual([]);
      const long = await person.dashboard.graphql(
        `query($route: String) { requestLogs(route: $route) { data { route } } }`,
        { route: "/".repeat(201) },
      );
      expect(long.json.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "route" });
    });

    it("lets a full dashboard overview through the GraphQL cost limits", async () => {
      const overview = `{
        viewer { user { id email created_at } role workspace { id name plan limits { requests_per_minute storage_label } } workspaces { id name plan role } }
        members { user_id email role created_at }
        invitations { id email role created_at expires_at }
        apiKeys(include_revoked: true, limit: 100) { has_more next_cursor data { ${API_KEY_FIELDS} } }
        requestLogStats(days: 90) { total error_rate latency_ms { p50 p95 } daily { date requests errors error_rate p50_ms p95_ms } top_endpoints { method route requests } }
        requestLogs(limit: 100) { data { request_id key_id method route status latency_ms error_code created_at } }
        storageUsage { used_bytes limit_bytes used_percent limit_label }
        agentSettings { agent_auth_enabled active_registrations }
        agentRegistrations(limit: 100) { data { id agent_name status scopes live_tokens last_used_at } }
        webhookEndpoints(limit: 100) { data { id url events is_active } }
      }`;
      const answer = await alice.dashboard.graphql(overview);
      expect(answer.status, JSON.stringify(answer.json.errors)).toBe(200);
      expect(answer.json.errors).toBeUndefined();
      expect(answer.json.data.viewer.workspace.id).toBe(alice.workspaceId);
    });
  });
});
