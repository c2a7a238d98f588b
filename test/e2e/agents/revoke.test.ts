import { generateKeyPair, SignJWT } from "jose";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { SigningKeys } from "../../../server/agents/keys.ts";
import { issueAgentToken } from "../../../server/auth/agent-tokens.ts";
import { SecretBox, serverSecret } from "../../../server/webhooks/secrets.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { call, raw } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const insecure = { [oauth.allowInsecureRequests]: true };
const client: oauth.Client = { client_id: "agent-revoke-test" };

function signingKeys(server: TestServer): SigningKeys {
  return new SigningKeys(
    server.running.db.prisma,
    new SecretBox(serverSecret(server.config), "kontor/agent-signing-keys"),
  );
}

/** An active registration in a new workspace, with `tokens` access tokens (registration is another part's). */
async function registration(server: TestServer, tokens = 1) {
  const { workspaceId } = await server.tenant();
  const prisma = server.running.db.prisma;
  const row = await prisma.agentRegistration.create({
    data: {
      id: newId("agentRegistration"),
      workspaceId,
      type: "service_auth",
      status: "active",
      agentName: "Revocation test",
      scopes: ["leads.read"],
      postClaimScopes: ["leads.read"],
      claimedAt: new Date(),
    },
  });
  const issued = [];
  for (let i = 0; i < tokens; i++) {
    issued.push(
      await issueAgentToken(prisma, {
        registrationId: row.id,
        workspaceId,
        scopes: ["leads.read"],
        lifetimeSeconds: 3600,
      }),
    );
  }
  return { id: row.id, workspaceId, tokens: issued.map((token) => token.token) };
}

async function assertionFor(
  server: TestServer,
  registrationId: string,
  options: { audience?: string; expiresInSeconds?: number } = {},
) {
  return signingKeys(server).sign(
    {},
    {
      issuer: server.url,
      audience: options.audience ?? server.url,
      subject: registrationId,
      expiresInSeconds: options.expiresInSeconds ?? 600,
    },
  );
}

const status = async (url: string, token: string) =>
  (await call("GET", `${url}/v1/leads`, { key: token })).status;

/**
 * Polls until `token` is refused on `url` (bounded); how long after `since` the refused request was
 * sent, so a slow answer on a busy machine is not counted against the server's cache.
 */
async function refusedAfter(url: string, token: string, since: number, boundMs = 10_000): Promise<number> {
  for (;;) {
    const elapsed = Date.now() - since;
    const res = await call("GET", `${url}/v1/leads`, { key: token });
    if (res.status === 401) {
      expect(res.body.error).toMatchObject({ type: "authentication_error", code: "invalid_token" });
      const graphql = await fetch(`${url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ query: "{ workspace { id } }" }),
      });
      expect(graphql.status).toBe(401);
      return elapsed;
    }
    expect(res.status).toBe(200);
    if (elapsed > boundMs) return elapsed;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function revokeForm(host: string, body: string, contentType = "application/x-www-form-urlencoded") {
  return raw(`${host}/oauth2/revoke`, { method: "POST", headers: { "content-type": contentType }, body });
}

e2e("agent revocation", (server, stack) => {
  const host = () => server().url;
  const prisma = () => server().running.db.prisma;
  let as: oauth.AuthorizationServer;

  beforeAll(async () => {
    const issuer = new URL(host());
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }),
    );
  });

  const revoke = async (token: string, hint?: string) => {
    const response = await oauth.revocationRequest(as, client, oauth.None(), token, {
      ...insecure,
      ...(hint && { additionalParameters: { token_type_hint: hint } }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    await oauth.processRevocationResponse(response);
  };

  describe("an access token", () => {
    it("is revoked through oauth4webapi's revocation request, and only that token", async () => {
      const reg = await registration(server(), 2);
      const [revoked, kept] = reg.tokens as [string, string];
      expect(await status(host(), revoked)).toBe(200);

      const since = Date.now();
      await revoke(revoked, "access_token");
      const rows = await prisma().agentToken.findMany({
        where: { registrationId: reg.id },
        orderBy: { createdAt: "asc" },
      });
      expect(rows.filter((row) => row.revokedAt !== null)).toHaveLength(1);
      expect(await refusedAfter(host(), revoked, since)).toBeLessThanOrEqual(5_000);

      expect(await status(host(), kept)).toBe(200);
      const registrationRow = await prisma().agentRegistration.findUniqueOrThrow({ where: { id: reg.id } });
      expect(registrationRow).toMatchObject({ status: "active", revokedAt: null });
    });

    it("answers 200 again for a token already revoked, and for tokens it never issued", async () => {
      const reg = await registration(server());
      await revoke(reg.tokens[0]!);
      const first = await prisma().agentToken.findFirstOrThrow({ where: { registrationId: reg.id } });
      await revoke(reg.tokens[0]!);
      const second = await prisma().agentToken.findFirstOrThrow({ where: { registrationId: reg.id } });
      expect(second.revokedAt).toEqual(first.revokedAt);

      for (const unknown of [`ktr_agt_${"A".repeat(43)}`, "ktr_live_not-a-token", "clm_whatever", "x"])
        await revoke(unknown);
      // Whatever the hint says, the token is found by its shape.
      const other = await registration(server());
      await revoke(other.tokens[0]!, "refresh_token");
      expect(
        (await prisma().agentToken.findFirstOrThrow({ where: { registrationId: other.id } })).revokedAt,
      ).not.toBeNull();
    });
  });

  describe("an identity assertion", () => {
    it("revokes the whole registration and every token it holds, and nothing else", async () => {
      const reg = await registration(server(), 3);
      const bystander = await registration(server());
      for (const token of [...reg.tokens, ...bystander.tokens]) expect(await status(host(), token)).toBe(200);

      const since = Date.now();
      await revoke(await assertionFor(server(), reg.id));

      const row = await prisma().agentRegistration.findUniqueOrThrow({
        where: { id: reg.id },
        include: { tokens: true },
      });
      expect(row.status).toBe("revoked");
      expect(row.revokedAt).not.toBeNull();
      expect(row.tokens.every((token) => token.revokedAt !== null)).toBe(true);
      for (const token of reg.tokens)
        expect(await refusedAfter(host(), token, since)).toBeLessThanOrEqual(5_000);

      expect(await status(host(), bystander.tokens[0]!)).toBe(200);
      expect(
        (await prisma().agentRegistration.findUniqueOrThrow({ where: { id: bystander.id } })).status,
      ).toBe("active");

      // A token issued to the registration afterwards is dead on arrival (the resolver checks the registration).
      const late = await issueAgentToken(prisma(), {
        registrationId: reg.id,
        workspaceId: reg.workspaceId,
        scopes: ["leads.read"],
        lifetimeSeconds: 600,
      });
      expect(await status(host(), late.token)).toBe(401);
      // Revoking it again changes nothing and still answers 200.
      await revoke(await assertionFor(server(), reg.id));
      expect(
        (await prisma().agentRegistration.findUniqueOrThrow({ where: { id: reg.id } })).revokedAt,
      ).toEqual(row.revokedAt);
    });

    it("does nothing, with 200, for assertions Kontor did not sign or that are no longer valid", async () => {
      const reg = await registration(server(), 1);
      const { privateKey } = await generateKeyPair("ES256");
      const published = (await raw(`${host()}/.well-known/jwks.json`)).json;
      const forge = (kid?: string) =>
        new SignJWT({})
          .setProtectedHeader({ alg: "ES256", ...(kid && { kid }) })
          .setIssuer(host())
          .setAudience(host())
          .setSubject(reg.id)
          .setIssuedAt()
          .setExpirationTime("5m")
          .sign(privateKey);
      const keys = signingKeys(server());
      const signed = (options: {
        issuer?: string;
        audience?: string;
        subject?: string;
        expiresInSeconds?: number;
      }) =>
        keys.sign(
          {},
          {
            issuer: options.issuer ?? host(),
            audience: options.audience ?? host(),
            subject: options.subject ?? reg.id,
            expiresInSeconds: options.expiresInSeconds ?? 600,
          },
        );
      const valid = await signed({});
      const [header, payload] = valid.split(".");

      const refused = {
        "a foreign key claiming a published kid": await forge(published.keys[0].kid),
        "a foreign key with its own kid": await forge("sk_unknown"),
        "no kid": await forge(),
        "Kontor's key, expired": await signed({ expiresInSeconds: -60 }),
        "Kontor's key, another audience": await signed({ audience: `${host()}/v1` }),
        "Kontor's key, another issuer": await signed({ issuer: "http://127.0.0.1:1" }),
        "Kontor's key, a subject that is no registration": await signed({ subject: "usr_someone" }),
        "a valid header and payload with a mangled signature": `${header}.${payload}.${"A".repeat(86)}`,
        "alg none": `${Buffer.from(JSON.stringify({ alg: "none" })).toString("base64url")}.${payload}.`,
        "a kid that is not a string": `${Buffer.from(JSON.stringify({ alg: "ES256", kid: 123 })).toString("base64url")}.${payload}.${"A".repeat(86)}`,
        "a kid of 1 000 characters": `${Buffer.from(JSON.stringify({ alg: "ES256", kid: "k".repeat(1_000) })).toString("base64url")}.${payload}.AAAA`,
        "garbage in JWT shape": "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln",
        "undecodable header": "!!!.???.***",
        "three dots": "a.b.c.d",
      };
      for (const [name, token] of Object.entries(refused)) {
        const res = await revokeForm(host(), new URLSearchParams({ token }).toString());
        expect(res.status, name).toBe(200);
      }
      const row = await prisma().agentRegistration.findUniqueOrThrow({
        where: { id: reg.id },
        include: { tokens: true },
      });
      expect(row).toMatchObject({ status: "active", revokedAt: null });
      expect(row.tokens[0]!.revokedAt).toBeNull();
      expect(await status(host(), reg.tokens[0]!)).toBe(200);
    });
  });

  describe("malformed requests", () => {
    it("answer 400 invalid_request, RFC 6749-shaped, and revoke nothing", async () => {
      const reg = await registration(server());
      const token = reg.tokens[0]!;
      const cases: Array<[string, () => ReturnType<typeof raw>]> = [
        ["JSON body", () => revokeForm(host(), JSON.stringify({ token }), "application/json")],
        ["no content type", () => raw(`${host()}/oauth2/revoke`, { method: "POST", body: `token=${token}` })],
        [
          "multipart",
          () => {
            const form = new FormData();
            form.set("token", token);
            return raw(`${host()}/oauth2/revoke`, { method: "POST", body: form });
          },
        ],
        ["no token", () => revokeForm(host(), "token_type_hint=access_token")],
        ["empty token", () => revokeForm(host(), "token=")],
        ["empty body", () => revokeForm(host(), "")],
        ["token twice", () => revokeForm(host(), `token=${token}&token=${token}`)],
        [
          "token with control characters",
          () => revokeForm(host(), `token=${encodeURIComponent(`${token}\n`)}`),
        ],
        ["empty hint", () => revokeForm(host(), `token=${token}&token_type_hint=`)],
        ["oversized token", () => revokeForm(host(), `token=${"a".repeat(10_000)}`)],
      ];
      for (const [name, send] of cases) {
        const res = await send();
        expect(res.status, `${name}: ${res.text}`).toBe(400);
        expect(res.headers.get("cache-control"), name).toBe("no-store");
        expect(res.json, name).toMatchObject({
          error: "invalid_request",
          error_description: expect.any(String),
          request_id: expect.any(String),
        });
        expect(res.headers.get("x-request-id"), name).toBe(res.json.request_id);
      }
      // A body over the agent protocol's 64 KiB (docs/api/limits.md) is 413 before it is read, in the same shape.
      const huge = await revokeForm(host(), `token=${token}&padding=${"a".repeat(70 * 1024)}`);
      expect(huge.status, huge.text).toBe(413);
      expect(huge.headers.get("cache-control")).toBe("no-store");
      expect(huge.json).toMatchObject({
        error: "payload_too_large",
        error_description: expect.any(String),
        request_id: huge.headers.get("x-request-id"),
      });
      expect(await status(host(), token)).toBe(200);
    });

    it("answer other methods with 405 and Allow: POST", async () => {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const res = await raw(`${host()}/oauth2/revoke`, { method });
        expect(res.status, method).toBe(405);
        expect(res.headers.get("allow")).toBe("POST");
        expect(res.json).toMatchObject({
          error: "method_not_allowed",
          error_description: expect.any(String),
        });
      }
    });

    it("are refused by oauth4webapi as errors it can read", async () => {
      const response = await fetch(`${host()}/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "",
      });
      await expect(oauth.processRevocationResponse(response)).rejects.toMatchObject({
        error: "invalid_request",
      });
    });
  });

  // A separate OS process on the same PostgreSQL database: what it cached must not outlive 5 s.
  describe(`on every process (${stack === "postgres" ? "two processes" : "one process"})`, () => {
    let child: ChildServer | undefined;

    beforeAll(async () => {
      if (stack !== "postgres") return;
      const config = server().config;
      child = await startChildServer({
        KONTOR_ENV: "development",
        DATABASE_URL: config.databaseUrl!,
        REDIS_URL: config.redisUrl ?? "",
        DATA_DIR: config.dataDir,
      });
    }, 90_000);

    afterAll(async () => {
      await child?.stop();
    }, 30_000);

    it("a revoked token and a revoked registration stop working within 5 s", async () => {
      const urls = [host(), ...(child ? [child.url] : [])];
      expect(urls).toHaveLength(stack === "postgres" ? 2 : 1);
      const single = await registration(server(), 2);
      const whole = await registration(server(), 2);
      const doomed = [single.tokens[0]!, ...whole.tokens];
      // Warm every process's cache (twice, so the second is served from it).
      for (const url of urls) {
        for (const token of [...doomed, single.tokens[1]!])
          for (let i = 0; i < 2; i++) expect(await status(url, token)).toBe(200);
      }

      const since = Date.now();
      await revoke(single.tokens[0]!);
      await revoke(await assertionFor(server(), whole.id));
      const elapsed = await Promise.all(
        urls.flatMap((url) => doomed.map((token) => refusedAfter(url, token, since))),
      );
      for (const ms of elapsed) expect(ms).toBeLessThanOrEqual(5_000);
      for (const url of urls) expect(await status(url, single.tokens[1]!)).toBe(200);
    }, 60_000);
  });
});
