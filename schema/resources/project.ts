import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import type { Tx } from "../events.ts";
import { ProjectStatus } from "../generated/prisma/enums.ts";
import { searchWhere } from "../lib/cursor.ts";
import { validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { PROJECT_TASKS_SHOWN } from "../lib/limits.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned, lockRow } from "../lib/locks.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, notNull, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { Deleted, listType, objectKind, pageArgs } from "./shared.ts";

export const ProjectStatusEnum = builder.enumType(ProjectStatus, {
  name: "ProjectStatus",
  description: "Where a project stands; set freely by an update.",
  values: {
    active: { description: "Work is going on (the default)." },
    on_hold: { description: "Paused for now." },
    completed: { description: "Finished." },
    archived: { description: "Kept for the record only." },
  },
});

export const Project = builder.prismaObject("Project", {
  description:
    "A piece of work for the workspace, optionally for one client, made of tasks. Visible with projects.read or projects.write.",
  authScopes: { readable: "projects" },
  fields: (t) => ({
    object: objectKind(t, "project"),
    id: t.exposeID("id", { description: "`prj_…`." }),
    name: t.exposeString("name", { description: "The project's name." }),
    description: t.exposeString("description", { nullable: true, description: "Free-text description." }),
    client_id: t.exposeString("clientId", {
      nullable: true,
      description: "The client the project is for (`cli_…`); null for internal work.",
    }),
    status: t.expose("status", { type: ProjectStatusEnum, description: "Where the project stands." }),
    start_date: t.expose("startDate", {
      type: "Date",
      nullable: true,
      description: "When work starts; null when not set.",
    }),
    due_date: t.expose("dueDate", {
      type: "Date",
      nullable: true,
      description: "When the work is due, not before start_date; null when not set.",
    }),
    budget: t.expose("budget", {
      type: "Money",
      nullable: true,
      description: "The budget, in `currency`; null when none.",
    }),
    currency: t.exposeString("currency", { description: "ISO 4217 code of budget." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the project was created." }),
    updated_at: t.expose("updatedAt", {
      type: "DateTime",
      description: "When the project was last changed.",
    }),
    client: t.relation("client", {
      type: Client,
      nullable: true,
      extensions: { rest: false },
      description: "The client the project is for (needs clients.read).",
    }),
    tasks: t.relation("tasks", {
      query: { orderBy: { id: "desc" }, take: PROJECT_TASKS_SHOWN },
      extensions: { rest: false },
      description: `The project's ${PROJECT_TASKS_SHOWN} newest tasks, newest first (GET /projects/{id}/tasks pages through all).`,
    }),
  }),
});

const ProjectList = listType("Project", Project);

const projectFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required, description: "The project's name; cannot be empty or cleared." }),
    description: t.string({ description: "Free-text description; null clears it." }),
    client_id: t.id({ description: "A client of this workspace (`cli_…`); null unlinks it." }),
    status: t.field({ type: ProjectStatusEnum, description: "Where the project stands; default active." }),
    start_date: t.field({ type: "Date", description: "When work starts (YYYY-MM-DD); null clears it." }),
    due_date: t.field({ type: "Date", description: "Not before start_date; null clears it." }),
    budget: t.field({ type: "Money", description: "The budget, in `currency`; null clears it." }),
    currency: t.string({ description: "ISO 4217 code in capitals, default USD." }),
  }));

type ProjectArgs = {
  name?: string | null;
  description?: string | null;
  client_id?: string | null;
  status?: ProjectStatus | null;
  start_date?: Date | null;
  due_date?: Date | null;
  budget?: string | null;
  currency?: string | null;
};

function projectData(args: ProjectArgs) {
  return defined({
    name: args.name === undefined ? undefined : requiredText("name", args.name),
    description: optionalText(args.description),
    clientId: args.client_id,
    status: notNull("status", args.status),
    startDate: args.start_date,
    dueDate: args.due_date,
    budget: args.budget,
    currency: currency("currency", args.currency),
  });
}

/** The checks that need the database: the client belongs to the caller, the dates are in order. */
async function checkProject(
  tx: Tx,
  ctx: Context,
  data: ReturnType<typeof projectData>,
  current?: { startDate: Date | null; dueDate: Date | null },
) {
  if (data.clientId != null) {
    // A share lock: the client cannot be deleted before the project referring to it commits.
    const shared = await lockRow(tx, "client", data.clientId, ctx.credential.workspaceId, "share");
    if (!shared)
      throw validationFailed("client_id", `client_id '${data.clientId}' is not a client of this workspace.`);
  }
  const start = data.startDate === undefined ? current?.startDate : data.startDate;
  const due = data.dueDate === undefined ? current?.dueDate : data.dueDate;
  if (start && due && due < start)
    throw validationFailed("due_date", "due_date cannot be before start_date.");
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  projects: t.field({
    type: ProjectList,
    description: "The workspace's projects, newest first. Needs projects.read.",
    extensions: rest("GET /projects", "List projects"),
    authScopes: { scope: "projects.read" },
    args: {
      status: t.arg({ type: ProjectStatusEnum, description: "Only projects in this status." }),
      client_id: t.arg.id({ description: "Only projects of this client (`cli_…`)." }),
      search: t.arg.string({ description: "Case-insensitive substring of name or description." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.project.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.status && { status: args.status }),
            ...(args.client_id && { clientId: args.client_id }),
            ...cursor,
            ...searchWhere(args.search, ["name", "description"]),
          },
          ...page,
        }),
      ),
  }),
  project: t.prismaField({
    type: "Project",
    nullable: true,
    description: "One project by id; an unknown id is a not_found error. Needs projects.read.",
    extensions: rest("GET /projects/:id", "Retrieve a project"),
    authScopes: { scope: "projects.read" },
    args: { id: t.arg.id({ required: true, description: "The project's id (`prj_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("project", args.id, await ctx.db.project.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createProject: t.prismaField({
    type: "Project",
    description: "Creates a project. Needs projects.write.",
    extensions: rest("POST /projects", "Create a project", 201),
    authScopes: { scope: "projects.write" },
    args: projectFields(true),
    resolve: (query, _root, args, ctx) => {
      const data = { ...projectData(args), name: requiredText("name", args.name) };
      return ctx.db.$transaction(async (tx) => {
        await checkProject(tx, ctx, data);
        return tx.project.create({
          ...query,
          data: { ...data, id: newId("project"), workspaceId: ctx.credential.workspaceId },
        });
      });
    },
  }),
  updateProject: t.prismaField({
    type: "Project",
    description:
      "Updates the fields sent; an absent field stays as it is and null clears an optional one. Needs projects.write.",
    extensions: rest("PATCH /projects/:id", "Update a project"),
    authScopes: { scope: "projects.write" },
    args: {
      id: t.arg.id({ required: true, description: "The project's id (`prj_…`)." }),
      ...projectFields(false),
    },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = projectData(args);
      return ctx.db.$transaction(async (tx) => {
        // Locked: concurrent edits of start_date and due_date each check the dates the other left.
        await lockOwned(tx, "project", id, ctx.credential.workspaceId);
        const current = await tx.project.findUniqueOrThrow({
          where: { id },
          select: { startDate: true, dueDate: true },
        });
        await checkProject(tx, ctx, data, current);
        return tx.project.update({ ...query, where: where(ctx, id), data });
      });
    },
  }),
  deleteProject: t.field({
    type: Deleted,
    description: "Deletes the project and all its tasks. Needs projects.write.",
    extensions: rest("DELETE /projects/:id", "Delete a project and its tasks"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true, description: "The project's id (`prj_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("project", id, () => ctx.db.project.delete({ where: where(ctx, id) }));
      return { id, object: "project", deleted: true as const };
    },
  }),
}));
