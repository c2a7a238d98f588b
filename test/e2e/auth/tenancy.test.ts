import { beforeAll, describe, expect, it } from "vitest";
import { expectHidden, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/** Ids that never existed anywhere, of the right shape. */
const NEVER = { lead: "lead_01J00000000000000000000000", client: "cli_01J00000000000000000000000" };

/**
 * A 404 for another workspace's id must be indistinguishable from a 404 for an id that never
 * existed: same status, type, code, param and message (with the id substituted).
 */

e2e("tenancy", (server) => {
  let a: Tenant;
  let b: Tenant;
  let apiA: ReturnType<typeof rest>;
  let apiB: ReturnType<typeof rest>;
  let gqlA: ReturnType<typeof graphql>;

  /** B's objects, and B's own view of everything, before A starts poking. */
  const B = { client: "", lead: "", convertedLead: "", convertedClient: "" };
  const A = { client: "", lead: "", convertedLead: "", convertedClient: "" };
  let bSnapshot: unknown;

  async function snapshotOfB() {
    const out: Record<string, unknown> = {};
    for (const path of [
      "/workspace",
      "/leads?limit=100",
      "/clients?limit=100",
      `/leads/${B.lead}`,
      `/leads/${B.convertedLead}`,
      `/clients/${B.client}`,
      `/clients/${B.convertedClient}`,
    ]) {
      const res = await apiB.get(path);
      expect(res.status, path).toBe(200);
      // B's usage grows with B's own reads (their request logs count in its data quota).
      out[path] = path === "/workspace" ? { ...res.body, usage: undefined } : res.body;
    }
    return out;
  }

  async function expectBUnchanged() {
    expect(await snapshotOfB()).toEqual(bSnapshot);
  }

  beforeAll(async () => {
    a = await server().tenant();
    b = await server().tenant();
    apiA = rest(server().api, a.key);
    apiB = rest(server().api, b.key);
    gqlA = graphql(server().url, a.key);

    // Both workspaces hold look-alike rows, so that a leaky search would find the other side's.
    for (const [api, side, label] of [
      [apiB, B, "Bravo"],
      [apiA, A, "Alpha"],
    ] as const) {
      const client = await api.post("/clients", {
        name: `${label} Shared Client`,
        email: `${label.toLowerCase()}@shared.example`,
        company_name: "SharedCo",
        address: { city: label },
      });
      expect(client.status).toBe(201);
      side.client = client.body.id;
      const lead = await api.post("/leads", {
        full_name: `${label} SharedLead`,
        company_name: "SharedCo",
        email: `${label.toLowerCase()}-lead@shared.example`,
      });
      expect(lead.status).toBe(201);
      side.lead = lead.body.id;
      const toConvert = await api.post("/leads", {
        full_name: `${label} Converted`,
        company_name: "SharedCo",
      });
      const converted = await api.post(`/leads/${toConvert.body.id}/convert`);
      expect(converted.status).toBe(200);
      side.convertedLead = toConvert.body.id;
      side.convertedClient = converted.body.client_id;
    }
    bSnapshot = await snapshotOfB();
  });

  describe("GET /workspace", () => {
    it("answers each caller with its own workspace", async () => {
      const mine = await apiA.get("/workspace");
      expect(mine.status).toBe(200);
      expect(mine.body).toMatchObject({ object: "workspace", id: a.workspaceId });
      const theirs = await apiB.get("/workspace");
      expect(theirs.body).toMatchObject({ object: "workspace", id: b.workspaceId });
      expect(theirs.body.name).not.toBe(mine.body.name);

      const overGraphql = await gqlA(`{ workspace { object id name } }`);
      expect(overGraphql.data.workspace).toEqual({
        object: "workspace",
        id: a.workspaceId,
        name: mine.body.name,
      });
    });

    it("cannot be pointed at another workspace", async () => {
      const res = await apiA.get(`/workspace?id=${b.workspaceId}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param: "id" });
    });
  });

  describe("leads", () => {
    it("GET /leads lists only A's leads, also under search and filters", async () => {
      const all = await apiA.get("/leads?limit=100");
      expect(all.status).toBe(200);
      expect(ids(all.body).sort()).toEqual([A.lead, A.convertedLead].sort());

      for (const query of [
        "search=shared",
        "search=SharedCo",
        "search=bravo",
        "search=bravo-lead%40shared",
        "stage=won",
        "stage=new",
      ]) {
        const res = await apiA.get(`/leads?${query}`);
        expect(res.status, query).toBe(200);
        for (const id of [B.lead, B.convertedLead]) expect(ids(res.body), query).not.toContain(id);
      }
      expect(ids((await apiA.get("/leads?search=bravo")).body)).toEqual([]);
      expect(ids((await apiA.get("/leads?search=sharedco")).body).sort()).toEqual(
        [A.lead, A.convertedLead].sort(),
      );
      expect(ids((await apiA.get("/leads?stage=won")).body)).toEqual([A.convertedLead]);
    });

    it("GET /leads/{id} with B's id is 404 not_found, exactly like an id that never existed", async () => {
      for (const id of [B.lead, B.convertedLead]) {
        expectHidden(await apiA.get(`/leads/${id}`), await apiA.get(`/leads/${NEVER.lead}`), id, NEVER.lead);
      }
      await expectBUnchanged();
    });

    it("PATCH /leads/{id} with B's id is 404 and changes nothing", async () => {
      for (const body of [{ stage: "lost", notes: "hijacked" }, { first_name: "Mallory" }, {}]) {
        expectHidden(
          await apiA.patch(`/leads/${B.lead}`, body),
          await apiA.patch(`/leads/${NEVER.lead}`, body),
          B.lead,
          NEVER.lead,
        );
      }
      await expectBUnchanged();
    });

    it("DELETE /leads/{id} with B's id is 404 and deletes nothing", async () => {
      expectHidden(
        await apiA.delete(`/leads/${B.lead}`),
        await apiA.delete(`/leads/${NEVER.lead}`),
        B.lead,
        NEVER.lead,
      );
      expectHidden(
        await apiA.delete(`/leads/${B.convertedLead}`),
        await apiA.delete(`/leads/${NEVER.lead}`),
        B.convertedLead,
        NEVER.lead,
      );
      await expectBUnchanged();
    });

    it("POST /leads/{id}/convert with B's id is 404 and creates no client on either side", async () => {
      const clientsOfA = ids((await apiA.get("/clients?limit=100")).body);
      expectHidden(
        await apiA.post(`/leads/${B.lead}/convert`),
        await apiA.post(`/leads/${NEVER.lead}/convert`),
        B.lead,
        NEVER.lead,
      );
      // An already-converted lead of B answers 404 too, not invalid_state (which would reveal it).
      expectHidden(
        await apiA.post(`/leads/${B.convertedLead}/convert`),
        await apiA.post(`/leads/${NEVER.lead}/convert`),
        B.convertedLead,
        NEVER.lead,
      );
      expect(ids((await apiA.get("/clients?limit=100")).body)).toEqual(clientsOfA);
      await expectBUnchanged();
    });

    it("POST /leads creates in the caller's workspace only", async () => {
      const made = await apiA.post("/leads", { full_name: "Alpha NewLead", company_name: "SharedCo" });
      expect(made.status).toBe(201);
      expect((await apiA.get(`/leads/${made.body.id}`)).status).toBe(200);
      expectHidden(
        await apiB.get(`/leads/${made.body.id}`),
        await apiB.get(`/leads/${NEVER.lead}`),
        made.body.id,
        NEVER.lead,
      );
      expect(ids((await apiB.get("/leads?search=alpha")).body)).toEqual([]);
      expect((await apiA.delete(`/leads/${made.body.id}`)).status).toBe(200);
      await expectBUnchanged();
    });

    it("B is equally blind to A's leads", async () => {
      expectHidden(
        await apiB.get(`/leads/${A.lead}`),
        await apiB.get(`/leads/${NEVER.lead}`),
        A.lead,
        NEVER.lead,
      );
      expectHidden(
        await apiB.patch(`/leads/${A.lead}`, { notes: "x" }),
        await apiB.patch(`/leads/${NEVER.lead}`, { notes: "x" }),
        A.lead,
        NEVER.lead,
      );
      expect((await apiA.get(`/leads/${A.lead}`)).body.notes).toBeNull();
    });
  });

  describe("clients", () => {
    it("GET /clients lists only A's clients, also under search", async () => {
      const all = await apiA.get("/clients?limit=100");
      expect(all.status).toBe(200);
      expect(ids(all.body).sort()).toEqual([A.client, A.convertedClient].sort());
      for (const query of [
        "search=shared",
        "search=SharedCo",
        "search=bravo",
        "search=bravo%40shared.example",
        "search=converted",
      ]) {
        const res = await apiA.get(`/clients?${query}`);
        expect(res.status, query).toBe(200);
        for (const id of [B.client, B.convertedClient]) expect(ids(res.body), query).not.toContain(id);
      }
      expect(ids((await apiA.get("/clients?search=bravo")).body)).toEqual([]);
      expect(ids((await apiA.get("/clients?search=converted")).body)).toEqual([A.convertedClient]);
    });

    it("GET /clients/{id} with B's id is 404 not_found, exactly like an id that never existed", async () => {
      for (const id of [B.client, B.convertedClient]) {
        expectHidden(
          await apiA.get(`/clients/${id}`),
          await apiA.get(`/clients/${NEVER.client}`),
          id,
          NEVER.client,
        );
      }
      await expectBUnchanged();
    });

    it("PATCH /clients/{id} with B's id is 404 and changes nothing", async () => {
      for (const body of [{ name: "Hijacked" }, { address: null }, { email: null, notes: "x" }, {}]) {
        expectHidden(
          await apiA.patch(`/clients/${B.client}`, body),
          await apiA.patch(`/clients/${NEVER.client}`, body),
          B.client,
          NEVER.client,
        );
      }
      await expectBUnchanged();
    });

    it("DELETE /clients/{id} with B's id is 404 and deletes nothing (B's lead keeps its client)", async () => {
      for (const id of [B.client, B.convertedClient]) {
        expectHidden(
          await apiA.delete(`/clients/${id}`),
          await apiA.delete(`/clients/${NEVER.client}`),
          id,
          NEVER.client,
        );
      }
      expect((await apiB.get(`/leads/${B.convertedLead}`)).body.client_id).toBe(B.convertedClient);
      await expectBUnchanged();
    });

    it("POST /clients creates in the caller's workspace only", async () => {
      const made = await apiA.post("/clients", { name: "Alpha Fresh", company_name: "SharedCo" });
      expect(made.status).toBe(201);
      expectHidden(
        await apiB.get(`/clients/${made.body.id}`),
        await apiB.get(`/clients/${NEVER.client}`),
        made.body.id,
        NEVER.client,
      );
      expect(ids((await apiB.get("/clients?search=alpha")).body)).toEqual([]);
      expect((await apiA.delete(`/clients/${made.body.id}`)).status).toBe(200);
      await expectBUnchanged();
    });

    it("B is equally blind to A's clients", async () => {
      expectHidden(
        await apiB.get(`/clients/${A.client}`),
        await apiB.get(`/clients/${NEVER.client}`),
        A.client,
        NEVER.client,
      );
      expectHidden(
        await apiB.delete(`/clients/${A.client}`),
        await apiB.delete(`/clients/${NEVER.client}`),
        A.client,
        NEVER.client,
      );
      expect((await apiA.get(`/clients/${A.client}`)).status).toBe(200);
    });
  });

  describe("over GraphQL", () => {
    it("lead(id) and client(id) give null with not_found for B's ids, like for unknown ids", async () => {
      for (const [field, id, never] of [
        ["lead", B.lead, NEVER.lead],
        ["lead", B.convertedLead, NEVER.lead],
        ["client", B.client, NEVER.client],
        ["client", B.convertedClient, NEVER.client],
      ] as const) {
        const res = await gqlA(`query ($id: ID!) { ${field}(id: $id) { id } }`, { id });
        const ref = await gqlA(`query ($id: ID!) { ${field}(id: $id) { id } }`, { id: never });
        expect(res.data).toEqual({ [field]: null });
        expect(res.errors).toHaveLength(1);
        const { request_id: _a, ...ext } = res.errors![0]!.extensions;
        const { request_id: _b, ...refExt } = ref.errors![0]!.extensions;
        expect(ext).toMatchObject({ code: "not_found", type: "invalid_request_error" });
        expect(ext).toEqual(refExt);
        expect(res.errors![0]!.message).toBe(ref.errors![0]!.message.replaceAll(never, id));
      }
    });

    it("one document mixing own and foreign ids gets its own object and null for the other", async () => {
      const res = await gqlA(
        `query ($mine: ID!, $theirs: ID!) { mine: client(id: $mine) { id name } theirs: client(id: $theirs) { id name } }`,
        {
          mine: A.client,
          theirs: B.client,
        },
      );
      expect(res.data).toEqual({ mine: { id: A.client, name: "Alpha Shared Client" }, theirs: null });
      expect(res.errors?.map((e) => [e.path, e.extensions.code])).toEqual([[["theirs"], "not_found"]]);
    });

    it("lists never contain B's rows, also under search", async () => {
      const res = await gqlA(`{
        leads(limit: 100) { data { id } }
        clients(limit: 100) { data { id } }
        sharedLeads: leads(search: "SHARED") { data { id } }
        bravoLeads: leads(search: "bravo") { data { id } }
        sharedClients: clients(search: "shared") { data { id } }
        bravoClients: clients(search: "Bravo") { data { id } }
      }`);
      expect(res.errors).toBeUndefined();
      expect(ids(res.data.leads).sort()).toEqual([A.lead, A.convertedLead].sort());
      expect(ids(res.data.clients).sort()).toEqual([A.client, A.convertedClient].sort());
      expect(ids(res.data.sharedLeads).sort()).toEqual([A.lead, A.convertedLead].sort());
      expect(ids(res.data.sharedClients).sort()).toEqual([A.client, A.convertedClient].sort());
      expect(res.data.bravoLeads.data).toEqual([]);
      expect(res.data.bravoClients.data).toEqual([]);
    });

    it("mutations on B's ids fail with not_found and change nothing", async () => {
      for (const [mutation, id] of [
        [`mutation ($id: ID!) { updateLead(id: $id, stage: lost, notes: "x") { id } }`, B.lead],
        [`mutation ($id: ID!) { deleteLead(id: $id) { id deleted } }`, B.lead],
        [`mutation ($id: ID!) { convertLead(id: $id) { id client_id } }`, B.lead],
        [`mutation ($id: ID!) { convertLead(id: $id) { id client_id } }`, B.convertedLead],
        [`mutation ($id: ID!) { updateClient(id: $id, name: "Hijacked", address: null) { id } }`, B.client],
        [`mutation ($id: ID!) { deleteClient(id: $id) { id deleted } }`, B.client],
        [`mutation ($id: ID!) { deleteClient(id: $id) { id deleted } }`, B.convertedClient],
      ] as const) {
        const res = await gqlA(mutation, { id });
        expect(res.data, mutation).toBeNull();
        expect(res.errors?.[0]?.extensions, mutation).toMatchObject({
          code: "not_found",
          type: "invalid_request_error",
        });
        expect(res.errors?.[0]?.message).toContain(id);
      }
      await expectBUnchanged();
    });

    it("nested lead { client } reaches only the caller's own client", async () => {
      const own = await gqlA(`query ($id: ID!) { lead(id: $id) { id client_id client { id name } } }`, {
        id: A.convertedLead,
      });
      expect(own.errors).toBeUndefined();
      expect(own.data.lead).toEqual({
        id: A.convertedLead,
        client_id: A.convertedClient,
        client: { id: A.convertedClient, name: "Alpha Converted" },
      });

      const foreign = await gqlA(
        `query ($id: ID!) { lead(id: $id) { id client_id client { id name email } } }`,
        { id: B.convertedLead },
      );
      expect(foreign.data).toEqual({ lead: null });
      expect(foreign.errors?.[0]?.extensions.code).toBe("not_found");

      const listed = await gqlA(`{ leads(limit: 100) { data { id client_id client { id name } } } }`);
      expect(listed.errors).toBeUndefined();
      const reached = listed.data.leads.data.flatMap((lead: { client: { id: string } | null }) =>
        lead.client ? [lead.client.id] : [],
      );
      expect(reached).toEqual([A.convertedClient]);
      const serialized = JSON.stringify(listed.data);
      for (const id of Object.values(B)) expect(serialized).not.toContain(id);
      expect(serialized).not.toContain("Bravo");
    });

    it("workspace is the caller's own", async () => {
      const gqlB = graphql(server().url, b.key);
      expect((await gqlA(`{ workspace { id } }`)).data.workspace.id).toBe(a.workspaceId);
      expect((await gqlB(`{ workspace { id } }`)).data.workspace.id).toBe(b.workspaceId);
    });
  });

  describe("afterwards", () => {
    it("B's objects are exactly as before, and A's own objects still work", async () => {
      await expectBUnchanged();
      for (const path of [
        `/leads/${A.lead}`,
        `/leads/${A.convertedLead}`,
        `/clients/${A.client}`,
        `/clients/${A.convertedClient}`,
      ]) {
        expect((await apiA.get(path)).status, path).toBe(200);
      }
    });
  });
});
