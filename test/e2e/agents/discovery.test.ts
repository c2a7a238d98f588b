import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  generateKeyPair,
  type JWK,
  jwtVerify,
  SignJWT,
} from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { startClaimAttempt } from "../../../server/agents/claims.ts";
import { KEY_PUBLISH_LEAD_MS, SigningKeys } from "../../../server/agents/keys.ts";
import { SecretBox } from "../../../server/webhooks/secrets.ts";
import { call, raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import { AGENT_SCOPE_CATALOG, expectOAuthError, signingKeys } from "./support.ts";

const CLAIM_GRANT = "urn:kontor:agent-auth:grant-type:claim";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const REVOKED_EVENT = "https://schemas.workos.com/events/agent/auth/identity/assertion/revoked";
const insecure = { [oauth.allowInsecureRequests]: true };

e2e("agent discovery", (server) => {
  const host = () => server().url;

  describe("protected-resource metadata (RFC 9728)", () => {
    it("is the same document at both locations, with a logo this server serves", async () => {
      const apiSpecPath = await raw(`${host()}/v1/.well-known/oauth-protected-resource`);
      const rfcPath = await raw(`${host()}/.well-known/oauth-protected-resource/v1`);
      expect(apiSpecPath.status).toBe(200);
      expect(rfcPath.json).toEqual(apiSpecPath.json);
      expect(apiSpecPath.json).toMatchObject({
        resource: `${host()}/v1`,
        resource_name: expect.any(String),
        authorization_servers: [host()],
        bearer_methods_supported: ["header"],
        resource_documentation: `${host()}/auth.md`,
        resource_logo_uri: `${host()}/logo.svg`,
      });
      const logo = await fetch(apiSpecPath.json.resource_logo_uri);
      expect(logo.status).toBe(200);
      expect(logo.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
      expect(await logo.text()).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect((await fetch(apiSpecPath.json.resource_logo_uri, { method: "POST" })).status).toBe(405);
    });

    it("is accepted by oauth4webapi's resource discovery", async () => {
      const resource = new URL(`${host()}/v1`);
      const response = await oauth.resourceDiscoveryRequest(resource, insecure);
      expect(response.url).toBe(`${host()}/.well-known/oauth-protected-resource/v1`);
      const metadata = await oauth.processResourceDiscoveryResponse(resource, response);
      expect(metadata.authorization_servers).toEqual([host()]);
    });

    it("refuses a resource it is not (oauth4webapi checks the resource identifier)", async () => {
      const other = new URL(`${host()}/v2`);
      const response = await fetch(`${host()}/.well-known/oauth-protected-resource/v1`);
      await expect(oauth.processResourceDiscoveryResponse(other, response)).rejects.toMatchObject({
        code: oauth.JSON_ATTRIBUTE_COMPARISON,
      });
    });
  });

  describe("authorization-server metadata (RFC 8414)", () => {
    it("is reached from a 401's challenge and accepted by oauth4webapi's discovery", async () => {
      const challenged = await call("GET", `${host()}/v1/leads`);
      expect(challenged.status).toBe(401);
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(
        challenged.headers.get("www-authenticate") ?? "",
      )?.[1];
      expect(metadataUrl).toBe(`${host()}/v1/.well-known/oauth-protected-resource`);
      const resource = (await raw(metadataUrl!)).json;

      const issuer = new URL(resource.authorization_servers[0]);
      const response = await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure });
      expect(response.url).toBe(`${host()}/.well-known/oauth-authorization-server`);
      expect(response.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
      const as = await oauth.processDiscoveryResponse(issuer, response);
      expect(as.issuer).toBe(host());
      expect(as.token_endpoint).toBe(`${host()}/oauth2/token`);
      expect(as.revocation_endpoint).toBe(`${host()}/oauth2/revoke`);
      expect(as.jwks_uri).toBe(`${host()}/.well-known/jwks.json`);
    });

    it("holds every field of the contract, agent_auth block included", async () => {
      const res = await raw(`${host()}/.well-known/oauth-authorization-server`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      const url = host();
      expect(res.json).toEqual({
        issuer: url,
        token_endpoint: `${url}/oauth2/token`,
        revocation_endpoint: `${url}/oauth2/revoke`,
        jwks_uri: `${url}/.well-known/jwks.json`,
        grant_types_supported: [CLAIM_GRANT, JWT_BEARER],
        response_types_supported: [],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"],
        scopes_supported: expect.any(Array),
        service_documentation: `${url}/auth.md`,
        protected_resources: [`${url}/v1`],
        resource: url,
        authorization_servers: [url],
        bearer_methods_supported: ["header"],
        agent_auth: {
          skill: `${url}/auth.md`,
          identity_endpoint: `${url}/agent/identity`,
          claim_endpoint: `${url}/agent/identity/claim`,
          events_endpoint: `${url}/agent/event/notify`,
          register_uri: `${url}/agent/auth`,
          claim_uri: `${url}/agent/identity/claim`,
          revocation_uri: `${url}/agent/auth/revoke`,
          identity_types_supported: ["service_auth", "anonymous", "identity_assertion"],
          identity_types: {
            service_auth: { credential_types_supported: ["access_token"] },
            anonymous: { credential_types_supported: ["access_token"] },
            identity_assertion: { credential_types_supported: ["access_token"] },
          },
          identity_assertion: { assertion_types_supported: ["urn:ietf:params:oauth:token-type:id-jag"] },
          claim_grant_type: CLAIM_GRANT,
          events_supported: [REVOKED_EVENT],
        },
      });
      // What an agent can hold: the catalog without agents.*.
      expect([...res.json.scopes_supported].sort()).toEqual([...AGENT_SCOPE_CATALOG].sort());
    });

    it("is the same whatever credential comes with the request", async () => {
      const anonymous = await raw(`${host()}/.well-known/oauth-authorization-server`);
      const { key } = await server().tenant();
      for (const authorization of ["Bearer garbage", `Bearer ${key}`, "Basic Zm9vOmJhcg=="]) {
        const res = await raw(`${host()}/.well-known/oauth-authorization-server`, {
          headers: { authorization },
        });
        expect(res.status, authorization).toBe(200);
        expect(res.json).toEqual(anonymous.json);
      }
    });

    it("refuses a discovery that expects another issuer", async () => {
      const response = await oauth.discoveryRequest(new URL(host()), { algorithm: "oauth2", ...insecure });
      await expect(
        oauth.processDiscoveryResponse(new URL("http://127.0.0.1:1/"), response),
      ).rejects.toMatchObject({
        code: oauth.JSON_ATTRIBUTE_COMPARISON,
      });
    });

    it("answers other methods on the discovery documents with an RFC 6749-shaped 405", async () => {
      for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/jwks.json", "/auth.md"]) {
        for (const method of ["POST", "PUT", "DELETE"]) {
          const res = await raw(`${host()}${path}`, {
            method,
            headers: { "content-type": "application/json" },
            body: "{}",
          });
          expectOAuthError(res, 405, "method_not_allowed");
          expect(res.headers.get("allow")).toBe("GET");
        }
      }
      const head = await fetch(`${host()}/.well-known/oauth-authorization-server`, { method: "HEAD" });
      expect(head.status).toBe(200);
    });
  });

  describe("JWKS", () => {
    it("publishes only public ES256 P-256 keys, and an assertion Kontor signs verifies against it", async () => {
      const keys = signingKeys(server());
      const assertion = await keys.sign(
        {},
        { issuer: host(), audience: host(), subject: "areg_test", expiresInSeconds: 60 },
      );

      const res = await raw(`${host()}/.well-known/jwks.json`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/(jwk-set\+)?json/);
      expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
      expect(res.json.keys.length).toBeGreaterThanOrEqual(1);
      for (const key of res.json.keys as JWK[]) {
        expect(key).toMatchObject({
          kty: "EC",
          crv: "P-256",
          alg: "ES256",
          use: "sig",
          kid: expect.any(String),
        });
        expect(key).not.toHaveProperty("d");
      }

      const remote = createRemoteJWKSet(new URL(`${host()}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(assertion, remote, {
        issuer: host(),
        audience: host(),
        algorithms: ["ES256"],
      });
      expect(payload.sub).toBe("areg_test");
      expect(res.json.keys.map((key: JWK) => key.kid)).toContain(protectedHeader.kid);
    });

    it("does not verify a JWT signed by any other key, even one claiming a published kid", async () => {
      const published = (await raw(`${host()}/.well-known/jwks.json`)).json;
      const { privateKey } = await generateKeyPair("ES256");
      const forged = await new SignJWT({ sub: "areg_test" })
        .setProtectedHeader({ alg: "ES256", kid: published.keys[0].kid })
        .setIssuer(host())
        .setAudience(host())
        .setExpirationTime("1m")
        .sign(privateKey);
      await expect(
        jwtVerify(forged, createLocalJWKSet(published), { issuer: host(), audience: host() }),
      ).rejects.toMatchObject({
        code: "ERR_JWS_SIGNATURE_VERIFICATION_FAILED",
      });
    });
  });

  describe("the auth.md guide", () => {
    it("is Markdown rendered with this deployment's URLs and constants", async () => {
      const res = await fetch(`${host()}/auth.md`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/markdown; charset=utf-8");
      const text = await res.text();
      expect(text).toMatch(/^# /);
      expect(text).not.toMatch(/\{\{\w+\}\}/);
      for (const needle of [
        `${host()}/.well-known/oauth-authorization-server`,
        `${host()}/agent/identity`,
        `${host()}/agent/identity/claim`,
        `${host()}/oauth2/token`,
        `${host()}/oauth2/revoke`,
        `${host()}/.well-known/jwks.json`,
        `${host()}/v1`,
        `${host()}/graphql`,
        CLAIM_GRANT,
        JWT_BEARER,
        '"type": "service_auth"',
        '"type": "anonymous"',
        '"type": "identity_assertion"',
        "authorization_pending",
        "slow_down",
        "expired_token",
        "access_denied",
        "verification_uri",
        "user_code",
        "interval",
        "plan_limit_reached",
        // The plan caps table, rendered from the plan limits.
        "| free | 3 | 2 | 1 h | 0 |",
        "| max | 200 | 25 | 24 h | 10 |",
      ]) {
        expect(text, needle).toContain(needle);
      }
      for (const scope of AGENT_SCOPE_CATALOG) expect(text).toContain(`\`${scope}\``);
      expect(text).not.toContain("`agents.read`");
    });

    it("names only URLs this server answers", async () => {
      const text = await (await fetch(`${host()}/auth.md`)).text();
      const escaped = host().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const found = [...text.matchAll(new RegExp(`${escaped}[^\\s"'\`<>)\\]]*`, "g"))].map((m) =>
        m[0].replace(/[.,:;]+$/, ""),
      );
      // The bare origin is the issuer identifier (RFC 8414), not a document.
      const urls = [...new Set(found)].filter((url) => url !== host());
      expect(urls.length).toBeGreaterThan(10);

      // The claim page link is only served with a live attempt token: check it with a real one.
      const placeholders = urls.filter((url) => url.includes("…"));
      expect(
        placeholders.every((url) => url.startsWith(`${host()}/agent/claim?claim_attempt_token=`)),
        placeholders.join(" "),
      ).toBe(true);
      const { workspaceId } = await server().tenant();
      const registration = await server().running.db.prisma.agentRegistration.create({
        data: {
          id: newId("agentRegistration"),
          workspaceId,
          type: "service_auth",
          status: "pending",
          scopes: [],
          postClaimScopes: ["leads.read"],
        },
      });
      const { claim } = await startClaimAttempt(server().running.db.prisma, {
        registrationId: registration.id,
        loginHint: null,
        hostUrl: host(),
      });
      expect(claim.verification_uri.startsWith(`${host()}/agent/claim?claim_attempt_token=`)).toBe(true);

      const unanswered: string[] = [];
      for (const url of [...urls.filter((url) => !url.includes("…")), claim.verification_uri]) {
        const res = await fetch(url, { redirect: "manual" });
        await res.arrayBuffer();
        if (res.status === 404 || res.status >= 500) unanswered.push(`${url} → ${res.status}`);
      }
      expect(unanswered).toEqual([]);
    });
  });
});

// A suite of its own: the server's key cache must first read the key set after the rotation.
e2e("agent signing-key rotation", (server) => {
  it("publishes a new key before it signs, keeps the old key published after: old assertions verify, new ones carry the new kid", async () => {
    const host = server().url;
    const prisma = server().running.db.prisma;
    const keys = signingKeys(server());
    const before = await keys.sign(
      {},
      { issuer: host, audience: host, subject: "areg_old", expiresInSeconds: 600 },
    );
    const oldKid = decodeProtectedHeader(before).kid;
    const newKid = await keys.rotate();
    expect(newKid).not.toBe(oldKid);
    // For KEY_PUBLISH_LEAD_MS the new key is only published: caches of the key set catch up first.
    const during = await keys.sign(
      {},
      { issuer: host, audience: host, subject: "areg_during", expiresInSeconds: 600 },
    );
    expect(decodeProtectedHeader(during).kid).toBe(oldKid);
    expect((await keys.jwks()).keys.map((key) => key.kid).sort()).toEqual([oldKid, newKid].sort());

    // That time has passed: the new key signs, the old one no longer does.
    const past = (ms: number) => new Date(Date.now() - ms);
    await prisma.signingKey.update({
      where: { id: newKid },
      data: { createdAt: past(KEY_PUBLISH_LEAD_MS + 1000) },
    });
    await prisma.signingKey.update({ where: { id: oldKid! }, data: { retiredAt: past(1000) } });
    const after = await signingKeys(server()).sign(
      {},
      { issuer: host, audience: host, subject: "areg_new", expiresInSeconds: 600 },
    );
    expect(decodeProtectedHeader(after).kid).toBe(newKid);

    // Every process publishes the new key within seconds (its key set is read at most 5 s old).
    const published = await eventually(
      async () => (await raw(`${host}/.well-known/jwks.json`)).json,
      (doc) => doc.keys.length === 2,
    );
    expect(published.keys.map((key: JWK) => key.kid).sort()).toEqual([oldKid, newKid].sort());
    const jwks = createRemoteJWKSet(new URL(`${host}/.well-known/jwks.json`));
    expect((await jwtVerify(before, jwks, { issuer: host, audience: host })).payload.sub).toBe("areg_old");
    expect((await jwtVerify(after, jwks, { issuer: host, audience: host })).payload.sub).toBe("areg_new");

    // A key retired longer ago than an assertion lives is no longer published.
    await server().running.db.prisma.signingKey.update({
      where: { id: oldKid! },
      data: { retiredAt: new Date(Date.now() - 31 * 24 * 3600 * 1000) },
    });
    const fresh = signingKeys(server());
    expect((await fresh.jwks()).keys.map((key) => key.kid)).toEqual([newKid]);
    await expect(fresh.verify(before, { issuer: host, audience: host })).rejects.toThrow();
  });

  it("after the server secret changes, the old key still verifies what it signed and a new key signs", async () => {
    const host = server().url;
    const prisma = server().running.db.prisma;
    const before = await signingKeys(server()).sign(
      {},
      { issuer: host, audience: host, subject: "areg_before", expiresInSeconds: 600 },
    );
    const oldKid = decodeProtectedHeader(before).kid;
    // Another KONTOR_SECRET_KEY: no private half of the existing keys can be opened with it.
    const other = new SigningKeys(
      prisma,
      new SecretBox("another server secret, at least 32 characters long", "kontor/agent-signing-keys"),
    );
    const after = await other.sign(
      {},
      { issuer: host, audience: host, subject: "areg_after", expiresInSeconds: 600 },
    );
    expect(decodeProtectedHeader(after).kid).not.toBe(oldKid);
    expect((await other.verify(before, { issuer: host, audience: host })).payload.sub).toBe("areg_before");
    expect((await other.jwks()).keys.map((key) => key.kid)).toContain(oldKid);
  });
});
