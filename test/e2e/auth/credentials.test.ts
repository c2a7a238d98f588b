import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { startServer, type RunningServer } from "../../../server/runtime/server.ts";
import { graphql } from "../../support/graphql.ts";
import { call, rest, raw } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/** docs/api/scopes.md, written out rather than imported so the test checks the product against the contract. */
const SCOPE_CATALOG = [
  "clients.read",
  "clients.write",
  "leads.read",
  "leads.write",
  "inventory.read",
  "inventory.write",
  "invoices.read",
  "invoices.write",
  "projects.read",
  "projects.write",
  "storage.read",
  "storage.write",
  "webhooks.read",
  "webhooks.write",
  "logs.read",
  "logs.write",
  "agents.read",
  "agents.write",
  "payments.write",
  "ai.responses",
  "ai.coding",
  "audit.read",
];

const UNKNOWN_LIVE_KEY = `ktr_live_${"A".repeat(43)}`;

/** `Bearer a="b", c="d"` → { scheme, params }. Enough of RFC 9110 §11.6.1 for one challenge. */
function parseChallenge(header: string | null) {
  expect(header, "WWW-Authenticate header").toBeTruthy();
  const [, scheme, rest = ""] = /^(\S+)\s*(.*)$/.exec(header!)!;
  const params: Record<string, string> = {};
  for (const m of rest.matchAll(/([\w-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) params[m[1]!.toLowerCase()] = m[2] ?? m[3]!;
  return { scheme: scheme!, params };
}

const gqlPost = (url: string, query: string, headers: Record<string, string> = {}) =>
  raw(`${url}/graphql`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ query }) });

e2e("authentication, discovery and scopes", (server, stack) => {
  let tenant: Tenant;
  let admin: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    admin = rest(server().api, tenant.key);
  });

  const metadataUrl = () => `${server().url}/v1/.well-known/oauth-protected-resource`;

  const badCredentials: [string, Record<string, string>, "unauthenticated" | "invalid_token"][] = [
    ["no Authorization header", {}, "unauthenticated"],
    ["a Basic credential", { authorization: `Basic ${Buffer.from("user:pass").toString("base64")}` }, "invalid_token"],
    ["Bearer with nothing after it", { authorization: "Bearer" }, "invalid_token"],
    ["Bearer with only spaces after it", { authorization: "Bearer    " }, "invalid_token"],
    ["a well-formed but unknown ktr_live_ key", { authorization: `Bearer ${UNKNOWN_LIVE_KEY}` }, "invalid_token"],
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
    it.each(badCredentials)("%s → 401 authentication_error with the challenge", async (_label, headers, code) => {
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
          error: { type: "authentication_error", code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) },
        });
        expect(res.body.error.message.length).toBeGreaterThan(0);
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
        expectChallenge(res.headers, code);
      }
      // Nothing was written by the refused POSTs.
      expect((await admin.get("/leads?limit=100")).body.data.filter((l: { first_name: string }) => l.first_name === "Nobody")).toEqual([]);
    });
  });

  describe("401 on GraphQL", () => {
    it.each(badCredentials)("%s → 401 with errors[].extensions and the challenge", async (_label, headers, code) => {
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
    });

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
      for (const headers of [{}, { authorization: "Bearer not-a-key" }, { authorization: `Bearer ${tenant.key}` }] as Record<string, string>[]) {
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
      for (const authorization of ["Bearer not-a-key", `Bearer ${UNKNOWN_LIVE_KEY}`, `Bearer ${tenant.key}`]) {
        for (const url of [metadataUrl(), `${server().url}/.well-known/oauth-protected-resource/v1`]) {
          const res = await raw(url, { headers: { authorization } });
          expect(res.status, `${url} with ${authorization}`).toBe(200);
          expect(res.json).toEqual(anonymous.json);
        }
      }
      expectDocument(anonymous.json);
    });
  });

  describe("scopes on REST (decisions §5)", () => {
    let leadId: string;
    let convertibleLeadId: string;
    let clientId: string;

    beforeAll(async () => {
      leadId = (await admin.post("/leads", { first_name: "Scoped" })).body.id;
      convertibleLeadId = (await admin.post("/leads", { first_name: "Convertible" })).body.id;
      clientId = (await admin.post("/clients", { name: "Scoped Client" })).body.id;
    });

    type Route = { label: string; method: string; path: () => string; body?: unknown; scope: string };
    const routes: Route[] = [
      { label: "GET /leads", method: "GET", path: () => "/leads", scope: "leads.read" },
      { label: "POST /leads", method: "POST", path: () => "/leads", body: { first_name: "Forbidden" }, scope: "leads.write" },
      { label: "GET /leads/:id", method: "GET", path: () => `/leads/${leadId}`, scope: "leads.read" },
      { label: "PATCH /leads/:id", method: "PATCH", path: () => `/leads/${leadId}`, body: { notes: "forbidden" }, scope: "leads.write" },
      { label: "DELETE /leads/:id", method: "DELETE", path: () => `/leads/${leadId}`, scope: "leads.write" },
      { label: "POST /leads/:id/convert", method: "POST", path: () => `/leads/${convertibleLeadId}/convert`, scope: "leads.write" },
      { label: "POST /leads/:id/convert", method: "POST", path: () => `/leads/${convertibleLeadId}/convert`, scope: "clients.write" },
      { label: "GET /clients", method: "GET", path: () => "/clients", scope: "clients.read" },
      { label: "POST /clients", method: "POST", path: () => "/clients", body: { name: "Forbidden" }, scope: "clients.write" },
      { label: "GET /clients/:id", method: "GET", path: () => `/clients/${clientId}`, scope: "clients.read" },
      { label: "PATCH /clients/:id", method: "PATCH", path: () => `/clients/${clientId}`, body: { notes: "forbidden" }, scope: "clients.write" },
      { label: "DELETE /clients/:id", method: "DELETE", path: () => `/clients/${clientId}`, scope: "clients.write" },
    ];

    /** A snapshot of everything the tenant owns, to prove a refused request changed nothing. */
    const snapshot = async () => ({
      leads: (await admin.get("/leads?limit=100")).body.data,
      clients: (await admin.get("/clients?limit=100")).body.data,
    });

    it.each(routes.map((r) => [r.label, r.scope, r] as const))(
      "%s without %s → 403 insufficient_scope and nothing changes",
      async (_name, scope, route) => {
        const before = await snapshot();
        // Every other scope of the catalog, and the same resource's other half: neither may stand in.
        const everythingElse = await server().key(tenant.workspaceId, SCOPE_CATALOG.filter((s) => s !== scope));
        const res = await call(route.method, `${server().api}${route.path()}`, { key: everythingElse.key, body: route.body });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({
          error: {
            type: "permission_error",
            code: "insufficient_scope",
            message: expect.any(String),
            required_scope: scope,
            request_id: res.headers.get("x-request-id"),
          },
        });
        expect(await snapshot()).toEqual(before);
      },
    );

    it("write does not imply read, and read does not imply write", async () => {
      const writeOnly = rest(server().api, (await server().key(tenant.workspaceId, ["leads.write", "clients.write"])).key);
      const created = await writeOnly.post("/leads", { first_name: "Writer" });
      expect(created.status).toBe(201);
      expect((await writeOnly.patch(`/leads/${created.body.id}`, { notes: "ok" })).status).toBe(200);
      for (const [path, scope] of [
        ["/leads", "leads.read"],
        [`/leads/${created.body.id}`, "leads.read"],
        ["/clients", "clients.read"],
        [`/clients/${clientId}`, "clients.read"],
      ] as const) {
        const res = await writeOnly.get(path);
        expect(res.status, path).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }

      const readOnly = rest(server().api, (await server().key(tenant.workspaceId, ["leads.read", "clients.read"])).key);
      expect((await readOnly.get(`/leads/${created.body.id}`)).status).toBe(200);
      for (const res of [
        await readOnly.post("/leads", { first_name: "Reader" }),
        await readOnly.patch(`/leads/${created.body.id}`, { notes: "no" }),
        await readOnly.delete(`/leads/${created.body.id}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "leads.write" });
      }
      expect((await admin.get(`/leads/${created.body.id}`)).body.notes).toBe("ok");
    });

    it("a key with every needed scope passes each route", async () => {
      const key = rest(server().api, (await server().key(tenant.workspaceId, ["leads.read", "leads.write", "clients.read", "clients.write"])).key);
      expect((await key.get("/leads")).status).toBe(200);
      expect((await key.get(`/clients/${clientId}`)).status).toBe(200);
      const lead = await key.post("/leads", { first_name: "Allowed" });
      expect(lead.status).toBe(201);
      expect((await key.post(`/leads/${lead.body.id}/convert`)).status).toBe(200);
    });

    it.each([[["logs.read"]], [["ai.coding"]], [["payments.write"]], [[]]])(
      "GET /workspace works with a key holding only %j",
      async (scopes) => {
        const key = await server().key(tenant.workspaceId, scopes);
        const res = await rest(server().api, key.key).get("/workspace");
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ object: "workspace", id: tenant.workspaceId, plan: "pro" });

        const gql = await graphql(server().url, key.key)(`{ workspace { id plan } }`);
        expect(gql.errors).toBeUndefined();
        expect(gql.data.workspace).toEqual({ id: tenant.workspaceId, plan: "pro" });
      },
    );
  });

  describe("scopes on GraphQL", () => {
    let leadId: string;
    let clientId: string;

    beforeAll(async () => {
      leadId = (await admin.post("/leads", { first_name: "Graph" })).body.id;
      clientId = (await admin.post("/clients", { name: "Graph Client" })).body.id;
    });

    const operations: [string, string, () => string][] = [
      ["leads", "leads.read", () => `{ leads { data { id } } }`],
      ["lead", "leads.read", () => `{ lead(id: "${leadId}") { id } }`],
      ["createLead", "leads.write", () => `mutation { createLead(first_name: "Forbidden") { id } }`],
      ["updateLead", "leads.write", () => `mutation { updateLead(id: "${leadId}", notes: "forbidden") { id } }`],
      ["deleteLead", "leads.write", () => `mutation { deleteLead(id: "${leadId}") { id } }`],
      ["convertLead", "leads.write", () => `mutation { convertLead(id: "${leadId}") { id } }`],
      ["convertLead", "clients.write", () => `mutation { convertLead(id: "${leadId}") { id } }`],
      ["clients", "clients.read", () => `{ clients { data { id } } }`],
      ["client", "clients.read", () => `{ client(id: "${clientId}") { id } }`],
      ["createClient", "clients.write", () => `mutation { createClient(name: "Forbidden") { id } }`],
      ["updateClient", "clients.write", () => `mutation { updateClient(id: "${clientId}", notes: "forbidden") { id } }`],
      ["deleteClient", "clients.write", () => `mutation { deleteClient(id: "${clientId}") { id } }`],
    ];

    it.each(operations)("%s without %s fails with insufficient_scope and changes nothing", async (field, scope, query) => {
      const before = [(await admin.get("/leads?limit=100")).body.data, (await admin.get("/clients?limit=100")).body.data];
      const key = await server().key(tenant.workspaceId, SCOPE_CATALOG.filter((s) => s !== scope));
      const res = await graphql(server().url, key.key)(query());
      expect(res.status).toBe(200);
      expect(res.data?.[field] ?? null).toBeNull();
      expect(res.errors).toHaveLength(1);
      expect(res.errors![0]!.path).toEqual([field]);
      expect(res.errors![0]!.extensions).toMatchObject({
        code: "insufficient_scope",
        type: "permission_error",
        required_scope: scope,
        request_id: expect.stringMatching(/^req_/),
      });
      expect([(await admin.get("/leads?limit=100")).body.data, (await admin.get("/clients?limit=100")).body.data]).toEqual(before);
    });

    it("write does not imply read over GraphQL either", async () => {
      const key = await server().key(tenant.workspaceId, ["leads.write"]);
      const gql = graphql(server().url, key.key);
      const created = await gql(`mutation { createLead(first_name: "Writer") { id first_name } }`);
      expect(created.errors).toBeUndefined();
      expect(created.data.createLead.first_name).toBe("Writer");
      const read = await gql(`{ lead(id: "${created.data.createLead.id}") { id } }`);
      expect(read.data.lead).toBeNull();
      expect(read.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "leads.read" });
    });

    it("does not leak a converted lead's client through the nested field", async () => {
      const secretName = `Secretname ${createHash("sha256").update(String(Math.random())).digest("hex").slice(0, 12)}`;
      const lead = (await admin.post("/leads", { full_name: "Plain Lead", email: "plain-lead@example.com" })).body;
      const converted = await admin.post(`/leads/${lead.id}/convert`);
      expect(converted.status).toBe(200);
      // The client starts as a copy of the lead; give it data the lead does not have.
      const renamed = await admin.patch(`/clients/${converted.body.client_id}`, { name: secretName, email: "secret-client@example.com" });
      expect(renamed.status).toBe(200);
      const [secretFirst, secretLast] = secretName.split(" ");

      // The admin key sees the client through the relation: the query is right.
      const full = await graphql(server().url, tenant.key)(`query ($id: ID!) { lead(id: $id) { id client { name } } }`, { id: lead.id });
      expect(full.errors).toBeUndefined();
      expect(full.data.lead.client.name).toBe(secretName);

      const leadsOnly = await server().key(tenant.workspaceId, ["leads.read"]);
      for (const query of [
        `query ($id: ID!) { lead(id: $id) { id client { name } } }`,
        `query ($id: ID!) { lead(id: $id) { id client { name email id } } }`,
      ]) {
        const res = await raw(`${server().url}/graphql`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${leadsOnly.key}` },
          body: JSON.stringify({ query, variables: { id: lead.id } }),
        });
        expect(res.status).toBe(200);
        expect(res.json.data.lead.id).toBe(lead.id);
        expect(res.json.data.lead.client).toBeNull();
        expect(res.json.errors).toHaveLength(1);
        expect(res.json.errors[0].path).toEqual(["lead", "client"]);
        expect(res.json.errors[0].extensions).toMatchObject({ code: "insufficient_scope", required_scope: "clients.read" });
        expect(res.text).not.toContain(secretFirst);
        expect(res.text).not.toContain(secretLast);
        expect(res.text).not.toContain("secret-client@example.com");
      }

      // The list reaches the same relation.
      const list = await raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${leadsOnly.key}` },
        body: JSON.stringify({ query: `{ leads(limit: 100) { data { id client { name } } } }` }),
      });
      expect(list.status).toBe(200);
      expect(list.text).not.toContain(secretLast);
      expect(list.json.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "clients.read" });

      // REST publishes no nested client at all.
      const restLead = await call("GET", `${server().api}/leads/${lead.id}`, { key: leadsOnly.key });
      expect(restLead.status).toBe(200);
      expect(JSON.stringify(restLead.body)).not.toContain(secretLast);
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
            for (let i = 0; i < 2; i++) expect((await call("GET", `${url}/v1/leads`, { key })).status).toBe(200);
          }
          expect((await gqlPost(url, "{ workspace { id } }", { authorization: `Bearer ${viaHelper.key}` })).status).toBe(200);
        }

        const revokedAt = Date.now();
        expect(await revokeApiKey(server().running.db.prisma, viaHelper.id)).toBe(true);
        await server().running.db.prisma.apiKey.update({ where: { id: viaColumn.id }, data: { revokedAt: new Date() } });

        const stoppedAfter = await Promise.all(
          urls.flatMap((url) =>
            keys.map(async (key) => {
              for (;;) {
                const res = await call("GET", `${url}/v1/leads`, { key });
                const elapsed = Date.now() - revokedAt;
                if (res.status === 401) {
                  expect(res.body.error).toMatchObject({ type: "authentication_error", code: "invalid_token" });
                  expectChallenge(res.headers, "invalid_token", url);
                  const gql = await gqlPost(url, "{ workspace { id } }", { authorization: `Bearer ${key}` });
                  expect(gql.status).toBe(401);
                  return elapsed;
                }
                expect(res.status).toBe(200);
                if (elapsed > 8_000) return elapsed;
                await new Promise((resolve) => setTimeout(resolve, 100));
              }
            }),
          ),
        );
        for (const elapsed of stoppedAfter) expect(elapsed).toBeLessThanOrEqual(5_000);

        // An unrelated key is untouched.
        for (const url of urls) expect((await call("GET", `${url}/v1/leads`, { key: survivor.key })).status).toBe(200);
        // Revoking again is harmless.
        expect(await revokeApiKey(server().running.db.prisma, viaHelper.id)).toBe(true);
      });
    });
  });
});
