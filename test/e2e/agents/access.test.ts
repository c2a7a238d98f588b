import { describe, expect, it } from "vitest";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import {
  CLAIM_GRANT_TYPE,
  decide,
  eventually,
  granted,
  identity,
  JWT_BEARER_GRANT_TYPE,
  refused,
  registerAnonymous,
  registerServiceAuth,
} from "../../support/agent-flow.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useAgentTenant } from "./support.ts";

/** A body with its request ids taken out, to compare two answers to two requests. */
function withoutRequestIds(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (key, v) =>
    key === "request_id" || key === "requestId" ? undefined : v,
  );
}

const remaining = (headers: Headers) => Number(headers.get("x-ratelimit-remaining"));

e2e(
  "agent access to /v1 and /graphql",
  (server) => {
    const { tenant, owner, grant } = useAgentTenant(server);
    const prisma = () => server().running.db.prisma;

    /** A service_auth agent claimed into the tenant's workspace, with its first access token. */
    async function claimedAgent(scope: string) {
      const agent = await registerServiceAuth(server(), owner().email, { scope });
      expect(
        await decide(server(), agent.claim, owner().userId, { workspaceId: tenant().workspaceId }),
      ).toMatchObject({ outcome: "approved" });
      const body = granted(await grant(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }));
      return { ...agent, token: body.access_token, assertion: body.identity_assertion as string };
    }

    it("works on /v1 and /graphql in the claimed workspace, at the granted scopes", async () => {
      const lead = await rest(server().api, tenant().key).post("/leads", { first_name: "Seen by the agent" });
      expect(lead.status).toBe(201);
      const agent = await claimedAgent("leads.read leads.write");
      const api = rest(server().api, agent.token);
      const read = await api.get(`/leads/${lead.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body.first_name).toBe("Seen by the agent");
      expect((await api.post("/leads", { first_name: "Written by the agent" })).status).toBe(201);

      const gql = await graphql(
        server().url,
        agent.token,
      )(`{ workspace { id } leads(limit: 100) { data { id } } }`);
      expect(gql.errors).toBeUndefined();
      expect(gql.data.workspace.id).toBe(tenant().workspaceId);
      expect(gql.data.leads.data.map((l: { id: string }) => l.id)).toContain(lead.body.id);
    });

    it("answers a missing scope with the same 403 insufficient_scope as an API key, on /v1 and /graphql", async () => {
      const agent = await claimedAgent("leads.read");
      const key = await server().key(tenant().workspaceId, ["leads.read"]);
      for (const [method, path, body] of [
        ["POST", "/leads", { first_name: "Refused" }],
        ["GET", "/clients", undefined],
        ["GET", "/webhook-endpoints", undefined],
      ] as const) {
        const asAgent = await call(method, `${server().api}${path}`, { key: agent.token, body });
        const asKey = await call(method, `${server().api}${path}`, { key: key.key, body });
        expect(asAgent.status, path).toBe(403);
        expect(asAgent.body.error.code).toBe("insufficient_scope");
        expect(withoutRequestIds(asAgent.body)).toEqual(withoutRequestIds(asKey.body));
      }
      const query = `mutation { createLead(first_name: "Refused") { id } }`;
      const gqlAgent = await graphql(server().url, agent.token)(query);
      const gqlKey = await graphql(server().url, key.key)(query);
      expect(gqlAgent.errors?.[0]?.extensions.code).toBe("insufficient_scope");
      expect(withoutRequestIds(gqlAgent)).toEqual(withoutRequestIds(gqlKey));
    });

    it("answers a revoked or expired token with the same 401 as an unknown key", async () => {
      const agent = await claimedAgent("leads.read");
      const second = granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.assertion })).access_token;
      const unknown = await call("GET", `${server().api}/leads`, { key: `ktr_live_${"A".repeat(43)}` });
      expect(unknown.status).toBe(401);
      expect((await call("GET", `${server().api}/leads`, { key: agent.token })).status).toBe(200);
      expect((await call("GET", `${server().api}/leads`, { key: second })).status).toBe(200);

      const rows = await prisma().agentToken.findMany({
        where: { registrationId: agent.registration_id },
        orderBy: { createdAt: "asc" },
      });
      await prisma().agentToken.update({ where: { id: rows[0]!.id }, data: { revokedAt: new Date() } });
      await prisma().agentToken.update({
        where: { id: rows[1]!.id },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      for (const token of [agent.token, second]) {
        const res = await eventually(
          () => call("GET", `${server().api}/leads`, { key: token }),
          (r) => r.status === 401,
        );
        expect(res.status).toBe(401);
        expect(withoutRequestIds(res.body)).toEqual(withoutRequestIds(unknown.body));
        expect(res.headers.get("www-authenticate")).toBe(unknown.headers.get("www-authenticate"));
      }
    });

    it("never grants agents.*, at registration or at the token endpoint", async () => {
      const agent = await claimedAgent("leads.read");
      refused(
        await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.assertion, scope: "agents.read" }),
        400,
        "invalid_scope",
      );
      const wide = await registerServiceAuth(server(), owner().email);
      expect(wide.post_claim_scopes.filter((s) => s.startsWith("agents."))).toEqual([]);
      const asked = await identity(server(), {
        type: "service_auth",
        login_hint: owner().email,
        scope: "agents.write",
      });
      expect(asked.status).toBe(400);
    });

    it("records the registration id in the request logs", async () => {
      const agent = await claimedAgent("leads.read");
      const res = await rest(server().api, agent.token).get("/leads");
      expect(res.status).toBe(200);
      const id = res.headers.get("x-request-id")!;
      const row = await eventually(
        async () => {
          await flushRequestLogs(server().running.db);
          return prisma().requestLog.findUnique({ where: { id } });
        },
        (found) => found !== null,
      );
      expect(row).toMatchObject({
        workspaceId: tenant().workspaceId,
        credentialId: agent.registration_id,
        route: "/v1/leads",
        status: 200,
      });
    });

    it("counts every token of one registration in one rate-limit bucket, apart from other registrations", async () => {
      const agent = await claimedAgent("leads.read");
      const second = granted(await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.assertion })).access_token;
      const first = await rest(server().api, agent.token).get("/leads");
      const next = await rest(server().api, second).get("/leads");
      expect(first.status).toBe(200);
      expect(next.status).toBe(200);
      expect(remaining(next.headers)).toBe(remaining(first.headers) - 1);

      const other = await claimedAgent("leads.read");
      const fresh = await rest(server().api, other.token).get("/leads");
      expect(remaining(fresh.headers)).toBe(Number(fresh.headers.get("x-ratelimit-limit")) - 1);
    });

    describe("anonymous agent", () => {
      it("works at once at pre-claim scopes in its sandbox only", async () => {
        const agent = await registerAnonymous(server());
        const token = granted(
          await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
        ).access_token;
        const api = rest(server().api, token);
        expect((await api.post("/clients", { name: "Sandbox client" })).status).toBe(201);
        expect((await api.post("/leads", { first_name: "Sandbox lead" })).status).toBe(201);
        const leads = await api.get("/leads");
        expect(leads.body.data.map((l: { first_name: string }) => l.first_name)).toEqual(["Sandbox lead"]);
        const webhooks = await api.get("/webhook-endpoints");
        expect(webhooks.status).toBe(403);
        expect(webhooks.body.error).toMatchObject({
          code: "insufficient_scope",
          required_scope: "webhooks.read",
        });
        const { workspaceId } = await prisma().agentRegistration.findUniqueOrThrow({
          where: { id: agent.registration_id },
        });
        const me = await graphql(server().url, token)(`{ workspace { id plan } }`);
        expect(me.data.workspace).toEqual({ id: workspaceId, plan: "free" });
      });

      it("after the claim, its pre-claim tokens stop working and the claim grant yields post-claim tokens", async () => {
        const agent = await registerAnonymous(server());
        const preClaim = granted(
          await grant(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
        ).access_token;
        const api = rest(server().api, preClaim);
        expect((await api.post("/leads", { first_name: "Before the claim" })).status).toBe(201);
        refused(
          await grant(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }),
          400,
          "authorization_pending",
        );

        const started = await identity(
          server(),
          { type: "login_hint", claim_token: agent.claim_token, login_hint: owner().email },
          "/agent/identity/claim",
        );
        expect(started.status).toBe(200);
        const decision = await decide(server(), started.json.claim_attempt, owner().userId);
        expect(decision).toMatchObject({ outcome: "approved" });

        const stopped = await eventually(
          () => api.get("/leads"),
          (res) => res.status === 401,
        );
        expect(stopped.status).toBe(401);

        const body = granted(await grant(CLAIM_GRANT_TYPE, { claim_token: agent.claim_token }));
        expect(body.scope).toBe(agent.post_claim_scopes.join(" "));
        const after = rest(server().api, body.access_token);
        const leads = await after.get("/leads");
        expect(leads.status).toBe(200);
        expect(leads.body.data.map((l: { first_name: string }) => l.first_name)).toEqual([
          "Before the claim",
        ]);
        expect((await after.get("/webhook-endpoints")).status).toBe(200);
        const membership = await prisma().membership.findFirstOrThrow({
          where: {
            userId: owner().userId,
            workspaceId: (
              await prisma().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })
            ).workspaceId!,
          },
        });
        expect(membership.role).toBe("owner");
      });
    });
  },
  { KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "1000" },
);
