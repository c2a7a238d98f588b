import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import {
  type ClaimBlock,
  decide,
  identity,
  ownerNamed,
  registerAnonymous,
  registerServiceAuth,
} from "../../support/agent-flow.ts";
import { PASSWORD } from "../../support/dashboard-session.ts";
import { raw } from "../../support/http.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { agentOf, auditHelpers, expectRecord, type Owned } from "./support.ts";

e2e("audit log: agents and webhook endpoints", (server) => {
  const { db, reader, ownedWorkspace, asOwner, withKey } = auditHelpers(server);

  let acme: Owned;
  beforeAll(async () => {
    acme = await ownedWorkspace("acme");
  });

  describe("agent access, trusted providers and webhook endpoints (API keys)", () => {
    it("agent access off and on: a record per change, none when nothing changes", async () => {
      const owned = await ownedWorkspace("agent-access");
      const actor = { type: "api_key", id: owned.key.id };
      const target = { type: "workspace", id: owned.workspaceId };
      const uaOff = agentOf("off");
      const off = await withKey(
        owned.key.key,
        "PATCH",
        "/agent-settings",
        { agent_auth_enabled: false },
        uaOff,
      );
      expect(off.status).toBe(200);
      const uaOn = agentOf("on");
      const on = await withKey(owned.key.key, "PATCH", "/agent-settings", { agent_auth_enabled: true }, uaOn);
      await withKey(owned.key.key, "PATCH", "/agent-settings", { agent_auth_enabled: true }, uaOn);
      const records = await owned.audit("action=agent_access.enabled");
      expect(records).toHaveLength(1);
      expectRecord(records[0], {
        action: "agent_access.enabled",
        actor,
        target,
        userAgent: uaOn,
        requestId: on.requestId,
      });
      expectRecord((await owned.audit("action=agent_access.disabled"))[0], {
        action: "agent_access.disabled",
        actor,
        target,
        userAgent: uaOff,
        requestId: off.requestId,
      });
    });

    it("webhook endpoints: create, rotate the secret, delete; a refused URL records nothing", async () => {
      const actor = { type: "api_key", id: acme.key.id };
      const uaCreate = agentOf("endpoint-create");
      const created = await withKey(
        acme.key.key,
        "POST",
        "/webhook-endpoints",
        { url: "http://127.0.0.1:9/audit-hook", events: ["lead.created"] },
        uaCreate,
      );
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = created.body.id as string;
      const target = { type: "webhook_endpoint", id };
      expectRecord((await acme.audit(`target_id=${id}`))[0], {
        action: "webhook_endpoint.created",
        actor,
        target,
        userAgent: uaCreate,
        requestId: created.requestId,
      });
      const uaRotate = agentOf("endpoint-rotate");
      const rotated = await withKey(
        acme.key.key,
        "POST",
        `/webhook-endpoints/${id}/rotate-secret`,
        undefined,
        uaRotate,
      );
      expect(rotated.status).toBe(200);
      expectRecord((await acme.audit(`target_id=${id}`))[0], {
        action: "webhook_endpoint.secret_rotated",
        actor,
        target,
        userAgent: uaRotate,
        requestId: rotated.requestId,
      });
      const uaDelete = agentOf("endpoint-delete");
      const deleted = await withKey(acme.key.key, "DELETE", `/webhook-endpoints/${id}`, undefined, uaDelete);
      expect(deleted.status).toBe(200);
      expectRecord((await acme.audit(`target_id=${id}`))[0], {
        action: "webhook_endpoint.deleted",
        actor,
        target,
        userAgent: uaDelete,
        requestId: deleted.requestId,
      });

      const before = (await acme.audit()).length;
      expect(
        (
          await withKey(
            acme.key.key,
            "POST",
            "/webhook-endpoints",
            { url: "ftp://127.0.0.1/x", events: ["lead.created"] },
            uaCreate,
          )
        ).status,
      ).toBe(400);
      expect(
        (
          await withKey(
            acme.key.key,
            "DELETE",
            `/webhook-endpoints/${newId("webhookEndpoint")}`,
            undefined,
            uaDelete,
          )
        ).status,
      ).toBe(404);
      expect(await acme.audit()).toHaveLength(before);
    });

    it("the record and its change are one: when the record cannot be written, the change is not made", async () => {
      const repair = await breakAudit(server());
      try {
        const res = await withKey(
          acme.key.key,
          "POST",
          "/webhook-endpoints",
          { url: "http://127.0.0.1:9/never", events: ["lead.created"] },
          agentOf("broken"),
        );
        expect(res.status).toBe(500);
        const key = await asOwner(
          acme,
          `mutation { createApiKey(input: { name: "Never", scopes: ["leads.read"] }) { api_key { id } } }`,
          {},
          agentOf("broken"),
        );
        expect(key.errors?.[0]?.extensions.code).toBe("internal_error");
      } finally {
        await repair();
      }
      expect(
        await db().webhookEndpoint.count({
          where: { workspaceId: acme.workspaceId, url: "http://127.0.0.1:9/never" },
        }),
      ).toBe(0);
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
      const trusted = await withKey(
        owned.key.key,
        "POST",
        "/trusted-providers",
        { issuer: provider.issuer, jwks_url: provider.jwksUrl },
        uaTrust,
      );
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
      const deleted = await withKey(
        owned.key.key,
        "DELETE",
        `/trusted-providers/${providerId}`,
        undefined,
        uaDelete,
      );
      expect(deleted.status).toBe(200);
      expectRecord((await owned.audit(`target_id=${providerId}`))[0], {
        action: "trusted_provider.deleted",
        actor,
        target: { type: "trusted_provider", id: providerId },
        userAgent: uaDelete,
        requestId: deleted.requestId,
      });
      expectRecord(
        (await owned.audit(`target_id=${second.registrationId}&action=agent_registration.revoked`))[0],
        {
          action: "agent_registration.revoked",
          actor,
          target: { type: "agent_registration", id: second.registrationId },
          userAgent: uaDelete,
          requestId: deleted.requestId,
        },
      );
    });

    it("the claim page: a refused sign-in, sign-in, approval, sign-out by the user; an owner's revocation by its key", async () => {
      const owned = await ownedWorkspace("claim");
      const user = { type: "user", id: owned.userId, email: owned.email };
      const agent = await registerServiceAuth(server(), owned.email);
      const page = new ClaimPage(server().url);
      const failed = await page.failSignIn(
        agent.claim.verification_uri,
        owned.email,
        agentOf("claim-wrong-password"),
      );
      expectRecord((await owned.audit("action=session.sign_in_failed"))[0], {
        action: "session.sign_in_failed",
        actor: { type: "user", id: null, email: owned.email },
        target: { type: "user", id: owned.userId },
        ...failed,
      });
      const signIn = await page.signIn(agent.claim.verification_uri, owned.email, agentOf("claim-sign-in"));
      expectRecord((await owned.audit("action=session.signed_in"))[0], {
        action: "session.signed_in",
        actor: user,
        target: { type: "user", id: owned.userId },
        ...signIn,
      });

      const approved = await page.decide(
        agent.claim.verification_uri,
        "approve",
        { code: agent.claim.user_code, workspace_id: owned.workspaceId },
        agentOf("approve"),
      );
      expect(approved.status, approved.text).toBe(200);
      const registration = { type: "agent_registration", id: agent.registration_id };
      expectRecord((await owned.audit(`target_id=${agent.registration_id}`))[0], {
        action: "agent_registration.approved",
        actor: user,
        target: registration,
        ...approved.seen,
      });

      const signedOut = await page.signOut(agent.claim.verification_uri, agentOf("claim-sign-out"));
      expectRecord((await owned.audit("action=session.signed_out"))[0], {
        action: "session.signed_out",
        actor: user,
        target: { type: "user", id: owned.userId },
        ...signedOut,
      });

      const uaRevoke = agentOf("revoke-agent");
      const revoked = await withKey(
        owned.key.key,
        "POST",
        `/agent-registrations/${agent.registration_id}/revoke`,
        undefined,
        uaRevoke,
      );
      expect(revoked.status).toBe(200);
      expectRecord((await owned.audit(`target_id=${agent.registration_id}`))[0], {
        action: "agent_registration.revoked",
        actor: { type: "api_key", id: owned.key.id },
        target: registration,
        userAgent: uaRevoke,
        requestId: revoked.requestId,
      });
      // Revoking it again changes nothing.
      await withKey(
        owned.key.key,
        "POST",
        `/agent-registrations/${agent.registration_id}/revoke`,
        undefined,
        uaRevoke,
      );
      expect(
        await owned.audit(`target_id=${agent.registration_id}&action=agent_registration.revoked`),
      ).toHaveLength(1);
    });

    it("an anonymous agent's sandbox: a denial by the user, then the agent revoking itself", async () => {
      const owned = await ownedWorkspace("sandbox");
      const agent = await registerAnonymous(server(), "Sandboxed");
      const sandboxId = (
        await db().agentRegistration.findUniqueOrThrow({ where: { id: agent.registration_id } })
      ).workspaceId!;
      const sandbox = reader((await server().key(sandboxId, ["audit.read"])).key);
      const started = await identity(
        server(),
        { type: "login_hint", claim_token: agent.claim_token, login_hint: owned.email },
        "/agent/identity/claim",
      );
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
});

/**
 * A user of `sub` at `provider` linked into the workspace: their first ID-JAG, approved by the
 * person it names (an owner). Answers the registration that became active.
 */
async function link(server: TestServer, workspaceId: string, provider: IdJagProvider, sub: string) {
  const first = await identity(server, {
    type: "identity_assertion",
    assertion_type: "urn:ietf:params:oauth:token-type:id-jag",
    assertion: await provider.idJag(server.url, sub),
  });
  expect(first.status, first.text).toBe(401);
  const { userId } = await ownerNamed(server, workspaceId, `${sub}@example.com`);
  expect(await decide(server, first.json.claim as ClaimBlock, userId, { workspaceId })).toMatchObject({
    outcome: "approved",
  });
  const active = await server.running.db.prisma.agentRegistration.findFirstOrThrow({
    where: { providerSubject: sub, workspaceId, status: "active" },
  });
  return { sub, registrationId: active.id };
}

/** Makes every insert into the audit log fail until the returned function is called: a real failure inside the writing transaction. */
async function breakAudit(server: TestServer): Promise<() => Promise<void>> {
  const db = server.running.db.prisma;
  await db.$executeRawUnsafe(
    "create or replace function kontor_test_break_audit() returns trigger language plpgsql as $$ begin raise exception 'audit log unavailable'; end $$",
  );
  await db.$executeRawUnsafe(
    "create trigger kontor_test_break_audit before insert on audit_events for each row execute function kontor_test_break_audit()",
  );
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
    const headers: Record<string, string> = {
      cookie: [...this.cookies].map(([n, v]) => `${n}=${v}`).join("; "),
      "user-agent": userAgent,
    };
    if (form)
      Object.assign(headers, { origin: this.base, "content-type": "application/x-www-form-urlencoded" });
    const response = await fetch(url, {
      method: form ? "POST" : "GET",
      headers,
      body: form && new URLSearchParams(form).toString(),
      redirect: "manual",
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair!.indexOf("=");
      if (attributes.some((a) => a.trim().toLowerCase() === "max-age=0"))
        this.cookies.delete(pair!.slice(0, eq));
      else this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
    const text = await response.text();
    this.csrf = /name="csrf_token" value="([^"]+)"/.exec(text)?.[1] ?? this.csrf;
    return {
      status: response.status,
      text,
      seen: { userAgent, requestId: response.headers.get("x-request-id")! },
    };
  }

  private post(uri: string, fields: Record<string, string>, userAgent: string) {
    const attemptToken = new URL(uri).searchParams.get("claim_attempt_token")!;
    return this.send(`${this.base}/agent/claim`, userAgent, {
      claim_attempt_token: attemptToken,
      csrf_token: this.csrf,
      ...fields,
    });
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
    const answer = await this.post(
      uri,
      { action: "sign_in", email, password: "not the password at all" },
      userAgent,
    );
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
