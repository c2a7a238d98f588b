import { beforeAll, describe, expect, it } from "vitest";
import { expectNotFound, expectValidationFailed, ISO } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";

e2e("leads", (server) => {
  const { tenant, api } = useWorkspace(server);

  describe("create", () => {
    it("creates a lead with 201 and the full flat object", async () => {
      const res = await api.post("/leads", {
        first_name: "Grace",
        last_name: "Hopper",
        company_name: "Navy",
        email: "Grace@Example.com",
        stage: "qualified",
        priority: "high",
        estimated_value: 1200.5,
        expected_close_date: "2026-12-31",
        next_follow_up_at: "2026-12-01T10:00:00+02:00",
      });
      expect(res.status).toBe(201);
      expect(res.headers.get("x-request-id")).toMatch(/^req_/);
      expect(res.body).toMatchObject({
        object: "lead",
        first_name: "Grace",
        last_name: "Hopper",
        full_name: "Grace Hopper",
        company_name: "Navy",
        email: "grace@example.com",
        stage: "qualified",
        priority: "high",
        estimated_value: 1200.5,
        currency: "USD",
        expected_close_date: "2026-12-31",
        next_follow_up_at: "2026-12-01T08:00:00.000Z",
        client_id: null,
      });
      expect(res.body.id).toMatch(/^lead_[0-9A-Z]{26}$/);
      expect(res.body.created_at).toMatch(ISO);
      expect(res.body.updated_at).toMatch(ISO);
      expect(res.body).not.toHaveProperty("client");
    });

    it("defaults stage to new and priority to medium", async () => {
      const res = await api.post("/leads", { first_name: "Alan" });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        stage: "new",
        priority: "medium",
        last_name: null,
        estimated_value: null,
      });
    });

    it("splits full_name at the first space when first_name is absent", async () => {
      const res = await api.post("/leads", { full_name: "Ada King Lovelace" });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ first_name: "Ada", last_name: "King Lovelace" });
    });

    it.each([
      [{}, "first_name"],
      [{ first_name: "   " }, "first_name"],
      [{ full_name: "" }, "full_name"],
      [{ first_name: 12 }, "first_name"],
      [{ first_name: "A", stage: "bogus" }, "stage"],
      [{ first_name: "A", priority: "critical" }, "priority"],
      [{ first_name: "A", expected_close_date: "2026-02-30" }, "expected_close_date"],
      [{ first_name: "A", expected_close_date: "31/12/2026" }, "expected_close_date"],
      [{ first_name: "A", next_follow_up_at: "tomorrow" }, "next_follow_up_at"],
      [{ first_name: "A", estimated_value: "100" }, "estimated_value"],
      [{ first_name: "A", estimated_value: 10.123 }, "estimated_value"],
      [{ first_name: "A", estimated_value: -5 }, "estimated_value"],
      [{ first_name: "A", email: "not-an-email" }, "email"],
      [{ first_name: "A", currency: "usd" }, "currency"],
      [{ first_name: "A", nickname: "x" }, "nickname"],
      [{ first_name: "A", stage: null }, "stage"],
    ])("rejects %j with 400 validation_failed on %s and writes nothing", async (body, param) => {
      const before = (await api.get("/leads?limit=100")).body.data.length;
      const res = await api.post("/leads", body);
      expectValidationFailed(res, param);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect((await api.get("/leads?limit=100")).body.data.length).toBe(before);
    });
  });

  describe("read, update, delete", () => {
    it("retrieves, patches (null clears, stage change stamps stage_changed_at) and deletes", async () => {
      const created = (
        await api.post("/leads", { first_name: "Katherine", notes: "call", estimated_value: 10 })
      ).body;
      expect((await api.get(`/leads/${created.id}`)).body).toEqual(created);

      const patched = await api.patch(`/leads/${created.id}`, {
        notes: null,
        estimated_value: null,
        last_name: "Johnson",
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({
        notes: null,
        estimated_value: null,
        last_name: "Johnson",
        stage: "new",
        stage_changed_at: null,
      });

      const moved = await api.patch(`/leads/${created.id}`, { stage: "proposal" });
      expect(moved.body.stage).toBe("proposal");
      expect(moved.body.stage_changed_at).toMatch(ISO);

      const same = await api.patch(`/leads/${created.id}`, { stage: "proposal" });
      expect(same.body.stage_changed_at).toBe(moved.body.stage_changed_at);

      const back = await api.patch(`/leads/${created.id}`, { stage: "new" });
      expect(back.body.stage).toBe("new");

      const deleted = await api.delete(`/leads/${created.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: created.id, object: "lead", deleted: true });
      expect((await api.get(`/leads/${created.id}`)).status).toBe(404);
      expect((await api.delete(`/leads/${created.id}`)).status).toBe(404);
    });

    it("rejects bad PATCH input without changing the lead", async () => {
      const created = (await api.post("/leads", { first_name: "Margaret" })).body;
      for (const [body, param] of [
        [{ first_name: null }, "first_name"],
        [{ first_name: "" }, "first_name"],
        [{ stage: "archived" }, "stage"],
        [{ id: "lead_other" }, "id"],
        [{ unknown_field: 1 }, "unknown_field"],
      ] as const) {
        const res = await api.patch(`/leads/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error.param).toBe(param);
      }
      expect((await api.get(`/leads/${created.id}`)).body).toEqual(created);
    });

    it("answers 404 not_found for an unknown id", async () => {
      for (const res of [
        await api.get("/leads/lead_01J00000000000000000000000"),
        await api.patch("/leads/lead_01J00000000000000000000000", { notes: "x" }),
        await api.delete("/leads/lead_01J00000000000000000000000"),
        await api.post("/leads/lead_01J00000000000000000000000/convert"),
      ]) {
        expectNotFound(res);
      }
    });
  });

  describe("convert", () => {
    it("creates a client from the lead, links it and moves the lead to won", async () => {
      const lead = (
        await api.post("/leads", { full_name: "Hedy Lamarr", email: "hedy@example.com", company_name: "MGM" })
      ).body;
      const res = await api.post(`/leads/${lead.id}/convert`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: lead.id, stage: "won" });
      expect(res.body.client_id).toMatch(/^cli_/);
      expect(res.body.stage_changed_at).toMatch(ISO);

      const client = await api.get(`/clients/${res.body.client_id}`);
      expect(client.status).toBe(200);
      expect(client.body).toMatchObject({
        object: "client",
        name: "Hedy Lamarr",
        email: "hedy@example.com",
        company_name: "MGM",
      });

      const again = await api.post(`/leads/${lead.id}/convert`);
      expect(again.status).toBe(400);
      expect(again.body.error.code).toBe("invalid_state");
    });

    it("needs both leads.write and clients.write", async () => {
      const lead = (await api.post("/leads", { first_name: "Joan" })).body;
      const onlyLeads = await server().key(tenant.workspaceId, ["leads.read", "leads.write"]);
      const res = await rest(server().api, onlyLeads.key).post(`/leads/${lead.id}/convert`);
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "clients.write" });
      expect((await api.get(`/leads/${lead.id}`)).body.client_id).toBeNull();
    });
  });

  describe("list", () => {
    let own: Tenant;
    let ids: string[];

    beforeAll(async () => {
      own = await server().tenant();
      const client = rest(server().api, own.key);
      ids = [];
      for (const [i, stage] of ["new", "won", "new", "lost", "new"].entries()) {
        ids.push(
          (
            await client.post("/leads", {
              first_name: `Person${i}`,
              company_name: i === 3 ? "Acme Widgets" : null,
              stage,
            })
          ).body.id,
        );
      }
    });

    it("pages newest first with limit and cursor", async () => {
      const client = rest(server().api, own.key);
      const first = await client.get("/leads?limit=2");
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(first.body.data.map((l: { id: string }) => l.id)).toEqual([ids[4], ids[3]]);
      const second = await client.get(`/leads?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.data.map((l: { id: string }) => l.id)).toEqual([ids[2], ids[1]]);
      const third = await client.get(`/leads?limit=2&cursor=${second.body.next_cursor}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(third.body.data.map((l: { id: string }) => l.id)).toEqual([ids[0]]);
      expect((await client.get("/leads")).body.data).toHaveLength(5);
    });

    it("filters by stage and by case-insensitive search", async () => {
      const client = rest(server().api, own.key);
      const won = await client.get("/leads?stage=new");
      expect(won.body.data.map((l: { id: string }) => l.id)).toEqual([ids[4], ids[2], ids[0]]);
      const search = await client.get("/leads?search=aCmE");
      expect(search.body.data.map((l: { id: string }) => l.id)).toEqual([ids[3]]);
      const both = await client.get("/leads?search=person&stage=lost");
      expect(both.body.data.map((l: { id: string }) => l.id)).toEqual([ids[3]]);
    });

    it.each([
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=abc", "limit"],
      ["limit=1.5", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["cursor=djE6bGVhZF94", "cursor"],
      ["stage=open", "stage"],
      ["colour=red", "colour"],
      ["limit=1&limit=2", "limit"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      const res = await rest(server().api, own.key).get(`/leads?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param });
    });
  });

  describe("over GraphQL", () => {
    it("speaks the same vocabulary and sees what REST wrote", async () => {
      const created = (
        await api.post("/leads", { first_name: "Barbara", last_name: "Liskov", stage: "contacted" })
      ).body;
      const gql = graphql(server().url, tenant.key);
      const read = await gql(
        `query ($id: ID!) { lead(id: $id) { object id first_name last_name stage priority created_at } }`,
        { id: created.id },
      );
      expect(read.errors).toBeUndefined();
      expect(read.data.lead).toEqual({
        object: "lead",
        id: created.id,
        first_name: "Barbara",
        last_name: "Liskov",
        stage: "contacted",
        priority: "medium",
        created_at: created.created_at,
      });

      const made = await gql(
        `mutation { createLead(full_name: "Frances Allen", stage: won) { id first_name last_name stage } }`,
      );
      expect(made.data.createLead).toMatchObject({ first_name: "Frances", last_name: "Allen", stage: "won" });
      expect((await api.get(`/leads/${made.data.createLead.id}`)).status).toBe(200);

      const list = await gql(`{ leads(stage: won, limit: 1) { object has_more next_cursor data { id } } }`);
      expect(list.data.leads.object).toBe("list");
      expect(list.data.leads.data[0].id).toBe(made.data.createLead.id);
    });

    it("reports validation and not-found errors with code and request_id", async () => {
      const gql = graphql(server().url, tenant.key);
      const missing = await gql(`{ lead(id: "lead_01J00000000000000000000000") { id } }`);
      expect(missing.data).toEqual({ lead: null });
      expect(missing.errors?.[0]?.extensions).toMatchObject({
        code: "not_found",
        request_id: expect.stringMatching(/^req_/),
      });

      const invalid = await gql(`mutation { createLead(first_name: "") { id } }`);
      expect(invalid.errors?.[0]?.extensions).toMatchObject({
        code: "validation_failed",
        param: "first_name",
      });

      const badLimit = await gql(`{ leads(limit: 500) { data { id } } }`);
      expect(badLimit.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "limit" });
    });
  });
});
