import { beforeAll, describe, expect, it } from "vitest";
import { expectValidationFailed, ids } from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, newWorkspace, useWorkspace } from "../../support/workspace.ts";
import { NEVER, NEVER_CLIENT } from "./support.ts";

const FIELDS =
  "object id name description client_id status start_date due_date budget currency created_at updated_at";

e2e("projects: list and over GraphQL", (server) => {
  const { tenant, api } = useWorkspace(server);
  let clientId: string;

  beforeAll(async () => {
    clientId = (await api.post("/clients", { name: "Wayne Enterprises" })).body.id;
  });

  describe("list", () => {
    let list: Api;
    let ids5: string[];
    let acme: string;

    beforeAll(async () => {
      ({ client: list } = await newWorkspace(server()));
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
      expect((await list.get("/projects?search=nothing-like-it")).body).toEqual({
        object: "list",
        data: [],
        has_more: false,
        next_cursor: null,
      });
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
      expectValidationFailed(res, param);
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
      expect(project).toMatchObject({
        object: "project",
        name: "Graph",
        client_id: clientId,
        budget: 99.99,
        status: "active",
        start_date: "2026-01-01",
      });
      expect((await api.get(`/projects/${project.id}`)).body).toEqual(project);

      const read = await gql(
        `query ($id: ID!) { project(id: $id) { ${FIELDS} client { id name } tasks { id } } }`,
        { id: project.id },
      );
      expect(read.errors).toBeUndefined();
      expect(read.data.project).toEqual({
        ...project,
        client: { id: clientId, name: "Wayne Enterprises" },
        tasks: [],
      });

      const listed = await gql(
        `query ($client: ID) { projects(client_id: $client, search: "GRAPH", limit: 5) { object has_more next_cursor data { id } } }`,
        {
          client: clientId,
        },
      );
      expect(listed.data.projects).toEqual({
        object: "list",
        has_more: false,
        next_cursor: null,
        data: [{ id: project.id }],
      });

      const updated = await gql(
        `mutation ($id: ID!) { updateProject(id: $id, status: on_hold, budget: null, client_id: null) { status budget client_id name } }`,
        {
          id: project.id,
        },
      );
      expect(updated.errors).toBeUndefined();
      expect(updated.data.updateProject).toEqual({
        status: "on_hold",
        budget: null,
        client_id: null,
        name: "Graph",
      });

      const deleted = await gql(`mutation ($id: ID!) { deleteProject(id: $id) { id object deleted } }`, {
        id: project.id,
      });
      expect(deleted.data.deleteProject).toEqual({ id: project.id, object: "project", deleted: true });
      expect((await api.get(`/projects/${project.id}`)).status).toBe(404);
    });

    it("nests the tasks of a project, newest first", async () => {
      const project = (await api.post("/projects", { name: "Nested" })).body;
      const first = (await api.post(`/projects/${project.id}/tasks`, { title: "first" })).body;
      const second = (await api.post(`/projects/${project.id}/tasks`, { title: "second", status: "done" }))
        .body;
      const res = await graphql(server().url, tenant.key)(
        `query ($id: ID!) { project(id: $id) { tasks { id title status } } }`,
        { id: project.id },
      );
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
      expect(missing.errors?.[0]?.extensions).toMatchObject({
        code: "not_found",
        request_id: expect.stringMatching(/^req_/),
      });

      for (const [query, param] of [
        [`mutation { createProject(name: " ") { id } }`, "name"],
        [
          `mutation { createProject(name: "P", start_date: "2026-03-02", due_date: "2026-03-01") { id } }`,
          "due_date",
        ],
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
});
