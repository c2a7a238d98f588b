import { expect, it } from "vitest";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { allTools, connect } from "../mcp/support.ts";

/**
 * An agent written against the auth.md reference's own guide, and nothing else (server/agents/auth.md,
 * "A token in the registration answer"): it starts at the root protected-resource document, registers
 * at `register_uri` asking for an access token, and uses it on /v1 and /mcp at once.
 */

/** The reference client's steps, as its guide writes them: discovery from the host alone. */
async function referenceAgent(host: string, body: Record<string, unknown>) {
  const resource = await raw(`${host}/.well-known/oauth-protected-resource`);
  expect(resource.status).toBe(200);
  const issuer = resource.json.authorization_servers[0] as string;
  const metadata = await raw(`${issuer}/.well-known/oauth-authorization-server`);
  expect(metadata.status).toBe(200);
  const registration = await raw(metadata.json.agent_auth.register_uri, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { resource: resource.json, metadata: metadata.json, registration };
}

e2e("auth.md reference agents", (server) => {
  it("find the registration from the root document, and get a credential in the answer", async () => {
    const { resource, metadata, registration } = await referenceAgent(server().url, {
      type: "anonymous",
      agent_name: "Reference agent",
      requested_credential_type: "access_token",
    });
    expect(resource).toMatchObject({ resource: server().url, bearer_methods_supported: ["header"] });
    expect(metadata).toMatchObject({
      resource: server().url,
      authorization_servers: [server().url],
      bearer_methods_supported: ["header"],
    });
    expect(metadata.agent_auth.register_uri).toBe(`${server().url}/agent/auth`);
    expect(metadata.agent_auth.revocation_uri).toBe(`${server().url}/agent/auth/revoke`);
    expect(metadata.agent_auth.identity_types.anonymous.credential_types_supported).toEqual(["access_token"]);

    expect(registration.status, registration.text).toBe(200);
    expect(registration.headers.get("cache-control")).toBe("no-store");
    const answer = registration.json;
    expect(answer).toMatchObject({
      registration_type: "anonymous",
      identity_assertion: expect.any(String),
      credential: expect.stringMatching(/^ktr_agt_[0-9A-Za-z]{43}$/),
      credential_type: "access_token",
    });
    const expires = Date.parse(answer.credential_expires) - Date.now();
    expect(expires).toBeGreaterThan(50 * 60_000);
    expect(expires).toBeLessThanOrEqual(3_600_000);

    // The credential works on REST and on MCP, at the pre-claim scopes.
    const created = await raw(`${server().url}/v1/leads`, {
      method: "POST",
      headers: { authorization: `Bearer ${answer.credential}`, "content-type": "application/json" },
      body: JSON.stringify({ first_name: "Found by a reference agent" }),
    });
    expect(created.status).toBe(201);
    const client = await connect("v1", `${server().url}/mcp`, answer.credential);
    try {
      const names = (await allTools(client)).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(["list_leads", "create_lead", "record_payment"]));
      const listed = await client.callTool({ name: "list_leads", arguments: {} });
      expect(listed.structuredContent.data.map((lead: { id: string }) => lead.id)).toEqual([created.json.id]);
    } finally {
      await client.close();
    }
  });

  it("answer without a credential when none is asked for, or the registration has no assertion yet", async () => {
    const plain = await referenceAgent(server().url, { type: "anonymous", agent_name: "Plain agent" });
    expect(plain.registration.status).toBe(200);
    expect(plain.registration.json.credential).toBeUndefined();
    expect(plain.registration.json.identity_assertion).toEqual(expect.any(String));

    const tenant = await server().tenant();
    const owner = await server().running.db.prisma.membership.findFirstOrThrow({
      where: { workspaceId: tenant.workspaceId },
      select: { user: { select: { email: true } } },
    });
    const pending = await referenceAgent(server().url, {
      type: "service_auth",
      login_hint: owner.user.email,
      requested_credential_type: "access_token",
    });
    expect(pending.registration.status, pending.registration.text).toBe(200);
    expect(pending.registration.json.claim).toBeDefined();
    expect(pending.registration.json.credential).toBeUndefined();
  });

  it("refuse a credential type they do not issue, and register nothing", async () => {
    const before = await server().running.db.prisma.agentRegistration.count();
    const { registration } = await referenceAgent(server().url, {
      type: "anonymous",
      requested_credential_type: "refresh_token",
    });
    expect(registration.status).toBe(400);
    expect(registration.json).toMatchObject({ error: "invalid_request" });
    expect(registration.json.error_description).toMatch(/requested_credential_type/);
    expect(await server().running.db.prisma.agentRegistration.count()).toBe(before);
  });

  it("send revocation events to revocation_uri exactly as to the events endpoint", async () => {
    const bodies = ["not a jwt", "a.b.c"];
    for (const body of bodies) {
      const [alias, events] = await Promise.all(
        ["/agent/auth/revoke", "/agent/event/notify"].map((path) =>
          raw(`${server().url}${path}`, {
            method: "POST",
            headers: { "content-type": "application/secevent+jwt" },
            body,
          }),
        ),
      );
      expect(alias!.status).toBe(events!.status);
      expect(alias!.status).toBe(400);
      expect(alias!.json).toEqual(events!.json);
    }
  });
});
