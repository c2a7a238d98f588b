import { randomUUID } from "node:crypto";
import { createRemoteJWKSet, jwtVerify, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { AGENT_SCOPES } from "../../../schema/lib/scopes.ts";
import {
  type ClaimBlock,
  decide,
  eventually,
  granted,
  identity,
  JWT_BEARER_GRANT_TYPE,
  ownerNamed,
  tokenClient,
} from "../../support/agent-flow.ts";
import { rest } from "../../support/http.ts";
import { IdJagProvider } from "../../support/idjag-provider.ts";
import type { Tenant, TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { expectOAuthError } from "./support.ts";

/**
 * identity_assertion registrations and Security Event Tokens (docs/api/agents.md) against a local
 * ID-JAG provider: its own ES256 keys and a JWKS on 127.0.0.1, trusted through /v1.
 */

const ASSERTION_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
const REVOKED_EVENT = "https://schemas.workos.com/events/agent/auth/identity/assertion/revoked";

const register = (server: TestServer, assertion: string, extra: Record<string, unknown> = {}) =>
  identity(server, { type: "identity_assertion", assertion_type: ASSERTION_TYPE, assertion, ...extra });

const notify = (server: TestServer, body: string, contentType = "application/secevent+jwt") =>
  fetch(`${server.url}/agent/event/notify`, {
    method: "POST",
    headers: { "content-type": contentType },
    body,
  });

/** An RFC 8935 refusal: 400 `{err, description}`. */
async function expectSetError(response: Response, err: string) {
  const body = await response.json();
  expect({ status: response.status, err: body.err }).toEqual({ status: 400, err });
  expect(typeof body.description).toBe("string");
}

async function trust(server: TestServer, tenant: Tenant, provider: IdJagProvider, maxAuthAge?: number) {
  const res = await rest(server.api, tenant.key).post("/trusted-providers", {
    issuer: provider.issuer,
    jwks_url: provider.jwksUrl,
    ...(maxAuthAge !== undefined && { max_auth_age: maxAuthAge }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Registers the ID-JAG `issuer` signs for `sub`, addressed to the server (claims and options as idJag takes them). */
const registerIdJag = async (
  server: TestServer,
  issuer: IdJagProvider,
  sub: string,
  claims?: Record<string, unknown>,
  options?: Parameters<IdJagProvider["idJag"]>[3],
) => register(server, await issuer.idJag(server.url, sub, claims, options));

/** A started ID-JAG provider that `tenant` trusts (with `maxAuthAge`, if given); closed again if that fails. */
async function trustedProvider(server: TestServer, tenant: Tenant, maxAuthAge?: number) {
  const provider = await IdJagProvider.start();
  try {
    await trust(server, tenant, provider, maxAuthAge);
  } catch (error) {
    await provider.close();
    throw error;
  }
  return provider;
}

/**
 * The person an ID-JAG for `sub` names (its e-mail, `${sub}@example.com`), as an owner of the
 * tenant: a claim is bound to its e-mail, so only they can confirm the first link.
 */
const personOf = (server: TestServer, tenant: Tenant, sub: string) =>
  ownerNamed(server, tenant.workspaceId, `${sub}@example.com`);

/** First link of `sub`: 401 interaction_required with a claim block, then the user (an owner) approves. */
async function link(server: TestServer, tenant: Tenant, provider: IdJagProvider, sub: string) {
  const first = await registerIdJag(server, provider, sub);
  expectOAuthError(first, 401, "interaction_required");
  const { userId } = await personOf(server, tenant, sub);
  const decision = await decide(server, first.json.claim as ClaimBlock, userId, {
    workspaceId: tenant.workspaceId,
  });
  expect(decision).toEqual({ outcome: "approved", workspaceId: tenant.workspaceId });
  const later = await registerIdJag(server, provider, sub);
  expect(later.status, later.text).toBe(200);
  return later.json as {
    registration_id: string;
    identity_assertion: string;
    assertion_expires: string;
    scopes: string[];
  };
}

e2e("agent identity assertions (ID-JAG)", (server) => {
  let tenant: Tenant;
  let provider: IdJagProvider;

  beforeAll(async () => {
    tenant = await server().tenant({ plan: "pro" });
    provider = await trustedProvider(server(), tenant);
  });
  afterAll(() => provider?.close());

  /** The status of the registration `id`, as stored. */
  const registrationStatus = async (id: string) =>
    (await server().running.db.prisma.agentRegistration.findUniqueOrThrow({ where: { id } })).status;

  it("the first ID-JAG of a user asks them to confirm once; later ones yield Kontor's identity assertion", async () => {
    const sub = `user-${randomUUID()}`;
    const first = await register(server(), await provider.idJag(server().url, sub), {
      agent_name: "Provider agent",
    });
    expectOAuthError(first, 401, "interaction_required");
    expect(first.json).toMatchObject({
      registration_id: expect.stringMatching(/^areg_/),
      registration_type: "identity_assertion",
      claim: {
        user_code: expect.stringMatching(/^\d{6}$/),
        verification_uri: expect.stringContaining("claim_attempt_token="),
        expires_in: 600,
        interval: 5,
      },
    });
    expect(first.json.claim.verification_uri).not.toContain(first.json.claim.user_code);
    const pending = await server().running.db.prisma.agentRegistration.findUniqueOrThrow({
      where: { id: first.json.registration_id },
    });
    expect(pending).toMatchObject({
      status: "pending",
      providerIssuer: provider.issuer,
      providerSubject: sub,
      agentName: "Provider agent",
      loginHint: `${sub}@example.com`,
    });

    // Until the user confirms, a new ID-JAG asks again (same registration, a fresh code).
    const again = await registerIdJag(server(), provider, sub);
    expectOAuthError(again, 401, "interaction_required");
    expect(again.json.registration_id).toBe(first.json.registration_id);

    const { userId } = await personOf(server(), tenant, sub);
    expect(
      await decide(server(), again.json.claim, userId, { workspaceId: tenant.workspaceId }),
    ).toMatchObject({ outcome: "approved" });

    const linked = await registerIdJag(server(), provider, sub);
    expect(linked.status, linked.text).toBe(200);
    expect(linked.headers.get("cache-control")).toBe("no-store");
    expect(linked.json).toEqual({
      registration_id: first.json.registration_id,
      registration_type: "identity_assertion",
      identity_assertion: expect.any(String),
      assertion_expires: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      scopes: [...AGENT_SCOPES],
    });
    const jwks = createRemoteJWKSet(new URL(`${server().url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(linked.json.identity_assertion, jwks, {
      issuer: server().url,
      audience: server().url,
    });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.sub).toBe(first.json.registration_id);

    // Kontor's assertion is exchanged like any other, and the token works on /v1.
    const tokens = granted(
      await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: linked.json.identity_assertion }),
    );
    expect(tokens.access_token).toMatch(/^ktr_agt_/);
    expect((await rest(server().api, tokens.access_token).get("/workspace")).body.id).toBe(
      tenant.workspaceId,
    );
  });

  it("accepts aud = {base_url} as well as {host_url}", async () => {
    const res = await register(server(), await provider.idJag(server().api, `user-${randomUUID()}`));
    expectOAuthError(res, 401, "interaction_required");
  });

  it("refuses a wrong typ, a wrong aud, an expired ID-JAG and an iat in the future", async () => {
    const sub = `user-${randomUUID()}`;
    expectOAuthError(
      await registerIdJag(server(), provider, sub, {}, { typ: "JWT" }),
      400,
      "invalid_request",
    );
    expectOAuthError(
      await register(server(), await provider.idJag("http://127.0.0.1:1/other", sub)),
      400,
      "audience_mismatch",
    );
    const past = Math.floor(Date.now() / 1000) - 3600;
    expectOAuthError(
      await registerIdJag(server(), provider, sub, { iat: past - 300, exp: past }),
      400,
      "credential_expired",
    );
    const future = Math.floor(Date.now() / 1000) + 3600;
    expectOAuthError(
      await registerIdJag(server(), provider, sub, { iat: future, exp: future + 300 }),
      400,
      "invalid_request",
    );
    for (const claim of ["exp", "iat", "jti", "sub"]) {
      expectOAuthError(
        await registerIdJag(server(), provider, sub, {}, { omit: [claim] }),
        400,
        "invalid_request",
      );
    }
    expect(
      await server().running.db.prisma.agentRegistration.count({ where: { providerSubject: sub } }),
    ).toBe(0);
  });

  it("refuses an ID-JAG whose e-mail or phone number is not verified", async () => {
    const sub = `user-${randomUUID()}`;
    expectOAuthError(
      await registerIdJag(server(), provider, sub, { email_verified: false }),
      400,
      "invalid_request",
    );
    expectOAuthError(
      await registerIdJag(server(), provider, sub, {}, { omit: ["email_verified"] }),
      400,
      "invalid_request",
    );
    expectOAuthError(
      await registerIdJag(server(), provider, sub, { email_verified: false, phone_number_verified: true }),
      401,
      "interaction_required",
    );
  });

  it("a jti is single-use: the same ID-JAG twice is replay_detected", async () => {
    const assertion = await provider.idJag(server().url, `user-${randomUUID()}`);
    expectOAuthError(await register(server(), assertion), 401, "interaction_required");
    expectOAuthError(await register(server(), assertion), 400, "replay_detected");
  });

  it("refuses an issuer no workspace trusts, and a forged iss", async () => {
    const stranger = await IdJagProvider.start();
    try {
      expectOAuthError(await registerIdJag(server(), stranger, "someone"), 400, "issuer_not_enabled");
      // Claiming the trusted issuer does not help: the stranger's key is not in its JWKS.
      expectOAuthError(
        await registerIdJag(server(), stranger, "someone", { iss: provider.issuer }),
        400,
        "invalid_signature",
      );
      expect(stranger.jwksFetches).toBe(0);
    } finally {
      await stranger.close();
    }
  });

  it("an unknown kid refetches the JWKS at most once a minute: a rotated-in key works, a kid still unknown is invalid_signature", async () => {
    // A provider of its own: no unknown kid of another test has used its set's refetch of the minute.
    const rotating = await trustedProvider(server(), await server().tenant({ plan: "pro" }));
    try {
      // Make sure the set is cached.
      expectOAuthError(
        await registerIdJag(server(), rotating, `user-${randomUUID()}`),
        401,
        "interaction_required",
      );
      const before = rotating.jwksFetches;
      const rotated = await rotating.addKey(true);
      expectOAuthError(
        await registerIdJag(server(), rotating, `user-${randomUUID()}`, {}, { kid: rotated }),
        401,
        "interaction_required",
      );
      expect(rotating.jwksFetches).toBe(before + 1);

      // Within the minute after that refetch, an unknown kid (the same or another) does not make Kontor fetch again.
      const ghost = await rotating.addKey(false);
      expectOAuthError(
        await registerIdJag(server(), rotating, `user-${randomUUID()}`, {}, { kid: ghost }),
        400,
        "invalid_signature",
      );
      expectOAuthError(
        await registerIdJag(server(), rotating, `user-${randomUUID()}`, {}, { kid: ghost }),
        400,
        "invalid_signature",
      );
      expectOAuthError(
        await registerIdJag(
          server(),
          rotating,
          `user-${randomUUID()}`,
          {},
          { kid: await rotating.addKey(false) },
        ),
        400,
        "invalid_signature",
      );
      expect(rotating.jwksFetches).toBe(before + 1);
    } finally {
      await rotating.close();
    }
  });

  it("another workspace trusting the same issuer with other keys cannot speak for, or revoke, this workspace's users", async () => {
    const sub = `user-${randomUUID()}`;
    const linked = await link(server(), tenant, provider, sub);
    const rogue = await IdJagProvider.start();
    try {
      const rogueTenant = await server().tenant({ plan: "pro" });
      const res = await rest(server().api, rogueTenant.key).post("/trusted-providers", {
        issuer: provider.issuer,
        jwks_url: rogue.jwksUrl,
      });
      expect(res.status).toBe(201);
      // Signed with the rogue keys under the real issuer: the victim's registration is not reached.
      const forged = await registerIdJag(server(), rogue, sub, { iss: provider.issuer });
      expectOAuthError(forged, 401, "interaction_required");
      expect(forged.json.registration_id).not.toBe(linked.registration_id);
      expect(
        (await notify(server(), await rogue.revokedSet(server().url, sub, { iss: provider.issuer }))).status,
      ).toBe(202);
      expect(await registrationStatus(linked.registration_id)).toBe("active");
      // The real provider still gets the real registration.
      expect((await registerIdJag(server(), provider, sub)).json.registration_id).toBe(
        linked.registration_id,
      );
    } finally {
      await rogue.close();
    }
  });

  it("refuses a symmetric or unsigned token even with a known kid", async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: provider.issuer,
      sub: "x",
      aud: server().url,
      iat: now,
      exp: now + 300,
      jti: randomUUID(),
      email_verified: true,
    };
    const hs = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", kid: provider.keys[0]!.kid, typ: "oauth-id-jag+jwt" })
      .sign(new TextEncoder().encode("a shared secret that is long enough"));
    expectOAuthError(await register(server(), hs), 400, "invalid_signature");
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${b64({ alg: "none", typ: "oauth-id-jag+jwt" })}.${b64(claims)}.`;
    expectOAuthError(await register(server(), unsigned), 400, "invalid_signature");
  });

  it.each([
    ["garbage", "not-a-jwt"],
    ["three garbage parts", "a.b.c"],
    [
      "a JSON header without iss",
      `${Buffer.from('{"alg":"ES256"}').toString("base64url")}.${Buffer.from("{}").toString("base64url")}.c2ln`,
    ],
  ])("refuses %s as invalid_request, never a 5xx", async (_label, assertion) => {
    expectOAuthError(await register(server(), assertion), 400, "invalid_request");
  });

  it("refuses bad requests: wrong assertion_type, missing or oversized assertion, bad scope, wrong content type", async () => {
    const assertion = await provider.idJag(server().url, `user-${randomUUID()}`);
    expectOAuthError(
      await register(server(), assertion, { assertion_type: "urn:ietf:params:oauth:token-type:jwt" }),
      400,
      "invalid_request",
    );
    expectOAuthError(
      await identity(server(), { type: "identity_assertion", assertion_type: ASSERTION_TYPE }),
      400,
      "invalid_request",
    );
    expectOAuthError(await register(server(), "x".repeat(20_000)), 400, "invalid_request");
    expectOAuthError(await register(server(), assertion, { scope: "agents.write" }), 400, "invalid_scope");
    expectOAuthError(await register(server(), assertion, { agent_name: 42 }), 400, "invalid_request");
    const wrongType = await fetch(`${server().url}/agent/identity`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ type: "identity_assertion", assertion_type: ASSERTION_TYPE, assertion }),
    });
    expect(wrongType.status).toBe(400);
    expect((await wrongType.json()).error).toBe("invalid_request");
    // None of these spent the jti: the assertion still works.
    expectOAuthError(await register(server(), assertion), 401, "interaction_required");
  });

  it("a narrower scope is what the agent gets once linked", async () => {
    const sub = `user-${randomUUID()}`;
    const first = await register(server(), await provider.idJag(server().url, sub), {
      scope: "leads.read clients.read",
    });
    const { userId } = await personOf(server(), tenant, sub);
    expect(
      await decide(server(), first.json.claim, userId, { workspaceId: tenant.workspaceId }),
    ).toMatchObject({ outcome: "approved" });
    const linked = await registerIdJag(server(), provider, sub);
    expect(linked.json.scopes).toEqual(["leads.read", "clients.read"]);
  });

  describe("max_auth_age", () => {
    let strict: IdJagProvider;
    beforeAll(async () => {
      strict = await trustedProvider(server(), await server().tenant({ plan: "pro" }), 600);
    });
    afterAll(() => strict?.close());

    it("a missing or stale auth_time is login_required; a fresh one passes", async () => {
      const now = Math.floor(Date.now() / 1000);
      expectOAuthError(await registerIdJag(server(), strict, "u1"), 401, "login_required");
      expectOAuthError(
        await registerIdJag(server(), strict, "u1", { auth_time: now - 3600 }),
        401,
        "login_required",
      );
      expectOAuthError(
        await registerIdJag(server(), strict, "u1", { auth_time: now - 60 }),
        401,
        "interaction_required",
      );
    });

    it("without max_auth_age, auth_time is not checked (days old is fine)", async () => {
      const old = Math.floor(Date.now() / 1000) - 10 * 24 * 3600;
      expectOAuthError(
        await registerIdJag(server(), provider, `user-${randomUUID()}`, { auth_time: old }),
        401,
        "interaction_required",
      );
    });
  });

  describe("workspace settings and plan caps", () => {
    let plus: Tenant;
    let capped: IdJagProvider;
    beforeAll(async () => {
      plus = await server().tenant({ plan: "plus" });
      capped = await trustedProvider(server(), plus);
    });
    afterAll(() => capped?.close());

    it("agent auth off: agent_auth_disabled (403), for new and linked users alike", async () => {
      const owner = rest(server().api, plus.key);
      const linked = await link(server(), plus, capped, "linked-user");
      await owner.patch("/agent-settings", { agent_auth_enabled: false });
      try {
        expectOAuthError(await registerIdJag(server(), capped, "new-user"), 403, "agent_auth_disabled");
        expectOAuthError(await registerIdJag(server(), capped, "linked-user"), 403, "agent_auth_disabled");
      } finally {
        await owner.patch("/agent-settings", { agent_auth_enabled: true });
      }
      const back = await registerIdJag(server(), capped, "linked-user");
      expect(back.json.registration_id).toBe(linked.registration_id);
    });

    it("a new user is refused with plan_limit_reached once the workspace has its plan's agents; one fewer still links", async () => {
      const prisma = server().running.db.prisma;
      const cap = PLAN_LIMITS.plus.agent_registrations;
      const active = await prisma.agentRegistration.count({
        where: { workspaceId: plus.workspaceId, status: "active" },
      });
      const fill = async (n: number) => {
        for (let i = 0; i < n; i++) {
          await prisma.agentRegistration.create({
            data: {
              id: newId("agentRegistration"),
              workspaceId: plus.workspaceId,
              type: "service_auth",
              status: "active",
              scopes: [],
              postClaimScopes: [],
            },
          });
        }
      };
      await fill(cap - 1 - active);
      expectOAuthError(await registerIdJag(server(), capped, "ninth-or-tenth"), 401, "interaction_required");
      await fill(1);
      expectOAuthError(await registerIdJag(server(), capped, "one-too-many"), 403, "plan_limit_reached");
      // A user already linked keeps working at the cap.
      expect((await registerIdJag(server(), capped, "linked-user")).status).toBe(200);
    });

    it("deleting the trusted provider refuses its ID-JAGs, even for linked users", async () => {
      const other = await server().tenant({ plan: "pro" });
      const gone = await IdJagProvider.start();
      try {
        const id = await trust(server(), other, gone);
        await link(server(), other, gone, "soon-gone");
        expect((await rest(server().api, other.key).delete(`/trusted-providers/${id}`)).status).toBe(200);
        expectOAuthError(await registerIdJag(server(), gone, "soon-gone"), 400, "issuer_not_enabled");
      } finally {
        await gone.close();
      }
    });
  });

  describe("security event tokens (RFC 8935)", () => {
    it("an assertion-revoked SET revokes the user's registration and its tokens: 202", async () => {
      const sub = `user-${randomUUID()}`;
      const linked = await link(server(), tenant, provider, sub);
      const tokens = granted(
        await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: linked.identity_assertion }),
      );
      const agent = rest(server().api, tokens.access_token);
      expect((await agent.get("/workspace")).status).toBe(200);

      const response = await notify(server(), await provider.revokedSet(server().url, sub));
      expect(response.status).toBe(202);
      expect(await response.text()).toBe("");
      expect(await registrationStatus(linked.registration_id)).toBe("revoked");
      const refused = await eventually(
        () => agent.get("/workspace"),
        (res) => res.status === 401,
        8_000,
      );
      expect(refused.status).toBe(401);
      const exchange = await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, {
        assertion: linked.identity_assertion,
      });
      expect(exchange.ok).toBe(false);

      // The provider's next ID-JAG for that user starts over: the user confirms again.
      const next = await registerIdJag(server(), provider, sub);
      expectOAuthError(next, 401, "interaction_required");
      expect(next.json.registration_id).not.toBe(linked.registration_id);
    });

    it("accepts application/logout+jwt with typ logout+jwt, aud {base_url}, and the subject inside the event", async () => {
      const sub = `user-${randomUUID()}`;
      const linked = await link(server(), tenant, provider, sub);
      const set = await provider.revokedSet(
        server().api,
        sub,
        { events: { [REVOKED_EVENT]: { subject: { format: "iss_sub", iss: provider.issuer, sub } } } },
        { typ: "logout+jwt", omit: ["sub"] },
      );
      expect((await notify(server(), set, "application/logout+jwt")).status).toBe(202);
      expect(await registrationStatus(linked.registration_id)).toBe("revoked");
    });

    it("a SET for a user nobody linked is accepted and changes nothing", async () => {
      expect(
        (await notify(server(), await provider.revokedSet(server().url, `nobody-${randomUUID()}`))).status,
      ).toBe(202);
    });

    it("refuses a wrong typ, a wrong aud, an expired SET, a missing iat and a replayed jti", async () => {
      const sub = `user-${randomUUID()}`;
      const linked = await link(server(), tenant, provider, sub);
      await expectSetError(
        await notify(server(), await provider.revokedSet(server().url, sub, {}, { typ: "JWT" })),
        "invalid_request",
      );
      await expectSetError(
        await notify(server(), await provider.revokedSet("http://127.0.0.1:1/elsewhere", sub)),
        "invalid_audience",
      );
      const past = Math.floor(Date.now() / 1000) - 3600;
      await expectSetError(
        await notify(server(), await provider.revokedSet(server().url, sub, { iat: past - 60, exp: past })),
        "invalid_request",
      );
      await expectSetError(
        await notify(server(), await provider.revokedSet(server().url, sub, { iat: past - 7200 })),
        "invalid_request",
      );
      await expectSetError(
        await notify(server(), await provider.revokedSet(server().url, sub, {}, { omit: ["iat"] })),
        "invalid_request",
      );
      await expectSetError(
        await notify(
          server(),
          await provider.revokedSet(server().url, sub, { events: { "https://example.com/other": {} } }),
        ),
        "invalid_request",
      );
      await expectSetError(
        await notify(server(), await provider.revokedSet(server().url, sub, {}, { omit: ["jti"] })),
        "invalid_request",
      );
      expect(await registrationStatus(linked.registration_id)).toBe("active");

      const set = await provider.revokedSet(server().url, sub);
      expect((await notify(server(), set)).status).toBe(202);
      await expectSetError(await notify(server(), set), "invalid_request");
    });

    it("refuses an unknown issuer and an unknown kid", async () => {
      const stranger = await IdJagProvider.start();
      try {
        await expectSetError(
          await notify(server(), await stranger.revokedSet(server().url, "x")),
          "invalid_issuer",
        );
        await expectSetError(
          await notify(server(), await stranger.revokedSet(server().url, "x", { iss: provider.issuer })),
          "invalid_key",
        );
        const ghost = await provider.addKey(false);
        await expectSetError(
          await notify(server(), await provider.revokedSet(server().url, "x", {}, { kid: ghost })),
          "invalid_key",
        );
      } finally {
        await stranger.close();
      }
    });

    it("refuses a wrong content type, an empty, garbage or oversized body", async () => {
      const set = await provider.revokedSet(server().url, "x");
      await expectSetError(await notify(server(), set, "application/json"), "invalid_request");
      await expectSetError(await notify(server(), set, "application/jwt"), "invalid_request");
      await expectSetError(await notify(server(), ""), "invalid_request");
      await expectSetError(await notify(server(), "garbage"), "invalid_request");
      await expectSetError(await notify(server(), "a.b.c"), "invalid_request");
      // Over the agent protocol's 64 KiB body limit (docs/api/limits.md): 413 before it is read, in the receiver's shape.
      const huge = await notify(server(), "x".repeat(70_000));
      expect(huge.status).toBe(413);
      expect((await huge.json()).err).toBe("payload_too_large");
      const get = await fetch(`${server().url}/agent/event/notify`);
      expect(get.status).toBe(405);
      expect(get.headers.get("allow")).toBe("POST");
      // None of them spent the jti.
      expect((await notify(server(), set)).status).toBe(202);
    });
  });
});
