import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { expectHidden, ids } from "../../support/assertions.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const PROJECT_ID = /^prj_[0-9A-HJKMNP-TV-Z]{26}$/;
const NEVER = "prj_01J00000000000000000000000";
const NEVER_CLIENT = "cli_01J00000000000000000000000";
const FIELDS = "object id name description client_id status start_date due_date budget currency created_at updated_at";

e2e("projects", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  let clientId: string;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
    clientId = (await api.post("/clients", { name: "Wayne Enterprises" })).body.id;
  });

  /** A fresh workspace whose projects are under the test's control. */
  async function scratch() {
    const own = await server().tenant();
    const client = rest(server().api, own.key);
    const count = async () => {
      const res = await client.get("/projects?limit=100");
      expect(res.status).toBe(200);
      return res.body.data.length as number;
    };
    return { own, client, count };
  }

  describe("create", () => {
    it("creates a project with 201 and the full flat object", async () => {
      const res = await api.post("/projects", {
        name: "  Website relaunch ",
        description: "New site",
        client_id: clientId,
        status: "on_hold",
        start_date: "2026-03-01",
        due_date: "2026-06-30",
        budget: 12500.5,
        currency: "EUR",
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        object: "project",
        id: expect.stringMatching(PROJECT_ID),
        name: "Website relaunch",
        description: "New site",
        client_id: clientId,
        status: "on_hold",
        start_date: "2026-03-01",
        due_date: "2026-06-30",
        budget: 12500.5,
        currency: "EUR",
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
    });

    it("defaults status to active and currency to USD, everything optional to null", async () => {
      const res = await api.post("/projects", { name: "Bare" });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name: "Bare",
        status: "active",
        currency: "USD",
        description: null,
        client_id: null,
        start_date: null,
        due_date: null,
        budget: null,
      });
    });

    it("accepts a due_date equal to start_date and a budget of 0", async () => {
      const res = await api.post("/projects", { name: "One day", start_date: "2026-05-05", due_date: "2026-05-05", budget: 0 });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ start_date: "2026-05-05", due_date: "2026-05-05", budget: 0 });
    });

    it.each([
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "   " }, "name"],
      [{ name: null }, "name"],
      [{ name: 12 }, "name"],
      [{ name: "P", status: "done" }, "status"],
      [{ name: "P", status: null }, "status"],
      [{ name: "P", start_date: "2026-02-30" }, "start_date"],
      [{ name: "P", due_date: "31/12/2026" }, "due_date"],
      [{ name: "P", due_date: "2026-12-31T00:00:00Z" }, "due_date"],
      [{ name: "P", start_date: "2026-06-02", due_date: "2026-06-01" }, "due_date"],
      [{ name: "P", budget: -5 }, "budget"],
      [{ name: "P", budget: 10.123 }, "budget"],
      [{ name: "P", budget: "100" }, "budget"],
      [{ name: "P", currency: "usd" }, "currency"],
      [{ name: "P", currency: null }, "currency"],
      [{ name: "P", client_id: NEVER_CLIENT }, "client_id"],
      [{ name: "P", client_id: "" }, "client_id"],
      [{ name: "P", owner: "me" }, "owner"],
      [{ name: "P", id: NEVER }, "id"],
      [{ name: "P", created_at: "2026-01-01T00:00:00Z" }, "created_at"],
    ])("rejects %j with 400 validation_failed on %s and writes nothing", async (body, param) => {
      const { client, count } = await scratch();
      const res = await client.post("/projects", body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(0);
    });

    it("refuses a client of another workspace exactly like an unknown client", async () => {
      const other = await server().tenant();
      const theirs = (await rest(server().api, other.key).post("/clients", { name: "Foreign" })).body.id;
      const { client, count } = await scratch();
      const foreign = await client.post("/projects", { name: "P", client_id: theirs });
      const unknown = await client.post("/projects", { name: "P", client_id: NEVER_CLIENT });
      expect(foreign.status).toBe(400);
      expect(foreign.body.error).toMatchObject({ code: "validation_failed", param: "client_id" });
      expect(foreign.body.error.message).toBe(unknown.body.error.message.replace(NEVER_CLIENT, theirs));
      expect(await count()).toBe(0);
    });
  });

  describe("read, update, delete", () => {
    it("retrieves and patches: absent fields stay, null clears optional fields", async () => {
      const created = (
        await api.post("/projects", {
          name: "Audit",
          description: "Yearly",
          client_id: clientId,
          start_date: "2026-01-01",
          due_date: "2026-02-01",
          budget: 900,
        })
      ).body;
      expect((await api.get(`/projects/${created.id}`)).body).toEqual(created);

      const renamed = await api.patch(`/projects/${created.id}`, { name: "Audit 2026", status: "completed" });
      expect(renamed.status).toBe(200);
      expect(renamed.body).toEqual({ ...created, name: "Audit 2026", status: "completed", updated_at: expect.stringMatching(ISO) });

      const cleared = await api.patch(`/projects/${created.id}`, {
        description: null,
        client_id: null,
        start_date: null,
        due_date: null,
        budget: null,
      });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({
        name: "Audit 2026",
        status: "completed",
        currency: "USD",
        description: null,
        client_id: null,
        start_date: null,
        due_date: null,
        budget: null,
      });

      const empty = await api.patch(`/projects/${created.id}`, {});
      expect(empty.status).toBe(200);
      expect(empty.body).toMatchObject({ ...cleared.body, updated_at: expect.stringMatching(ISO) });
      expect((await api.get(`/projects/${created.id}`)).body).toEqual(empty.body);
    });

    it("checks due_date against the stored start_date and the other way round", async () => {
      const created = (await api.post("/projects", { name: "Dated", start_date: "2026-04-10", due_date: "2026-04-20" })).body;
      for (const body of [{ due_date: "2026-04-09" }, { start_date: "2026-04-21" }, { start_date: "2026-05-01", due_date: "2026-04-30" }]) {
        const res = await api.patch(`/projects/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: "validation_failed", param: "due_date" });
      }
      expect((await api.get(`/projects/${created.id}`)).body).toEqual(created);

      const moved = await api.patch(`/projects/${created.id}`, { start_date: "2026-05-01", due_date: "2026-05-31" });
      expect(moved.body).toMatchObject({ start_date: "2026-05-01", due_date: "2026-05-31" });
      const open = await api.patch(`/projects/${created.id}`, { start_date: null });
      expect(open.body).toMatchObject({ start_date: null, due_date: "2026-05-31" });
      const early = await api.patch(`/projects/${created.id}`, { due_date: "2020-01-01" });
      expect(early.status).toBe(200);
      expect(early.body.due_date).toBe("2020-01-01");
    });

    it("links a project to a client by PATCH, only a client of the workspace", async () => {
      const created = (await api.post("/projects", { name: "Later client" })).body;
      const other = await server().tenant();
      const theirs = (await rest(server().api, other.key).post("/clients", { name: "Foreign" })).body.id;
      const refused = await api.patch(`/projects/${created.id}`, { client_id: theirs });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatchObject({ code: "validation_failed", param: "client_id" });
      expect((await api.get(`/projects/${created.id}`)).body.client_id).toBeNull();
      const linked = await api.patch(`/projects/${created.id}`, { client_id: clientId });
      expect(linked.body.client_id).toBe(clientId);
    });

    it("rejects bad PATCH input without changing the project", async () => {
      const created = (await api.post("/projects", { name: "Steady", budget: 10 })).body;
      for (const [body, param] of [
        [{ name: null }, "name"],
        [{ name: "  " }, "name"],
        [{ status: "paused" }, "status"],
        [{ status: null }, "status"],
        [{ budget: -1 }, "budget"],
        [{ currency: null }, "currency"],
        [{ start_date: "tomorrow" }, "start_date"],
        [{ id: NEVER }, "id"],
        [{ tasks: [] }, "tasks"],
        [{ client: null }, "client"],
      ] as const) {
        const res = await api.patch(`/projects/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: "validation_failed", param });
      }
      expect((await api.get(`/projects/${created.id}`)).body).toEqual(created);
    });

    it("deletes a project with all its tasks", async () => {
      const project = (await api.post("/projects", { name: "Doomed" })).body;
      const tasks: string[] = [];
      for (const title of ["one", "two"]) tasks.push((await api.post(`/projects/${project.id}/tasks`, { title })).body.id);
      const keep = (await api.post("/projects", { name: "Survivor" })).body;
      const kept = (await api.post(`/projects/${keep.id}/tasks`, { title: "stays" })).body;

      const deleted = await api.delete(`/projects/${project.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: project.id, object: "project", deleted: true });
      expect((await api.get(`/projects/${project.id}`)).status).toBe(404);
      for (const id of tasks) expect((await api.get(`/tasks/${id}`)).status).toBe(404);
      expect(await server().running.db.prisma.task.count({ where: { projectId: project.id } })).toBe(0);
      expect((await api.get(`/tasks/${kept.id}`)).body).toEqual(kept);
      expect((await api.delete(`/projects/${project.id}`)).status).toBe(404);
    });

    it("answers 404 not_found for an unknown id", async () => {
      for (const res of [await api.get(`/projects/${NEVER}`), await api.patch(`/projects/${NEVER}`, { name: "x" }), await api.delete(`/projects/${NEVER}`)]) {
        expect(res.status).toBe(404);
        expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found", param: "id" });
        expect(res.body.error.message).toContain(NEVER);
      }
    });
  });

  describe("list", () => {
    let own: Tenant;
    let list: ReturnType<typeof rest>;
    let ids5: string[];
    let acme: string;

    beforeAll(async () => {
      own = await server().tenant();
      list = rest(server().api, own.key);
      acme = (await list.post("/clients", { name: "Acme" })).body.id;
      ids5 = [];
      for (const [i, body] of [
        { name: "Alpha site", status: "active" },
        { name: "Beta app", status: "completed", client_id: acme },
        { name: "Gamma", description: "Mobile SITE rebuild", status: "active", client_id: acme },
        { name: "Delta", status: "archived" },
        { name: "Epsilon", status: "active" },
      ].entries()) {
        const res = await list.post("/projects", body);
        expect(res.status, String(i)).toBe(201);
        ids5.push(res.body.id);
      }
    });

    it("pages newest first with limit and cursor", async () => {
      const first = await list.get("/projects?limit=2");
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true, next_cursor: expect.any(String) });
      expect(ids(first.body)).toEqual([ids5[4], ids5[3]]);
      const second = await list.get(`/projects?limit=2&cursor=${first.body.next_cursor}`);
      expect(ids(second.body)).toEqual([ids5[2], ids5[1]]);
      const third = await list.get(`/projects?limit=2&cursor=${second.body.next_cursor}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(third.body)).toEqual([ids5[0]]);
      expect(ids((await list.get("/projects")).body)).toEqual([...ids5].reverse());
    });

    it("filters by status, client_id and search over name and description", async () => {
      expect(ids((await list.get("/projects?status=active")).body)).toEqual([ids5[4], ids5[2], ids5[0]]);
      expect(ids((await list.get(`/projects?client_id=${acme}`)).body)).toEqual([ids5[2], ids5[1]]);
      expect(ids((await list.get(`/projects?client_id=${acme}&status=active`)).body)).toEqual([ids5[2]]);
      expect(ids((await list.get("/projects?search=sItE")).body)).toEqual([ids5[2], ids5[0]]);
      expect(ids((await list.get("/projects?search=site&status=active&limit=1")).body)).toEqual([ids5[2]]);
      expect(ids((await list.get(`/projects?client_id=${NEVER_CLIENT}`)).body)).toEqual([]);
      expect((await list.get("/projects?search=nothing-like-it")).body).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
    });

    it.each([
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=abc", "limit"],
      ["limit=1.5", "limit"],
      ["limit=1&limit=2", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["cursor=djE6bGVhZF94", "cursor"],
      ["status=open", "status"],
      ["name=Alpha", "name"],
      ["colour=red", "colour"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      const res = await list.get(`/projects?${query}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
    });
  });

  describe("over GraphQL", () => {
    it("creates, reads, lists, updates and deletes with the REST vocabulary", async () => {
      const gql = graphql(server().url, tenant.key);
      const made = await gql(
        `mutation ($client: ID) { createProject(name: "Graph", client_id: $client, budget: 99.99, start_date: "2026-01-01") { ${FIELDS} } }`,
        { client: clientId },
      );
      expect(made.errors).toBeUndefined();
      const project = made.data.createProject;
      expect(project).toMatchObject({ object: "project", name: "Graph", client_id: clientId, budget: 99.99, status: "active", start_date: "2026-01-01" });
      expect((await api.get(`/projects/${project.id}`)).body).toEqual(project);

      const read = await gql(`query ($id: ID!) { project(id: $id) { ${FIELDS} client { id name } tasks { id } } }`, { id: project.id });
      expect(read.errors).toBeUndefined();
      expect(read.data.project).toEqual({ ...project, client: { id: clientId, name: "Wayne Enterprises" }, tasks: [] });

      const listed = await gql(`query ($client: ID) { projects(client_id: $client, search: "GRAPH", limit: 5) { object has_more next_cursor data { id } } }`, {
        client: clientId,
      });
      expect(listed.data.projects).toEqual({ object: "list", has_more: false, next_cursor: null, data: [{ id: project.id }] });

      const updated = await gql(`mutation ($id: ID!) { updateProject(id: $id, status: on_hold, budget: null, client_id: null) { status budget client_id name } }`, {
        id: project.id,
      });
      expect(updated.errors).toBeUndefined();
      expect(updated.data.updateProject).toEqual({ status: "on_hold", budget: null, client_id: null, name: "Graph" });

      const deleted = await gql(`mutation ($id: ID!) { deleteProject(id: $id) { id object deleted } }`, { id: project.id });
      expect(deleted.data.deleteProject).toEqual({ id: project.id, object: "project", deleted: true });
      expect((await api.get(`/projects/${project.id}`)).status).toBe(404);
    });

    it("nests the tasks of a project, newest first", async () => {
      const project = (await api.post("/projects", { name: "Nested" })).body;
      const first = (await api.post(`/projects/${project.id}/tasks`, { title: "first" })).body;
      const second = (await api.post(`/projects/${project.id}/tasks`, { title: "second", status: "done" })).body;
      const res = await graphql(server().url, tenant.key)(`query ($id: ID!) { project(id: $id) { tasks { id title status } } }`, { id: project.id });
      expect(res.errors).toBeUndefined();
      expect(res.data.project.tasks).toEqual([
        { id: second.id, title: "second", status: "done" },
        { id: first.id, title: "first", status: "todo" },
      ]);
    });

    it("reports validation and not-found errors with code, param and request_id", async () => {
      const gql = graphql(server().url, tenant.key);
      const missing = await gql(`{ project(id: "${NEVER}") { id } }`);
      expect(missing.data).toEqual({ project: null });
      expect(missing.errors?.[0]?.extensions).toMatchObject({ code: "not_found", request_id: expect.stringMatching(/^req_/) });

      for (const [query, param] of [
        [`mutation { createProject(name: " ") { id } }`, "name"],
        [`mutation { createProject(name: "P", start_date: "2026-03-02", due_date: "2026-03-01") { id } }`, "due_date"],
        [`mutation { createProject(name: "P", client_id: "${NEVER_CLIENT}") { id } }`, "client_id"],
        [`mutation { createProject(name: "P", currency: "eur") { id } }`, "currency"],
        [`mutation { updateProject(id: "${NEVER}", status: null) { id } }`, "status"],
        [`{ projects(limit: 500) { data { id } } }`, "limit"],
        [`{ projects(cursor: "nope") { data { id } } }`, "cursor"],
      ] as const) {
        const res = await gql(query);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({ code: "validation_failed", param });
      }

      // A bad literal fails the document's validation: a request error, so no param, and nothing runs.
      const negative = await gql(`mutation { createProject(name: "Negative", budget: -5) { id } }`);
      expect(negative.status).toBe(400);
      expect(negative.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed" });
      expect((await api.get("/projects?search=negative")).body.data).toEqual([]);
    });
  });

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
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "projects.write" });
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
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ type: "permission_error", code: "insufficient_scope", required_scope: "projects.read" });
      }
      expect((await writer.patch(`/projects/${created.body.id}`, { status: "archived" })).body.status).toBe("archived");
      expect((await writer.delete(`/projects/${created.body.id}`)).status).toBe(200);
      expect((await client.get(`/projects/${created.body.id}`)).status).toBe(404);
    });

    it("a key without projects scopes gets 403 on every route", async () => {
      const { own, client, count } = await scratch();
      const existing = (await client.post("/projects", { name: "Existing" })).body;
      const other = rest(server().api, (await server().key(own.workspaceId, ["clients.read", "clients.write", "leads.read", "leads.write"])).key);
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
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", type: "permission_error", required_scope: "projects.read" });
      }
      for (const query of [
        `mutation { createProject(name: "Nope") { id } }`,
        `mutation { updateProject(id: "${existing.id}", name: "Nope") { id } }`,
        `mutation { deleteProject(id: "${existing.id}") { id } }`,
      ]) {
        const res = await reader(query);
        expect(res.data).toBeNull();
        expect(res.errors?.[0]?.extensions).toMatchObject({ code: "insufficient_scope", required_scope: "projects.write" });
      }

      const nested = await reader(`query ($id: ID!) { project(id: $id) { id client_id client { name } } }`, { id: existing.id });
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
        const project = await api.post("/projects", { name: `${label} SharedProject`, description: "shared", client_id: side.client });
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
      expectHidden(await apiA.get(`/projects/${B.project}`), await apiA.get(`/projects/${NEVER}`), B.project, NEVER);
      for (const body of [{ name: "Hijacked" }, { client_id: A.client }, { status: "archived", description: null }, {}]) {
        expectHidden(await apiA.patch(`/projects/${B.project}`, body), await apiA.patch(`/projects/${NEVER}`, body), B.project, NEVER);
      }
      expectHidden(await apiA.delete(`/projects/${B.project}`), await apiA.delete(`/projects/${NEVER}`), B.project, NEVER);
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
      expectHidden(await apiB.get(`/projects/${made.body.id}`), await apiB.get(`/projects/${NEVER}`), made.body.id, NEVER);
      expect(ids((await apiB.get("/projects?search=alpha")).body)).toEqual([]);
      expect((await apiA.delete(`/projects/${made.body.id}`)).status).toBe(200);
    });

    it("over GraphQL: B's project is null with not_found, lists and mutations never reach it", async () => {
      const gqlA = graphql(server().url, a.key);
      const res = await gqlA(`query ($id: ID!) { project(id: $id) { id name tasks { id } } }`, { id: B.project });
      const ref = await gqlA(`query ($id: ID!) { project(id: $id) { id name tasks { id } } }`, { id: NEVER });
      expect(res.data).toEqual({ project: null });
      const { request_id: _a, ...ext } = res.errors![0]!.extensions;
      const { request_id: _b, ...refExt } = ref.errors![0]!.extensions;
      expect(ext).toEqual(refExt);
      expect(ext.code).toBe("not_found");

      const lists = await gqlA(`{ all: projects(limit: 100) { data { id } } shared: projects(search: "SHARED") { data { id client { id } tasks { id } } } }`);
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
