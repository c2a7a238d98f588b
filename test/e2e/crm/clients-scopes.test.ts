import { describe, expect, it } from "vitest";
import { expectInsufficientScope } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { scratchOf } from "./support.ts";

e2e("clients: scopes", (server) => {
  const scratch = scratchOf(server);

  describe("scopes", () => {
    it("asks for a credential at all", async () => {
      const res = await rest(server().api).get("/clients");
      expect(res.status).toBe(401);
      expect(res.body.error.type).toBe("authentication_error");
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer resource_metadata="/);
    });

    it("a read-only key reads but cannot write (403 insufficient_scope clients.write), and nothing is written", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const reader = rest(server().api, (await server().key(own.workspaceId, ["clients.read"])).key);

      expect((await reader.get("/clients")).status).toBe(200);
      expect((await reader.get(`/clients/${existing.id}`)).body).toEqual(existing);
      for (const res of [
        await reader.post("/clients", { name: "Sneaky" }),
        await reader.patch(`/clients/${existing.id}`, { name: "Sneaky" }),
        await reader.delete(`/clients/${existing.id}`),
      ]) {
        expectInsufficientScope(res, "clients.write");
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });

    it("a write-only key can create, update and delete but not list or retrieve (403 clients.read)", async () => {
      const { own, client } = await scratch();
      const writer = rest(server().api, (await server().key(own.workspaceId, ["clients.write"])).key);
      const created = await writer.post("/clients", { name: "Write Only Inc" });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ object: "client", name: "Write Only Inc" });
      expect((await client.get(`/clients/${created.body.id}`)).body).toEqual(created.body);

      for (const res of [await writer.get("/clients"), await writer.get(`/clients/${created.body.id}`)]) {
        expectInsufficientScope(res, "clients.read");
      }
      const patched = await writer.patch(`/clients/${created.body.id}`, { notes: "w" });
      expect(patched.status).toBe(200);
      expect(patched.body.notes).toBe("w");
      expect((await writer.delete(`/clients/${created.body.id}`)).status).toBe(200);
      expect((await client.get(`/clients/${created.body.id}`)).status).toBe(404);
    });

    it("a key without any clients scope gets 403 everywhere", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const other = rest(
        server().api,
        (await server().key(own.workspaceId, ["leads.read", "leads.write"])).key,
      );
      const expectations: [Promise<{ status: number; body: any }>, string][] = [
        [other.get("/clients"), "clients.read"],
        [other.get(`/clients/${existing.id}`), "clients.read"],
        [other.post("/clients", { name: "x" }), "clients.write"],
        [other.patch(`/clients/${existing.id}`, { name: "x" }), "clients.write"],
        [other.delete(`/clients/${existing.id}`), "clients.write"],
      ];
      for (const [pending, scope] of expectations) {
        const res = await pending;
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });

    it("applies the same scopes over GraphQL, with the code in extensions", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/clients", { name: "Existing" })).body;
      const writer = graphql(server().url, (await server().key(own.workspaceId, ["clients.write"])).key);
      const reader = graphql(server().url, (await server().key(own.workspaceId, ["clients.read"])).key);

      const made = await writer(`mutation { createClient(name: "Via GraphQL") { object id name } }`);
      expect(made.errors).toBeUndefined();
      expect(made.data.createClient).toMatchObject({ object: "client", name: "Via GraphQL" });

      for (const [query, scope] of [
        [`{ clients { data { id } } }`, "clients.read"],
        [`{ client(id: "${existing.id}") { id } }`, "clients.read"],
      ] as const) {
        const res = await writer(query);
        // The root fields are nullable: the refused field comes back null.
        expect(Object.values(res.data ?? {}).every((v) => v === null)).toBe(true);
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          type: "permission_error",
          required_scope: scope,
          request_id: expect.stringMatching(/^req_/),
        });
      }
      for (const query of [
        `mutation { createClient(name: "Nope") { id } }`,
        `mutation { updateClient(id: "${existing.id}", name: "Nope") { id } }`,
        `mutation { deleteClient(id: "${existing.id}") { id } }`,
      ]) {
        const res = await reader(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "clients.write",
        });
      }
      expect(await count()).toBe(2);
      expect((await client.get(`/clients/${existing.id}`)).body).toEqual(existing);
    });
  });
});
