import { beforeAll, describe, expect, it } from "vitest";
import { expectNotFound, expectValidationFailed, ISO } from "../../support/assertions.ts";
import { rest } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { NEVER, NEVER_CLIENT, scratchOf } from "./support.ts";

const PROJECT_ID = /^prj_[0-9A-HJKMNP-TV-Z]{26}$/;

e2e("projects: create, update, delete", (server) => {
  const { api } = useWorkspace(server);
  let clientId: string;

  beforeAll(async () => {
    clientId = (await api.post("/clients", { name: "Wayne Enterprises" })).body.id;
  });

  const scratch = scratchOf(server);

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
      const res = await api.post("/projects", {
        name: "One day",
        start_date: "2026-05-05",
        due_date: "2026-05-05",
        budget: 0,
      });
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
      expectValidationFailed(res, param);
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
      expect(renamed.body).toEqual({
        ...created,
        name: "Audit 2026",
        status: "completed",
        updated_at: expect.stringMatching(ISO),
      });

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
      const created = (
        await api.post("/projects", { name: "Dated", start_date: "2026-04-10", due_date: "2026-04-20" })
      ).body;
      for (const body of [
        { due_date: "2026-04-09" },
        { start_date: "2026-04-21" },
        { start_date: "2026-05-01", due_date: "2026-04-30" },
      ]) {
        const res = await api.patch(`/projects/${created.id}`, body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.error).toMatchObject({ code: "validation_failed", param: "due_date" });
      }
      expect((await api.get(`/projects/${created.id}`)).body).toEqual(created);

      const moved = await api.patch(`/projects/${created.id}`, {
        start_date: "2026-05-01",
        due_date: "2026-05-31",
      });
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
      for (const title of ["one", "two"])
        tasks.push((await api.post(`/projects/${project.id}/tasks`, { title })).body.id);
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
      for (const res of [
        await api.get(`/projects/${NEVER}`),
        await api.patch(`/projects/${NEVER}`, { name: "x" }),
        await api.delete(`/projects/${NEVER}`),
      ]) {
        expectNotFound(res, "id");
        expect(res.body.error.message).toContain(NEVER);
      }
    });
  });
});
