import { beforeAll, describe, expect, it } from "vitest";
import { expectHiddenAt, expectInsufficientScope, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { NEVER, scratchOf } from "./support.ts";

e2e("projects: scopes and tenancy", (server) => {
  const scratch = scratchOf(server);

  describe("scopes", () => {
    it("a read-only key reads but cannot write (403 projects.write), and nothing is written", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/projects", { name: "Existing" })).body;
      const reader = rest(server().api, (await server().key(own.workspaceId, ["projects.read"])).key);
      expect(ids((await reader.get("/projects")).body)).toEqual([existing.id]);
      expect((await reader.get(`/projects/${existing.id}`)).body).toEqual(existing);
      for (const res of [
        await reader.post("/projects", { name: "Sneaky" }),
        await reader.patch(`/projects/${existing.id}`, { name: "Sneaky" }),
        await reader.delete(`/projects/${existing.id}`),
      ]) {
        expectInsufficientScope(res, "projects.write");
      }
      expect(await count()).toBe(1);
      expect((await client.get(`/projects/${existing.id}`)).body).toEqual(existing);
    });

    it("a write-only key writes but cannot list or retrieve (403 projects.read): write does not imply read", async () => {
      const { own, client } = await scratch();
      const writer = rest(server().api, (await server().key(own.workspaceId, ["projects.write"])).key);
      const created = await writer.post("/projects", { name: "Write only" });
      expect(created.status).toBe(201);
      expect((await client.get(`/projects/${created.body.id}`)).body).toEqual(created.body);
      for (const res of [await writer.get("/projects"), await writer.get(`/projects/${created.body.id}`)]) {
        expectInsufficientScope(res, "projects.read");
      }
      expect((await writer.patch(`/projects/${created.body.id}`, { status: "archived" })).body.status).toBe(
        "archived",
      );
      expect((await writer.delete(`/projects/${created.body.id}`)).status).toBe(200);
      expect((await client.get(`/projects/${created.body.id}`)).status).toBe(404);
    });

    it("a key without projects scopes gets 403 on every route", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/projects", { name: "Existing" })).body;
      const other = rest(
        server().api,
        (await server().key(own.workspaceId, ["clients.read", "clients.write", "leads.read", "leads.write"]))
          .key,
      );
      for (const [res, scope] of [
        [await other.get("/projects"), "projects.read"],
        [await other.get(`/projects/${existing.id}`), "projects.read"],
        [await other.post("/projects", { name: "x" }), "projects.write"],
        [await other.patch(`/projects/${existing.id}`, { name: "x" }), "projects.write"],
        [await other.delete(`/projects/${existing.id}`), "projects.write"],
      ] as const) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }
      expect(await count()).toBe(1);
    });

    it("applies the same scopes over GraphQL, and project { client } needs clients.read", async () => {
      const { own, client, count } = await scratch();
      const acme = (await client.post("/clients", { name: "Acme" })).body.id;
      const existing = (await client.post("/projects", { name: "Existing", client_id: acme })).body;
      const writer = graphql(server().url, (await server().key(own.workspaceId, ["projects.write"])).key);
      const reader = graphql(server().url, (await server().key(own.workspaceId, ["projects.read"])).key);

      const made = await writer(`mutation { createProject(name: "Via GraphQL") { object name } }`);
      expect(made.data.createProject).toEqual({ object: "project", name: "Via GraphQL" });
      for (const query of [`{ projects { data { id } } }`, `{ project(id: "${existing.id}") { id } }`]) {
        const res = await writer(query);
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          type: "permission_error",
          required_scope: "projects.read",
        });
      }
      for (const query of [
        `mutation { createProject(name: "Nope") { id } }`,
        `mutation { updateProject(id: "${existing.id}", name: "Nope") { id } }`,
        `mutation { deleteProject(id: "${existing.id}") { id } }`,
      ]) {
        const res = await reader(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({
          code: "insufficient_scope",
          required_scope: "projects.write",
        });
      }

      const nested = await reader(`query ($id: ID!) { project(id: $id) { id client_id client { name } } }`, {
        id: existing.id,
      });
      expect(nested.data.project).toEqual({ id: existing.id, client_id: acme, client: null });
      expect(nested.errors?.map((e) => [e.path, e.extensions.code, e.extensions.required_scope])).toEqual([
        [["project", "client"], "insufficient_scope", "clients.read"],
      ]);
      expect(await count()).toBe(2);
      expect((await client.get(`/projects/${existing.id}`)).body).toEqual(existing);
    });
  });

  describe("tenancy", () => {
    let a: Tenant;
    let apiA: ReturnType<typeof rest>;
    let apiB: ReturnType<typeof rest>;
    const A = { project: "", client: "" };
    const B = { project: "", client: "", task: "" };
    let snapshot: unknown;

    const snapshotOfB = async () => [
      (await apiB.get("/projects?limit=100")).body,
      (await apiB.get(`/projects/${B.project}`)).body,
      (await apiB.get(`/projects/${B.project}/tasks`)).body,
    ];

    beforeAll(async () => {
      a = await server().tenant();
      const b = await server().tenant();
      apiA = rest(server().api, a.key);
      apiB = rest(server().api, b.key);
      for (const [api, side, label] of [
        [apiB, B, "Bravo"],
        [apiA, A, "Alpha"],
      ] as const) {
        side.client = (await api.post("/clients", { name: `${label} Client` })).body.id;
        const project = await api.post("/projects", {
          name: `${label} SharedProject`,
          description: "shared",
          client_id: side.client,
        });
        expect(project.status).toBe(201);
        side.project = project.body.id;
      }
      B.task = (await apiB.post(`/projects/${B.project}/tasks`, { title: "Bravo task" })).body.id;
      snapshot = await snapshotOfB();
    });

    it("lists only the caller's projects, under every filter", async () => {
      expect(ids((await apiA.get("/projects?limit=100")).body)).toEqual([A.project]);
      for (const query of ["search=shared", "search=bravo", "status=active", `client_id=${B.client}`]) {
        const res = await apiA.get(`/projects?${query}`);
        expect(res.status, query).toBe(200);
        expect(ids(res.body), query).not.toContain(B.project);
      }
      expect(ids((await apiA.get(`/projects?client_id=${B.client}`)).body)).toEqual([]);
      expect(ids((await apiA.get("/projects?search=bravo")).body)).toEqual([]);
    });

    it("GET, PATCH and DELETE of B's project are 404 like an unknown id, and change nothing", async () => {
      await expectHiddenAt((id) => apiA.get(`/projects/${id}`), B.project, NEVER);
      for (const body of [
        { name: "Hijacked" },
        { client_id: A.client },
        { status: "archived", description: null },
        {},
      ]) {
        await expectHiddenAt((id) => apiA.patch(`/projects/${id}`, body), B.project, NEVER);
      }
      await expectHiddenAt((id) => apiA.delete(`/projects/${id}`), B.project, NEVER);
      expect(await snapshotOfB()).toEqual(snapshot);
    });

    it("A cannot attach B's client to its own project", async () => {
      const res = await apiA.patch(`/projects/${A.project}`, { client_id: B.client });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: "validation_failed", param: "client_id" });
      expect((await apiA.get(`/projects/${A.project}`)).body.client_id).toBe(A.client);
    });

    it("POST /projects creates in the caller's workspace only", async () => {
      const made = await apiA.post("/projects", { name: "Alpha fresh" });
      expect(made.status).toBe(201);
      await expectHiddenAt((id) => apiB.get(`/projects/${id}`), made.body.id, NEVER);
      expect(ids((await apiB.get("/projects?search=alpha")).body)).toEqual([]);
      expect((await apiA.delete(`/projects/${made.body.id}`)).status).toBe(200);
    });

    it("over GraphQL: B's project is null with not_found, lists and mutations never reach it", async () => {
      const gqlA = graphql(server().url, a.key);
      const res = await gqlA(`query ($id: ID!) { project(id: $id) { id name tasks { id } } }`, {
        id: B.project,
      });
      const ref = await gqlA(`query ($id: ID!) { project(id: $id) { id name tasks { id } } }`, { id: NEVER });
      expect(res.data).toEqual({ project: null });
      const { request_id: _a, ...ext } = res.errors![0]!.extensions;
      const { request_id: _b, ...refExt } = ref.errors![0]!.extensions;
      expect(ext).toEqual(refExt);
      expect(ext.code).toBe("not_found");

      const lists = await gqlA(
        `{ all: projects(limit: 100) { data { id } } shared: projects(search: "SHARED") { data { id client { id } tasks { id } } } }`,
      );
      expect(lists.errors).toBeUndefined();
      expect(ids(lists.data.all)).toEqual([A.project]);
      expect(lists.data.shared.data).toEqual([{ id: A.project, client: { id: A.client }, tasks: [] }]);
      const serialized = JSON.stringify(lists.data);
      for (const id of Object.values(B)) expect(serialized).not.toContain(id);

      for (const mutation of [
        `mutation ($id: ID!) { updateProject(id: $id, name: "Hijacked") { id } }`,
        `mutation ($id: ID!) { deleteProject(id: $id) { id } }`,
      ]) {
        const out = await gqlA(mutation, { id: B.project });
        expect(out.data, mutation).toBeNull();
        expect(out.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
      }
      expect(await snapshotOfB()).toEqual(snapshot);
    });
  });
});
