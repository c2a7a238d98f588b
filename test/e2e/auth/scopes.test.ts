/** What each scope allows, over REST and GraphQL; 401s, discovery and API keys: credentials.test.ts. */
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { call, raw, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { SCOPE_CATALOG } from "./support.ts";

e2e("authentication, discovery and scopes: scopes", (server) => {
  let tenant: Tenant;
  let admin: ReturnType<typeof rest>;

  beforeAll(async () => {
    tenant = await server().tenant();
    admin = rest(server().api, tenant.key);
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
      {
        label: "POST /leads",
        method: "POST",
        path: () => "/leads",
        body: { first_name: "Forbidden" },
        scope: "leads.write",
      },
      { label: "GET /leads/:id", method: "GET", path: () => `/leads/${leadId}`, scope: "leads.read" },
      {
        label: "PATCH /leads/:id",
        method: "PATCH",
        path: () => `/leads/${leadId}`,
        body: { notes: "forbidden" },
        scope: "leads.write",
      },
      { label: "DELETE /leads/:id", method: "DELETE", path: () => `/leads/${leadId}`, scope: "leads.write" },
      {
        label: "POST /leads/:id/convert",
        method: "POST",
        path: () => `/leads/${convertibleLeadId}/convert`,
        scope: "leads.write",
      },
      {
        label: "POST /leads/:id/convert",
        method: "POST",
        path: () => `/leads/${convertibleLeadId}/convert`,
        scope: "clients.write",
      },
      { label: "GET /clients", method: "GET", path: () => "/clients", scope: "clients.read" },
      {
        label: "POST /clients",
        method: "POST",
        path: () => "/clients",
        body: { name: "Forbidden" },
        scope: "clients.write",
      },
      { label: "GET /clients/:id", method: "GET", path: () => `/clients/${clientId}`, scope: "clients.read" },
      {
        label: "PATCH /clients/:id",
        method: "PATCH",
        path: () => `/clients/${clientId}`,
        body: { notes: "forbidden" },
        scope: "clients.write",
      },
      {
        label: "DELETE /clients/:id",
        method: "DELETE",
        path: () => `/clients/${clientId}`,
        scope: "clients.write",
      },
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
        const everythingElse = await server().key(
          tenant.workspaceId,
          SCOPE_CATALOG.filter((s) => s !== scope),
        );
        const res = await call(route.method, `${server().api}${route.path()}`, {
          key: everythingElse.key,
          body: route.body,
        });
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
        // RFC 6750 §3.1: the challenge names the scope, for a client that can ask for more.
        expect(res.headers.get("www-authenticate")).toBe(
          `Bearer error="insufficient_scope", scope="${scope}"`,
        );
        expect(await snapshot()).toEqual(before);
      },
    );

    it("write does not imply read, and read does not imply write", async () => {
      const writeOnly = rest(
        server().api,
        (await server().key(tenant.workspaceId, ["leads.write", "clients.write"])).key,
      );
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

      const readOnly = rest(
        server().api,
        (await server().key(tenant.workspaceId, ["leads.read", "clients.read"])).key,
      );
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
      const key = rest(
        server().api,
        (
          await server().key(tenant.workspaceId, [
            "leads.read",
            "leads.write",
            "clients.read",
            "clients.write",
          ])
        ).key,
      );
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
      [
        "updateLead",
        "leads.write",
        () => `mutation { updateLead(id: "${leadId}", notes: "forbidden") { id } }`,
      ],
      ["deleteLead", "leads.write", () => `mutation { deleteLead(id: "${leadId}") { id } }`],
      ["convertLead", "leads.write", () => `mutation { convertLead(id: "${leadId}") { id } }`],
      ["convertLead", "clients.write", () => `mutation { convertLead(id: "${leadId}") { id } }`],
      ["clients", "clients.read", () => `{ clients { data { id } } }`],
      ["client", "clients.read", () => `{ client(id: "${clientId}") { id } }`],
      ["createClient", "clients.write", () => `mutation { createClient(name: "Forbidden") { id } }`],
      [
        "updateClient",
        "clients.write",
        () => `mutation { updateClient(id: "${clientId}", notes: "forbidden") { id } }`,
      ],
      ["deleteClient", "clients.write", () => `mutation { deleteClient(id: "${clientId}") { id } }`],
    ];

    it.each(operations)(
      "%s without %s fails with insufficient_scope and changes nothing",
      async (field, scope, query) => {
        const before = [
          (await admin.get("/leads?limit=100")).body.data,
          (await admin.get("/clients?limit=100")).body.data,
        ];
        const key = await server().key(
          tenant.workspaceId,
          SCOPE_CATALOG.filter((s) => s !== scope),
        );
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
        expect([
          (await admin.get("/leads?limit=100")).body.data,
          (await admin.get("/clients?limit=100")).body.data,
        ]).toEqual(before);
      },
    );

    it("write does not imply read over GraphQL either", async () => {
      const key = await server().key(tenant.workspaceId, ["leads.write"]);
      const gql = graphql(server().url, key.key);
      const created = await gql(`mutation { createLead(first_name: "Writer") { id first_name } }`);
      expect(created.errors).toBeUndefined();
      expect(created.data.createLead.first_name).toBe("Writer");
      const read = await gql(`{ lead(id: "${created.data.createLead.id}") { id } }`);
      expect(read.data.lead).toBeNull();
      expect(read.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "leads.read",
      });
    });

    it("does not leak a converted lead's client through the nested field", async () => {
      const secretName = `Secretname ${createHash("sha256").update(String(Math.random())).digest("hex").slice(0, 12)}`;
      const lead = (await admin.post("/leads", { full_name: "Plain Lead", email: "plain-lead@example.com" }))
        .body;
      const converted = await admin.post(`/leads/${lead.id}/convert`);
      expect(converted.status).toBe(200);
      // The client starts as a copy of the lead; give it data the lead does not have.
      const renamed = await admin.patch(`/clients/${converted.body.client_id}`, {
        name: secretName,
        email: "secret-client@example.com",
      });
      expect(renamed.status).toBe(200);
      const [secretFirst, secretLast] = secretName.split(" ");

      // The admin key sees the client through the relation: the query is right.
      const full = await graphql(server().url, tenant.key)(
        `query ($id: ID!) { lead(id: $id) { id client { name } } }`,
        { id: lead.id },
      );
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
        expect(res.json.errors[0].extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "clients.read",
        });
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
      expect(list.json.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "clients.read",
      });

      // REST publishes no nested client at all.
      const restLead = await call("GET", `${server().api}/leads/${lead.id}`, { key: leadsOnly.key });
      expect(restLead.status).toBe(200);
      expect(JSON.stringify(restLead.body)).not.toContain(secretLast);
    });
  });
});
