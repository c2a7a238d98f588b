import { beforeAll, describe, expect, it } from "vitest";
import {
  expectHiddenAt,
  expectInsufficientScope,
  expectNotFound,
  expectValidationFailed,
  ISO,
  ids,
} from "../../support/assertions.ts";
import { graphql } from "../../support/graphql.ts";
import { rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, newWorkspace } from "../../support/workspace.ts";
import { NEVER as NEVER_PROJECT } from "./support.ts";

const TASK_ID = /^task_[0-9A-HJKMNP-TV-Z]{26}$/;
const NEVER = "task_01J00000000000000000000000";
const FIELDS =
  "object id project_id title description status priority assignee_email due_date completed_at created_at updated_at";

e2e("tasks", (server) => {
  /** A fresh workspace with one project, and its task.completed events straight from the outbox. */
  async function scratch() {
    const { own, client: api } = await newWorkspace(server());
    const project = (await api.post("/projects", { name: "Scratch" })).body;
    const completions = () =>
      server().running.db.prisma.event.findMany({
        where: { workspaceId: own.workspaceId, type: "task.completed" },
        orderBy: { id: "asc" },
        omit: { dispatchedAt: true },
      });
    const count = async () =>
      server().running.db.prisma.task.count({ where: { workspaceId: own.workspaceId } });
    return { own, api, project, completions, count };
  }

  describe("create", () => {
    it("creates a task in the project of the path with 201 and the full flat object", async () => {
      const { api, project, completions } = await scratch();
      const res = await api.post(`/projects/${project.id}/tasks`, {
        title: "  Write copy ",
        description: "Home page",
        status: "in_progress",
        priority: "urgent",
        assignee_email: "Ada@Example.COM",
        due_date: "2026-07-01",
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        object: "task",
        id: expect.stringMatching(TASK_ID),
        project_id: project.id,
        title: "Write copy",
        description: "Home page",
        status: "in_progress",
        priority: "urgent",
        assignee_email: "ada@example.com",
        due_date: "2026-07-01",
        completed_at: null,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      });
      expect((await api.get(`/tasks/${res.body.id}`)).body).toEqual(res.body);
      expect(await completions()).toEqual([]);
    });

    it("defaults status to todo and priority to medium", async () => {
      const { api, project } = await scratch();
      const res = await api.post(`/projects/${project.id}/tasks`, { title: "Plain" });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        status: "todo",
        priority: "medium",
        description: null,
        assignee_email: null,
        due_date: null,
        completed_at: null,
      });
    });

    it("created as done, a task is completed at once and emits task.completed with the task as GET returns it", async () => {
      const { api, project, completions } = await scratch();
      const res = await api.post(`/projects/${project.id}/tasks`, { title: "Already done", status: "done" });
      expect(res.status).toBe(201);
      expect(res.body.completed_at).toMatch(ISO);
      const events = await completions();
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual((await api.get(`/tasks/${res.body.id}`)).body);
    });

    it.each([
      [{}, "title"],
      [{ title: "" }, "title"],
      [{ title: "  " }, "title"],
      [{ title: null }, "title"],
      [{ title: 5 }, "title"],
      [{ title: "T", status: "finished" }, "status"],
      [{ title: "T", status: null }, "status"],
      [{ title: "T", priority: "critical" }, "priority"],
      [{ title: "T", priority: null }, "priority"],
      [{ title: "T", assignee_email: "not-an-email" }, "assignee_email"],
      [{ title: "T", assignee_email: 7 }, "assignee_email"],
      [{ title: "T", due_date: "2026-02-30" }, "due_date"],
      [{ title: "T", due_date: "next week" }, "due_date"],
      [{ title: "T", completed_at: "2026-01-01T00:00:00Z" }, "completed_at"],
      [{ title: "T", project_id: NEVER_PROJECT }, "project_id"],
      [{ title: "T", assignee: "ada@example.com" }, "assignee"],
    ])("rejects %j with 400 validation_failed on %s and writes nothing", async (body, param) => {
      const { api, project, count, completions } = await scratch();
      const res = await api.post(`/projects/${project.id}/tasks`, body);
      expectValidationFailed(res, param);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      expect(await count()).toBe(0);
      expect(await completions()).toEqual([]);
    });

    it("answers 404 on project_id for an unknown project, creating and listing", async () => {
      const { api, count } = await scratch();
      for (const res of [
        await api.post(`/projects/${NEVER_PROJECT}/tasks`, { title: "Orphan" }),
        await api.get(`/projects/${NEVER_PROJECT}/tasks`),
      ]) {
        expectNotFound(res, "project_id");
        expect(res.body.error.message).toContain(NEVER_PROJECT);
      }
      expect(await count()).toBe(0);
    });
  });

  describe("update and delete", () => {
    it("PATCH: absent fields stay, null clears optional fields, required ones refuse null", async () => {
      const { api, project } = await scratch();
      const created = (
        await api.post(`/projects/${project.id}/tasks`, {
          title: "Edit me",
          description: "d",
          priority: "low",
          assignee_email: "a@b.co",
          due_date: "2026-09-09",
        })
      ).body;

      const retitled = await api.patch(`/tasks/${created.id}`, { title: "Edited" });
      expect(retitled.status).toBe(200);
      expect(retitled.body).toEqual({ ...created, title: "Edited", updated_at: expect.stringMatching(ISO) });

      const cleared = await api.patch(`/tasks/${created.id}`, {
        description: null,
        assignee_email: null,
        due_date: null,
        priority: "high",
      });
      expect(cleared.body).toEqual({
        ...retitled.body,
        description: null,
        assignee_email: null,
        due_date: null,
        priority: "high",
        updated_at: expect.stringMatching(ISO),
      });

      for (const [body, param] of [
        [{ title: null }, "title"],
        [{ title: "" }, "title"],
        [{ status: null }, "status"],
        [{ status: "closed" }, "status"],
        [{ priority: null }, "priority"],
        [{ priority: "low", assignee_email: "nope" }, "assignee_email"],
        [{ due_date: "2026-13-01" }, "due_date"],
        [{ completed_at: null }, "completed_at"],
        [{ project_id: project.id }, "project_id"],
        [{ id: NEVER }, "id"],
        [{ project: {} }, "project"],
      ] as const) {
        const res = await api.patch(`/tasks/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: "validation_failed", param });
      }
      expect((await api.get(`/tasks/${created.id}`)).body).toEqual(cleared.body);
    });

    it("done sets completed_at and emits task.completed once; staying done emits nothing; leaving done clears it", async () => {
      const { api, project, completions } = await scratch();
      const task = (await api.post(`/projects/${project.id}/tasks`, { title: "Ship it" })).body;

      const started = await api.patch(`/tasks/${task.id}`, { status: "in_progress" });
      expect(started.body).toMatchObject({ status: "in_progress", completed_at: null });
      expect(await completions()).toHaveLength(0);

      const done = await api.patch(`/tasks/${task.id}`, { status: "done" });
      expect(done.status).toBe(200);
      expect(done.body.status).toBe("done");
      expect(done.body.completed_at).toMatch(ISO);
      const first = await completions();
      expect(first).toHaveLength(1);
      expect(first[0]!.data).toEqual((await api.get(`/tasks/${task.id}`)).body);

      const again = await api.patch(`/tasks/${task.id}`, { status: "done", title: "Shipped" });
      expect(again.body).toMatchObject({
        status: "done",
        title: "Shipped",
        completed_at: done.body.completed_at,
      });
      const retitled = await api.patch(`/tasks/${task.id}`, { description: "while done" });
      expect(retitled.body.completed_at).toBe(done.body.completed_at);
      expect(await completions()).toHaveLength(1);

      const reopened = await api.patch(`/tasks/${task.id}`, { status: "todo" });
      expect(reopened.body).toMatchObject({ status: "todo", completed_at: null });
      expect(await completions()).toHaveLength(1);

      const redone = await api.patch(`/tasks/${task.id}`, { status: "done" });
      expect(redone.body.completed_at).toMatch(ISO);
      const second = await completions();
      expect(second).toHaveLength(2);
      expect(second[1]!.data).toEqual(redone.body);
      expect(second[1]!.data).toMatchObject({
        object: "task",
        id: task.id,
        title: "Shipped",
        status: "done",
      });
    });

    it("a refused PATCH to done neither completes the task nor emits", async () => {
      const { api, project, completions } = await scratch();
      const task = (await api.post(`/projects/${project.id}/tasks`, { title: "Not yet" })).body;
      const res = await api.patch(`/tasks/${task.id}`, { status: "done", title: "" });
      expect(res.status).toBe(400);
      expect((await api.get(`/tasks/${task.id}`)).body).toEqual(task);
      expect(await completions()).toEqual([]);
    });

    it("deletes a task, then answers 404 for it", async () => {
      const { api, project } = await scratch();
      const keep = (await api.post(`/projects/${project.id}/tasks`, { title: "Keep" })).body;
      const task = (await api.post(`/projects/${project.id}/tasks`, { title: "Drop" })).body;
      const deleted = await api.delete(`/tasks/${task.id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body).toEqual({ id: task.id, object: "task", deleted: true });
      expect((await api.get(`/tasks/${task.id}`)).status).toBe(404);
      expect((await api.delete(`/tasks/${task.id}`)).status).toBe(404);
      expect(ids((await api.get(`/projects/${project.id}/tasks`)).body)).toEqual([keep.id]);
      expect((await api.get(`/projects/${project.id}`)).status).toBe(200);
    });

    it("answers 404 not_found for an unknown task id", async () => {
      const { api } = await scratch();
      for (const res of [
        await api.get(`/tasks/${NEVER}`),
        await api.patch(`/tasks/${NEVER}`, { status: "done" }),
        await api.delete(`/tasks/${NEVER}`),
      ]) {
        expectNotFound(res, "id");
      }
    });
  });

  describe("list", () => {
    let api: Api;
    let projectId: string;
    let made: string[];
    let otherTask: string;

    beforeAll(async () => {
      const own = await scratch();
      api = own.api;
      projectId = own.project.id;
      made = [];
      for (const body of [
        { title: "t0", status: "todo", priority: "low", assignee_email: "ada@example.com" },
        { title: "t1", status: "done", priority: "high", assignee_email: "bob@example.com" },
        { title: "t2", status: "todo", priority: "high", assignee_email: "ADA@example.com" },
        { title: "t3", status: "in_progress", priority: "medium" },
        { title: "t4", status: "todo", priority: "high", assignee_email: "bob@example.com" },
      ]) {
        const res = await api.post(`/projects/${projectId}/tasks`, body);
        expect(res.status).toBe(201);
        made.push(res.body.id);
      }
      const sibling = (await api.post("/projects", { name: "Sibling" })).body;
      otherTask = (
        await api.post(`/projects/${sibling.id}/tasks`, {
          title: "elsewhere",
          assignee_email: "ada@example.com",
        })
      ).body.id;
    });

    it("pages the project's tasks newest first, never another project's", async () => {
      const first = await api.get(`/projects/${projectId}/tasks?limit=2`);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ object: "list", has_more: true });
      expect(ids(first.body)).toEqual([made[4], made[3]]);
      const second = await api.get(`/projects/${projectId}/tasks?limit=2&cursor=${first.body.next_cursor}`);
      expect(ids(second.body)).toEqual([made[2], made[1]]);
      const third = await api.get(`/projects/${projectId}/tasks?limit=2&cursor=${second.body.next_cursor}`);
      expect(third.body).toMatchObject({ has_more: false, next_cursor: null });
      expect(ids(third.body)).toEqual([made[0]]);
      const all = ids((await api.get(`/projects/${projectId}/tasks`)).body);
      expect(all).toEqual([...made].reverse());
      expect(all).not.toContain(otherTask);
    });

    it("filters by status, priority and assignee_email (e-mails compare case-insensitively)", async () => {
      const get = async (query: string) => ids((await api.get(`/projects/${projectId}/tasks?${query}`)).body);
      expect(await get("status=todo")).toEqual([made[4], made[2], made[0]]);
      expect(await get("priority=high")).toEqual([made[4], made[2], made[1]]);
      expect(await get("assignee_email=ada%40example.com")).toEqual([made[2], made[0]]);
      expect(await get("assignee_email=Bob%40Example.com&status=todo")).toEqual([made[4]]);
      expect(await get("status=todo&priority=high&limit=1")).toEqual([made[4]]);
      expect(await get("status=done&priority=low")).toEqual([]);
    });

    it.each([
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=x", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["cursor=djE6bGVhZF94", "cursor"],
      ["status=open", "status"],
      ["priority=critical", "priority"],
      ["assignee_email=nobody", "assignee_email"],
      ["assignee_email=", "assignee_email"],
      ["project_id=prj_01J00000000000000000000000", "project_id"],
      ["title=t1", "title"],
    ])("rejects ?%s with 400 validation_failed on %s", async (query, param) => {
      const res = await api.get(`/projects/${projectId}/tasks?${query}`);
      expectValidationFailed(res, param);
    });
  });

  describe("over GraphQL", () => {
    it("tasks, task, createTask, updateTask and deleteTask speak the REST vocabulary", async () => {
      const { own, api, project, completions } = await scratch();
      const gql = graphql(server().url, own.key);
      const made = await gql(
        `mutation ($p: ID!) { createTask(project_id: $p, title: "Via GraphQL", priority: high, assignee_email: "Gq@Example.com", due_date: "2026-10-10") { ${FIELDS} } }`,
        { p: project.id },
      );
      expect(made.errors).toBeUndefined();
      const task = made.data.createTask;
      expect(task).toMatchObject({
        object: "task",
        project_id: project.id,
        status: "todo",
        priority: "high",
        assignee_email: "gq@example.com",
      });
      expect((await api.get(`/tasks/${task.id}`)).body).toEqual(task);

      const read = await gql(`query ($id: ID!) { task(id: $id) { ${FIELDS} project { id name } } }`, {
        id: task.id,
      });
      expect(read.errors).toBeUndefined();
      expect(read.data.task).toEqual({ ...task, project: { id: project.id, name: "Scratch" } });

      const listed = await gql(
        `query ($p: ID!) { tasks(project_id: $p, priority: high, assignee_email: "GQ@example.com") { object has_more next_cursor data { id } } }`,
        {
          p: project.id,
        },
      );
      expect(listed.data.tasks).toEqual({
        object: "list",
        has_more: false,
        next_cursor: null,
        data: [{ id: task.id }],
      });

      const done = await gql(
        `mutation ($id: ID!) { updateTask(id: $id, status: done, due_date: null) { status due_date completed_at } }`,
        { id: task.id },
      );
      expect(done.errors).toBeUndefined();
      expect(done.data.updateTask).toEqual({
        status: "done",
        due_date: null,
        completed_at: expect.stringMatching(ISO),
      });
      const events = await completions();
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual((await api.get(`/tasks/${task.id}`)).body);

      const deleted = await gql(`mutation ($id: ID!) { deleteTask(id: $id) { id object deleted } }`, {
        id: task.id,
      });
      expect(deleted.data.deleteTask).toEqual({ id: task.id, object: "task", deleted: true });
      expect((await api.get(`/tasks/${task.id}`)).status).toBe(404);
    });

    it("reports validation and not-found errors with code and param", async () => {
      const { own, project, count } = await scratch();
      const gql = graphql(server().url, own.key);
      for (const [query, code, param] of [
        [`{ task(id: "${NEVER}") { id } }`, "not_found", "id"],
        [`{ tasks(project_id: "${NEVER_PROJECT}") { data { id } } }`, "not_found", "project_id"],
        [
          `mutation { createTask(project_id: "${NEVER_PROJECT}", title: "x") { id } }`,
          "not_found",
          "project_id",
        ],
        [
          `mutation { createTask(project_id: "${project.id}", title: "") { id } }`,
          "validation_failed",
          "title",
        ],
        [
          `mutation { createTask(project_id: "${project.id}", title: "x", assignee_email: "nope") { id } }`,
          "validation_failed",
          "assignee_email",
        ],
        [`mutation { updateTask(id: "${NEVER}", priority: null) { id } }`, "validation_failed", "priority"],
        [`{ tasks(project_id: "${project.id}", limit: 0) { data { id } } }`, "validation_failed", "limit"],
        [
          `{ tasks(project_id: "${project.id}", assignee_email: "x") { data { id } } }`,
          "validation_failed",
          "assignee_email",
        ],
      ] as const) {
        const res = await gql(query);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code,
          param,
          request_id: expect.stringMatching(/^req_/),
        });
      }
      expect(await count()).toBe(0);
    });
  });

  describe("scopes", () => {
    it("a read-only key lists and reads tasks but cannot write them (403 projects.write)", async () => {
      const { own, api, project, count } = await scratch();
      const task = (await api.post(`/projects/${project.id}/tasks`, { title: "Existing" })).body;
      const reader = rest(server().api, (await server().key(own.workspaceId, ["projects.read"])).key);
      expect(ids((await reader.get(`/projects/${project.id}/tasks`)).body)).toEqual([task.id]);
      expect((await reader.get(`/tasks/${task.id}`)).body).toEqual(task);
      for (const res of [
        await reader.post(`/projects/${project.id}/tasks`, { title: "Sneaky" }),
        await reader.patch(`/tasks/${task.id}`, { status: "done" }),
        await reader.delete(`/tasks/${task.id}`),
      ]) {
        expectInsufficientScope(res, "projects.write");
      }
      expect(await count()).toBe(1);
      expect((await api.get(`/tasks/${task.id}`)).body).toEqual(task);
    });

    it("a write-only key writes tasks but cannot list or read them (403 projects.read)", async () => {
      const { own, api, project } = await scratch();
      const writer = rest(server().api, (await server().key(own.workspaceId, ["projects.write"])).key);
      const created = await writer.post(`/projects/${project.id}/tasks`, { title: "Blind" });
      expect(created.status).toBe(201);
      expect((await api.get(`/tasks/${created.body.id}`)).body).toEqual(created.body);
      for (const res of [
        await writer.get(`/projects/${project.id}/tasks`),
        await writer.get(`/tasks/${created.body.id}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "projects.read" });
      }
      expect((await writer.patch(`/tasks/${created.body.id}`, { status: "done" })).body.completed_at).toMatch(
        ISO,
      );
      expect((await writer.delete(`/tasks/${created.body.id}`)).status).toBe(200);
    });

    it("a key without projects scopes gets 403 on every task route, and over GraphQL", async () => {
      const { own, api, project, count } = await scratch();
      const task = (await api.post(`/projects/${project.id}/tasks`, { title: "Existing" })).body;
      const key = (await server().key(own.workspaceId, ["leads.read", "leads.write", "clients.read"])).key;
      const other = rest(server().api, key);
      for (const [res, scope] of [
        [await other.get(`/projects/${project.id}/tasks`), "projects.read"],
        [await other.get(`/tasks/${task.id}`), "projects.read"],
        [await other.post(`/projects/${project.id}/tasks`, { title: "x" }), "projects.write"],
        [await other.patch(`/tasks/${task.id}`, { title: "x" }), "projects.write"],
        [await other.delete(`/tasks/${task.id}`), "projects.write"],
      ] as const) {
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: "insufficient_scope", required_scope: scope });
      }
      const gql = graphql(server().url, key);
      for (const [query, scope] of [
        [`{ tasks(project_id: "${project.id}") { data { id } } }`, "projects.read"],
        [`{ task(id: "${task.id}") { id } }`, "projects.read"],
        [`mutation { createTask(project_id: "${project.id}", title: "x") { id } }`, "projects.write"],
        [`mutation { updateTask(id: "${task.id}", status: done) { id } }`, "projects.write"],
        [`mutation { deleteTask(id: "${task.id}") { id } }`, "projects.write"],
      ] as const) {
        const res = await gql(query);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "insufficient_scope",
          type: "permission_error",
          required_scope: scope,
        });
      }
      expect(await count()).toBe(1);
      expect((await api.get(`/tasks/${task.id}`)).body).toEqual(task);
    });
  });

  describe("tenancy", () => {
    let apiA: Api;
    let gqlA: ReturnType<typeof graphql>;
    let apiB: Api;
    let b: Tenant;
    const A = { project: "", task: "" };
    const B = { project: "", task: "" };
    let snapshot: unknown;

    const snapshotOfB = async () => [
      (await apiB.get(`/projects/${B.project}/tasks?limit=100`)).body,
      (await apiB.get(`/tasks/${B.task}`)).body,
      await server().running.db.prisma.event.count({ where: { workspaceId: b.workspaceId } }),
    ];

    beforeAll(async () => {
      const a = await server().tenant();
      b = await server().tenant();
      apiA = rest(server().api, a.key);
      gqlA = graphql(server().url, a.key);
      apiB = rest(server().api, b.key);
      for (const [api, side, label] of [
        [apiB, B, "Bravo"],
        [apiA, A, "Alpha"],
      ] as const) {
        side.project = (await api.post("/projects", { name: `${label} project` })).body.id;
        const task = await api.post(`/projects/${side.project}/tasks`, {
          title: `${label} shared task`,
          assignee_email: "shared@example.com",
        });
        expect(task.status).toBe(201);
        side.task = task.body.id;
      }
      snapshot = await snapshotOfB();
    });

    it("creating or listing tasks under B's project is 404, like an unknown project", async () => {
      await expectHiddenAt((id) => apiA.get(`/projects/${id}/tasks`), B.project, NEVER_PROJECT);
      await expectHiddenAt(
        (id) => apiA.get(`/projects/${id}/tasks?assignee_email=shared%40example.com`),
        B.project,
        NEVER_PROJECT,
      );
      for (const body of [{ title: "Planted" }, { title: "Planted", status: "done" }]) {
        await expectHiddenAt((id) => apiA.post(`/projects/${id}/tasks`, body), B.project, NEVER_PROJECT);
      }
      expect(await snapshotOfB()).toEqual(snapshot);
    });

    it("GET, PATCH and DELETE of B's task are 404 like an unknown id, and change nothing", async () => {
      await expectHiddenAt((id) => apiA.get(`/tasks/${id}`), B.task, NEVER);
      for (const body of [{ status: "done" }, { title: "Hijacked", assignee_email: null }, {}]) {
        await expectHiddenAt((id) => apiA.patch(`/tasks/${id}`, body), B.task, NEVER);
      }
      await expectHiddenAt((id) => apiA.delete(`/tasks/${id}`), B.task, NEVER);
      expect(await snapshotOfB()).toEqual(snapshot);
    });

    it("A's lists hold only A's tasks, and B is equally blind to A's", async () => {
      expect(
        ids((await apiA.get(`/projects/${A.project}/tasks?assignee_email=shared%40example.com`)).body),
      ).toEqual([A.task]);
      await expectHiddenAt((id) => apiB.get(`/tasks/${id}`), A.task, NEVER);
      await expectHiddenAt((id) => apiB.get(`/projects/${id}/tasks`), A.project, NEVER_PROJECT);
      expect((await apiA.get(`/tasks/${A.task}`)).body.title).toBe("Alpha shared task");
    });

    it("over GraphQL: B's tasks and project are unreachable and mutations on them fail with not_found", async () => {
      for (const [query, variables] of [
        [`query ($id: ID!) { task(id: $id) { id title } }`, { id: B.task }],
        [`query ($id: ID!) { tasks(project_id: $id) { data { id } } }`, { id: B.project }],
        [
          `mutation ($id: ID!) { createTask(project_id: $id, title: "Planted", status: done) { id } }`,
          { id: B.project },
        ],
        [`mutation ($id: ID!) { updateTask(id: $id, status: done) { id } }`, { id: B.task }],
        [`mutation ($id: ID!) { deleteTask(id: $id) { id } }`, { id: B.task }],
      ] as const) {
        const res = await gqlA(query, variables);
        expect(
          Object.values(res.data ?? {}).every((v) => v === null),
          query,
        ).toBe(true);
        expect(res.errors?.[0]?.extensions, query).toMatchObject({
          code: "not_found",
          type: "invalid_request_error",
        });
      }
      const own = await gqlA(
        `query ($id: ID!) { tasks(project_id: $id) { data { id project { id tasks { id } } } } }`,
        { id: A.project },
      );
      expect(own.errors).toBeUndefined();
      expect(own.data.tasks.data).toEqual([
        { id: A.task, project: { id: A.project, tasks: [{ id: A.task }] } },
      ]);
      expect(await snapshotOfB()).toEqual(snapshot);
    });
  });
});
