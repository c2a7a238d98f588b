import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import { breakOutbox, outbox } from "../../support/outbox.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

e2e("event outbox: leads and clients", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  const events = () => outbox(server(), tenant.workspaceId);
  const newEvents = async (before: number) => (await events()).slice(before);

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  describe("written with the change", () => {
    it("lead.created carries the lead exactly as the API returned it", async () => {
      const before = (await events()).length;
      const lead = await api.post("/leads", {
        full_name: "Ada Lovelace",
        estimated_value: 99.5,
        stage: "contacted",
      });
      expect(lead.status).toBe(201);
      const written = await newEvents(before);
      expect(written.map((e) => e.type)).toEqual(["lead.created"]);
      expect(written[0]!.id).toMatch(/^evt_[0-9A-Z]{26}$/);
      expect(written[0]!.workspaceId).toBe(tenant.workspaceId);
      expect(written[0]!.data).toEqual(lead.body);
      expect(Object.keys(written[0]!.data as object)).toEqual(Object.keys(lead.body));
      expect(written[0]!.createdAt.getTime()).toBeGreaterThanOrEqual(
        new Date(lead.body.created_at).getTime(),
      );
    });

    it("lead.stage_changed only when the stage changes", async () => {
      const lead = (await api.post("/leads", { first_name: "Grace" })).body;
      const before = (await events()).length;
      await api.patch(`/leads/${lead.id}`, { notes: "no stage here" });
      await api.patch(`/leads/${lead.id}`, { stage: "new" });
      expect(await newEvents(before)).toEqual([]);
      const moved = await api.patch(`/leads/${lead.id}`, { stage: "proposal" });
      const written = await newEvents(before);
      expect(written.map((e) => e.type)).toEqual(["lead.stage_changed"]);
      expect(written[0]!.data).toEqual(moved.body);
    });

    it("converting a lead writes client.created and lead.stage_changed", async () => {
      const lead = (await api.post("/leads", { full_name: "Hedy Lamarr", email: "hedy@example.com" })).body;
      const before = (await events()).length;
      const converted = await api.post(`/leads/${lead.id}/convert`);
      const client = await api.get(`/clients/${converted.body.client_id}`);
      const written = await newEvents(before);
      expect(written.map((e) => e.type)).toEqual(["client.created", "lead.stage_changed"]);
      expect(written[0]!.data).toEqual(client.body);
      expect(written[1]!.data).toEqual(converted.body);
    });

    it("client.created and client.updated carry the client", async () => {
      const before = (await events()).length;
      const created = await api.post("/clients", { name: "Acme", address: { city: "Lagos" } });
      const updated = await api.patch(`/clients/${created.body.id}`, { phone: "+234 1 234" });
      const written = await newEvents(before);
      expect(written.map((e) => e.type)).toEqual(["client.created", "client.updated"]);
      expect(written[0]!.data).toEqual(created.body);
      expect(written[1]!.data).toEqual(updated.body);
    });

    it("GraphQL mutations write the same events as REST", async () => {
      const before = (await events()).length;
      const gql = graphql(server().url, tenant.key);
      const made = await gql(`mutation { createLead(first_name: "Frances") { id } }`);
      const lead = await api.get(`/leads/${made.data.createLead.id}`);
      const written = await newEvents(before);
      expect(written.map((e) => e.type)).toEqual(["lead.created"]);
      expect(written[0]!.data).toEqual(lead.body);
    });

    it("shows the whole resource even when the caller could not read it", async () => {
      const writeOnly = await server().key(tenant.workspaceId, ["leads.write"]);
      const before = (await events()).length;
      const res = await rest(server().api, writeOnly.key).post("/leads", {
        first_name: "Barbara",
        notes: "w/o read",
      });
      expect(res.status).toBe(201);
      const written = await newEvents(before);
      expect(written[0]!.data).toEqual((await api.get(`/leads/${res.body.id}`)).body);
    });
  });

  describe("never without the change, never the change without the event", () => {
    it("a request that fails validation writes no event", async () => {
      const before = (await events()).length;
      expect((await api.post("/leads", { first_name: "" })).status).toBe(400);
      expect((await api.post("/clients", { name: "A", email: "nope" })).status).toBe(400);
      expect((await api.patch("/leads/lead_01J00000000000000000000000", { stage: "won" })).status).toBe(404);
      expect(await newEvents(before)).toEqual([]);
    });

    it("when the outbox write fails, the lead is not created either", async () => {
      const leadsBefore = (await api.get("/leads?limit=100")).body.data.length;
      const eventsBefore = (await events()).length;
      const repair = await breakOutbox(server());
      try {
        const res = await api.post("/leads", { first_name: "Lost" });
        expect(res.status).toBe(500);
        expect(res.body.error.code).toBe("internal_error");
      } finally {
        await repair();
      }
      expect((await api.get("/leads?limit=100")).body.data.length).toBe(leadsBefore);
      expect((await api.get("/leads?search=Lost")).body.data).toEqual([]);
      expect((await events()).length).toBe(eventsBefore);
    });

    it("a failure after an event was written rolls that event back with everything else", async () => {
      const lead = (await api.post("/leads", { full_name: "Joan Clarke", stage: "qualified" })).body;
      const clientsBefore = (await api.get("/clients?limit=100")).body.data.length;
      const eventsBefore = (await events()).length;
      // convert writes client.created first; the failure comes with lead.stage_changed.
      const repair = await breakOutbox(server(), "lead.stage_changed");
      try {
        expect((await api.post(`/leads/${lead.id}/convert`)).status).toBe(500);
      } finally {
        await repair();
      }
      expect((await api.get(`/leads/${lead.id}`)).body).toEqual(lead);
      expect((await api.get("/clients?limit=100")).body.data.length).toBe(clientsBefore);
      expect((await events()).length).toBe(eventsBefore);

      const retried = await api.post(`/leads/${lead.id}/convert`);
      expect(retried.status).toBe(200);
      expect((await newEvents(eventsBefore)).map((e) => e.type)).toEqual([
        "client.created",
        "lead.stage_changed",
      ]);
    });

    it("every committed change has its event: one per created lead under concurrency", async () => {
      const other = await server().tenant();
      const client = rest(server().api, other.key);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => client.post("/leads", { first_name: `C${i}` })),
      );
      expect(results.every((r) => r.status === 201)).toBe(true);
      const written = await outbox(server(), other.workspaceId);
      expect(written.map((e) => e.type)).toEqual(Array(12).fill("lead.created"));
      expect(new Set(written.map((e) => (e.data as { id: string }).id))).toEqual(
        new Set(results.map((r) => r.body.id)),
      );
    });
  });
});
