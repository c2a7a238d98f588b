import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import type { Tx } from "../events.ts";
import { ProjectStatus } from "../generated/prisma/enums.ts";
import { listPage, searchWhere } from "../lib/cursor.ts";
import { validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { currency, notNull, optionalText, requiredText } from "../lib/validate.ts";
import { Client } from "./client.ts";
import { Deleted, listType, pageArgs } from "./shared.ts";

export const ProjectStatusEnum = builder.enumType(ProjectStatus, { name: "ProjectStatus" });

export const Project = builder.prismaObject("Project", {
  description: "A piece of work for the workspace, optionally for one client, made of tasks.",
  authScopes: { readable: "projects" },
  fields: (t) => ({
    object: t.string({ resolve: () => "project" }),
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    description: t.exposeString("description", { nullable: true }),
    client_id: t.exposeString("clientId", { nullable: true }),
    status: t.expose("status", { type: ProjectStatusEnum }),
    start_date: t.expose("startDate", { type: "Date", nullable: true }),
    due_date: t.expose("dueDate", { type: "Date", nullable: true }),
    budget: t.expose("budget", { type: "Money", nullable: true }),
    currency: t.exposeString("currency"),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
    client: t.relation("client", {
      type: Client,
      nullable: true,
      extensions: { rest: false },
      description: "The client the project is for (needs clients.read).",
    }),
    tasks: t.relation("tasks", {
      query: { orderBy: { id: "desc" } },
      extensions: { rest: false },
      description: "Every task of the project, newest first.",
    }),
  }),
});

const ProjectList = listType("Project", Project);

const projectFields = (required: boolean) =>
  builder.args((t) => ({
    name: t.string({ required }),
    description: t.string(),
    client_id: t.id({ description: "A client of this workspace." }),
    status: t.field({ type: ProjectStatusEnum, description: "Default active." }),
    start_date: t.field({ type: "Date" }),
    due_date: t.field({ type: "Date", description: "Not before start_date." }),
    budget: t.field({ type: "Money" }),
    currency: t.string({ description: "ISO 4217, default USD." }),
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
async function checkProject(tx: Tx, ctx: Context, data: ReturnType<typeof projectData>, current?: { startDate: Date | null; dueDate: Date | null }) {
  if (data.clientId != null) {
    const client = await tx.client.findFirst({ where: where(ctx, data.clientId), select: { id: true } });
    if (!client) throw validationFailed("client_id", `client_id '${data.clientId}' is not a client of this workspace.`);
  }
  const start = data.startDate === undefined ? current?.startDate : data.startDate;
  const due = data.dueDate === undefined ? current?.dueDate : data.dueDate;
  if (start && due && due < start) throw validationFailed("due_date", "due_date cannot be before start_date.");
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

builder.queryFields((t) => ({
  projects: t.field({
    type: ProjectList,
    description: "Projects, newest first.",
    extensions: rest("GET /projects", "List projects"),
    authScopes: { scope: "projects.read" },
    args: {
      status: t.arg({ type: ProjectStatusEnum }),
      client_id: t.arg.id(),
      search: t.arg.string({ description: "Case-insensitive substring of name or description." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx) =>
      listPage(args, ({ cursor, ...page }) =>
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
    extensions: rest("GET /projects/:id", "Retrieve a project"),
    authScopes: { scope: "projects.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("project", args.id, await ctx.db.project.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createProject: t.prismaField({
    type: "Project",
    extensions: rest("POST /projects", "Create a project", 201),
    authScopes: { scope: "projects.write" },
    args: projectFields(true),
    resolve: (query, _root, args, ctx) => {
      const data = { ...projectData(args), name: requiredText("name", args.name) };
      return ctx.db.$transaction(async (tx) => {
        await checkProject(tx, ctx, data);
        return tx.project.create({ ...query, data: { ...data, id: newId("project"), workspaceId: ctx.credential.workspaceId } });
      });
    },
  }),
  updateProject: t.prismaField({
    type: "Project",
    description: "Updates the fields sent; null clears an optional field.",
    extensions: rest("PATCH /projects/:id", "Update a project"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true }), ...projectFields(false) },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = projectData(args);
      return ctx.db.$transaction(async (tx) => {
        const current = found("project", id, await tx.project.findFirst({ where: where(ctx, id), select: { startDate: true, dueDate: true } }));
        await checkProject(tx, ctx, data, current);
        return tx.project.update({ ...query, where: where(ctx, id), data });
      });
    },
  }),
  deleteProject: t.field({
    type: Deleted,
    description: "Deletes the project and all its tasks.",
    extensions: rest("DELETE /projects/:id", "Delete a project and its tasks"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("project", id, () => ctx.db.project.delete({ where: where(ctx, id) }));
      return { id, object: "project", deleted: true as const };
    },
  }),
}));
