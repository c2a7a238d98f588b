/** 401s, the challenge, the health check, the protected resource metadata and API keys; what each scope allows: scopes.test.ts. */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { call, raw, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { SCOPE_CATALOG } from "./support.ts";

const UNKNOWN_LIVE_KEY = `ktr_live_${"A".repeat(43)}`;

/** `Bearer a="b", c="d"` → { scheme, params }. Enough of RFC 9110 §11.6.1 for one challenge. */
function parseChallenge(header: string | null) {
  expect(header, "WWW-Authenticate header").toBeTruthy();
  const [, scheme, rest = ""] = /^(\S+)\s*(.*)$/.exec(header!)!;
  const params: Record<string, string> = {};
  for (const m of rest.matchAll(/([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g))
    params[m[1]!.toLowerCase()] = m[2] ?? m[3]!;
  return { scheme: scheme!, params };
}

const gqlPost = (url: string, query: string, headers: Record<string, string> = {}) =>
  raw(`${url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ query }),
  });

e2e("authentication, discovery and scopes: credentials", (server, stack) => {
  let tenant: Tenant;
  let admin: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    admin = rest(server().api, tenant.key);
  });

  const metadataUrl = () => `${server().url}/v1/.well-known/oauth-protected-resource`;

  const badCredentials: [string, Record<string, string>, "unauthenticated" | "invalid_token"][] = [
    ["no Authorization header", {}, "unauthenticated"],
    [
      "a Basic credential",
      { authorization: `Basic ${Buffer.from("user:pass").toString("base64")}` },
      "invalid_token",
    ],
    ["Bearer with nothing after it", { authorization: "Bearer" }, "invalid_token"],
    ["Bearer with only spaces after it", { authorization: "Bearer    " }, "invalid_token"],
    [
      "a well-formed but unknown ktr_live_ key",
      { authorization: `Bearer ${UNKNOWN_LIVE_KEY}` },
      "invalid_token",
    ],
    ["a garbage token", { authorization: "Bearer not-a-key-at-all" }, "invalid_token"],
    ["a key with a character too many", { authorization: `Bearer ${UNKNOWN_LIVE_KEY}x` }, "invalid_token"],
  ];

  function expectChallenge(headers: Headers, code: string, url = server().url) {
    const { scheme, params } = parseChallenge(headers.get("www-authenticate"));
    expect(scheme.toLowerCase()).toBe("bearer");
    expect(params.resource_metadata).toBe(`${url}/v1/.well-known/oauth-protected-resource`);
    if (code === "invalid_token") expect(params.error ?? "invalid_token").toBe("invalid_token");
    // RFC 6750 §3.1: a request without any credential gets no error code in the challenge.
    if (code === "unauthenticated") expect(params.error).toBeUndefined();
  }

  describe("401 on REST", () => {
    it.each(badCredentials)(
      "%s → 401 authentication_error with the challenge",
      async (_label, headers, code) => {
        for (const [method, path, body] of [
          ["GET", "/leads", undefined],
          ["GET", "/workspace", undefined],
          ["POST", "/leads", { first_name: "Nobody" }],
          ["GET", "/clients/cli_01J00000000000000000000000", undefined],
          ["GET", "/no-such-route", undefined],
        ] as const) {
          const res = await call(method, `${server().api}${path}`, { headers, body });
          expect(res.status, `${method} ${path}`).toBe(401);
          expect(res.body).toEqual({
            error: {
              type: "authentication_error",
              code,
              message: expect.any(String),
              request_id: expect.stringMatching(/^req_/),
            },
          });
          expect(res.body.error.message.length).toBeGreaterThan(0);
          expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
          expectChallenge(res.headers, code);
        }
        // Nothing was written by the refused POSTs.
        expect(
          (await admin.get("/leads?limit=100")).body.data.filter(
            (l: { first_name: string }) => l.first_name === "Nobody",
          ),
        ).toEqual([]);
      },
    );
  });

  describe("401 on GraphQL", () => {
    it.each(badCredentials)(
      "%s → 401 with errors[].extensions and the challenge",
      async (_label, headers, code) => {
        const res = await gqlPost(server().url, "{ workspace { id name } }", headers);
        expect(res.status).toBe(401);
        expect(res.json).toEqual({
          errors: [
            {
              message: expect.any(String),
              extensions: expect.objectContaining({ code, request_id: res.headers.get("x-request-id") }),
            },
          ],
        });
        expect(res.json.errors[0].extensions.request_id).toMatch(/^req_/);
        expect(res.json).not.toHaveProperty("data.workspace");
        expectChallenge(res.headers, code);
      },
    );

    it("a GET query without a credential is refused too", async () => {
      const res = await raw(`${server().url}/graphql?query=${encodeURIComponent("{ workspace { id } }")}`, {
        headers: { accept: "application/json" },
      });
      expect(res.status).toBe(401);
      expect(res.json.errors[0].extensions.code).toBe("unauthenticated");
      expectChallenge(res.headers, "unauthenticated");
    });
  });

  describe("a credential in another scheme", () => {
    const otherSchemes = (): [string, string][] => [
      ["Basic", `Basic ${Buffer.from("user:pass").toString("base64")}`],
      ["Token", `Token ${tenant.key}`],
      ["a key without the Bearer scheme", tenant.key],
    ];

    it("is told the scheme must be Bearer, over REST and GraphQL, without echoing what was sent", async () => {
      for (const [label, authorization] of otherSchemes()) {
        const restRes = await call("GET", `${server().api}/workspace`, { headers: { authorization } });
        const gqlRes = await gqlPost(server().url, "{ workspace { id } }", { authorization });
        for (const [via, status, error, headers, text] of [
          ["REST", restRes.status, restRes.body.error, restRes.headers, JSON.stringify(restRes.body)],
          ["GraphQL", gqlRes.status, gqlRes.json.errors[0].extensions, gqlRes.headers, gqlRes.text],
        ] as const) {
          expect(status, `${label} over ${via}`).toBe(401);
          expect(error.code, `${label} over ${via}`).toBe("invalid_token");
          const message = via === "REST" ? error.message : gqlRes.json.errors[0].message;
          expect(message, `${label} over ${via}`).toMatch(/scheme must be Bearer/);
          expect(message).not.toMatch(/not valid/);
          expect(text).not.toContain(tenant.key);
          // RFC 6750 §3.1: an unsupported authentication method gets a challenge without an error code.
          const { scheme, params } = parseChallenge(headers.get("www-authenticate"));
          expect(scheme).toBe("Bearer");
          expect(params.error, `${label} over ${via}`).toBeUndefined();
        }
      }
    });

    it("while a bad bearer token is still 'not valid', with error=\"invalid_token\" in the challenge", async () => {
      for (const authorization of ["Bearer not-a-key", `bearer ${UNKNOWN_LIVE_KEY}`, "Bearer"]) {
        const res = await call("GET", `${server().api}/workspace`, { headers: { authorization } });
        expect(res.status, authorization).toBe(401);
        expect(res.body.error.code).toBe("invalid_token");
        expect(res.body.error.message, authorization).toMatch(/not valid/);
        expect(parseChallenge(res.headers.get("www-authenticate")).params.error).toBe("invalid_token");
      }
    });
  });

  describe("health check", () => {
    it("GET /health answers 200 with an empty body and a request id, with or without a credential", async () => {
      for (const headers of [
        {},
        { authorization: "Bearer not-a-key" },
        { authorization: `Bearer ${tenant.key}` },
      ] as Record<string, string>[]) {
        const res = await raw(`${server().url}/health`, { headers });
        expect(res.status, JSON.stringify(headers)).toBe(200);
        expect(res.text).toBe("");
        expect(res.headers.get("x-request-id")).toMatch(/^req_/);
        expect(res.headers.get("www-authenticate")).toBeNull();
      }
    });

    it("only the exact path is the health check: /v1/leads/health is a route lookup like any other", async () => {
      const res = await raw(`${server().url}/v1/leads/health`);
      expect(res.status).toBe(401);
      expect((await raw(`${server().url}/health?probe=1`)).status).toBe(200);
      expect((await raw(`${server().url}/health`, { method: "POST" })).status).toBe(405);
    });
  });

  describe("protected resource metadata (RFC 9728)", () => {
    function expectDocument(doc: any) {
      const url = server().url;
      expect(doc).toMatchObject({
        resource: `${url}/v1`,
        authorization_servers: [url],
        bearer_methods_supported: ["header"],
        resource_documentation: `${url}/auth.md`,
      });
      expect(typeof doc.resource_name).toBe("string");
      expect([...doc.scopes_supported].sort()).toEqual([...SCOPE_CATALOG].sort());
      expect(new Set(doc.scopes_supported).size).toBe(doc.scopes_supported.length);
    }

    it("is reached by following the 401's challenge, like a client would, without a credential", async () => {
      const challenged = await call("GET", `${server().api}/leads`);
      expect(challenged.status).toBe(401);
      const { params } = parseChallenge(challenged.headers.get("www-authenticate"));

      const res = await raw(params.resource_metadata!, { headers: { accept: "application/json" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(res.headers.get("www-authenticate")).toBeNull();
      expectDocument(res.json);

      // RFC 9728 §3.3: the resource the client asked about must be a prefix match of `resource`.
      expect(`${server().api}/leads`.startsWith(res.json.resource)).toBe(true);

      // RFC 9728 §3.1: the well-known URI is built by inserting the well-known segment before the path.
      const resource = new URL(res.json.resource);
      const rfcLocation = `${resource.origin}/.well-known/oauth-protected-resource${resource.pathname}`;
      expect(rfcLocation).toBe(`${server().url}/.well-known/oauth-protected-resource/v1`);
      const rfc = await raw(rfcLocation);
      expect(rfc.status).toBe(200);
      expect(rfc.json).toEqual(res.json);
    });

    it("is served the same with a bad or a valid credential", async () => {
      const anonymous = await raw(metadataUrl());
      for (const authorization of [
        "Bearer not-a-key",
        `Bearer ${UNKNOWN_LIVE_KEY}`,
        `Bearer ${tenant.key}`,
      ]) {
        for (const url of [metadataUrl(), `${server().url}/.well-known/oauth-protected-resource/v1`]) {
          const res = await raw(url, { headers: { authorization } });
          expect(res.status, `${url} with ${authorization}`).toBe(200);
          expect(res.json).toEqual(anonymous.json);
        }
      }
      expectDocument(anonymous.json);
    });
  });

  describe("API keys", () => {
    it("have the documented shape and are stored only as a sha256 hash and a short prefix", async () => {
      const created = await server().key(tenant.workspaceId, ["leads.read"]);
      expect(created.key).toMatch(/^ktr_live_[0-9A-Za-z]{43}$/);
      const other = await server().key(tenant.workspaceId, ["leads.read"]);
      expect(other.key).not.toBe(created.key);

      const row = await server().running.db.prisma.apiKey.findUniqueOrThrow({ where: { id: created.id } });
      expect(row.hash).toBe(createHash("sha256").update(created.key).digest("hex"));
      expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
      expect(created.key.startsWith(row.prefix)).toBe(true);
      expect(row.prefix.length).toBeLessThanOrEqual("ktr_live_".length + 8);
      expect(JSON.stringify(row)).not.toContain(created.key);
      expect(JSON.stringify(row)).not.toContain(created.key.slice("ktr_live_".length));

      // No column of the table, read raw, holds the key or its secret part.
      const rows = await server().running.db.prisma.$queryRawUnsafe<Record<string, unknown>[]>(
        `select * from api_keys where id = '${created.id}'`,
      );
      expect(rows).toHaveLength(1);
      const dump = JSON.stringify(rows);
      expect(dump).not.toContain(created.key.slice("ktr_live_".length));
      expect(dump).not.toContain(created.key.slice(-20));

      // The key works and authenticates as that workspace.
      expect((await rest(server().api, created.key).get("/workspace")).body.id).toBe(tenant.workspaceId);
    });

    describe("revocation", () => {
      let second: RunningServer | undefined;

      beforeAll(async () => {
        if (stack !== "postgres") return;
        const config = server().config;
        second = await startServer(
          loadConfig({
            PORT: "0",
            KONTOR_ENV: "development",
            DATABASE_URL: config.databaseUrl!,
            REDIS_URL: config.redisUrl ?? "",
            DATA_DIR: config.dataDir,
          }),
          { publicUrlFromPort: true },
        );
      });

      afterAll(async () => {
        await second?.close();
      });

      it(`stops a revoked key within 5 s on every server process (${stack === "postgres" ? "two processes" : "one process"})`, async () => {
        const urls = [server().url, ...(second ? [second.url] : [])];
        const viaHelper = await server().key(tenant.workspaceId, ["leads.read"]);
        const viaColumn = await server().key(tenant.workspaceId, ["leads.read"]);
        const survivor = await server().key(tenant.workspaceId, ["leads.read"]);
        const keys = [viaHelper.key, viaColumn.key];

        // Warm every process's cache (twice, so a hit is served from it).
        for (const url of urls) {
          for (const key of [...keys, survivor.key]) {
            for (let i = 0; i < 2; i++)
              expect((await call("GET", `${url}/v1/leads`, { key })).status).toBe(200);
          }
          expect(
            (await gqlPost(url, "{ workspace { id } }", { authorization: `Bearer ${viaHelper.key}` })).status,
          ).toBe(200);
        }

        const revokedAt = Date.now();
        expect(await revokeApiKey(server().running.db.prisma, viaHelper.id)).toBe(true);
        await server().running.db.prisma.apiKey.update({
          where: { id: viaColumn.id },
          data: { revokedAt: new Date() },
        });

        // Measured when each request was sent, not when its answer came (a loaded machine answers late):
        // every request sent 5 s or more after the revocation is refused.
        const servedUntil = await Promise.all(
          urls.flatMap((url) =>
            keys.map(async (key) => {
              let lastServed = 0;
              for (;;) {
                const sentAfter = Date.now() - revokedAt;
                const res = await call("GET", `${url}/v1/leads`, { key });
                if (res.status === 401) {
                  expect(res.body.error).toMatchObject({
                    type: "authentication_error",
                    code: "invalid_token",
                  });
                  expectChallenge(res.headers, "invalid_token", url);
                  const gql = await gqlPost(url, "{ workspace { id } }", { authorization: `Bearer ${key}` });
                  expect(gql.status).toBe(401);
                  return lastServed;
                }
                expect(res.status).toBe(200);
                lastServed = sentAfter;
                if (sentAfter > 8_000) return sentAfter;
                await new Promise((resolve) => setTimeout(resolve, 100));
              }
            }),
          ),
        );
        for (const sentAfter of servedUntil) expect(sentAfter).toBeLessThan(5_000);

        // An unrelated key is untouched.
        for (const url of urls)
          expect((await call("GET", `${url}/v1/leads`, { key: survivor.key })).status).toBe(200);
        // Revoking again is harmless.
        expect(await revokeApiKey(server().running.db.prisma, viaHelper.id)).toBe(true);
      });
    });
  });
});
