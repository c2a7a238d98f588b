import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type Tx } from "../events.ts";
import { TaskStatus, type Priority } from "../generated/prisma/enums.ts";
import { listPage } from "../lib/cursor.ts";
import { notFound, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Project } from "./project.ts";
import { Deleted, listType, pageArgs, PriorityEnum } from "./shared.ts";

export const TaskStatusEnum = builder.enumType(TaskStatus, { name: "TaskStatus" });

export const Task = builder.prismaObject("Task", {
  description: "A to-do in a project. Moving it to done stamps completed_at and emits task.completed.",
  authScopes: { readable: "projects" },
  fields: (t) => ({
    object: t.string({ resolve: () => "task" }),
    id: t.exposeID("id"),
    project_id: t.exposeString("projectId"),
    title: t.exposeString("title"),
    description: t.exposeString("description", { nullable: true }),
    status: t.expose("status", { type: TaskStatusEnum }),
    priority: t.expose("priority", { type: PriorityEnum }),
    assignee_email: t.exposeString("assigneeEmail", { nullable: true }),
    due_date: t.expose("dueDate", { type: "Date", nullable: true }),
    completed_at: t.expose("completedAt", { type: "DateTime", nullable: true, description: "When the task last moved to done." }),
    created_at: t.expose("createdAt", { type: "DateTime" }),
    updated_at: t.expose("updatedAt", { type: "DateTime" }),
    project: t.relation("project", { type: Project, extensions: { rest: false } }),
  }),
});

const TaskList = listType("Task", Task);

const taskFields = (required: boolean) =>
  builder.args((t) => ({
    title: t.string({ required }),
    description: t.string(),
    status: t.field({ type: TaskStatusEnum, description: "Default todo." }),
    priority: t.field({ type: PriorityEnum, description: "Default medium." }),
    assignee_email: t.string(),
    due_date: t.field({ type: "Date" }),
  }));

type TaskArgs = {
  title?: string | null;
  description?: string | null;
  status?: TaskStatus | null;
  priority?: Priority | null;
  assignee_email?: string | null;
  due_date?: Date | null;
};

function taskData(args: TaskArgs) {
  return defined({
    title: args.title === undefined ? undefined : requiredText("title", args.title),
    description: optionalText(args.description),
    status: notNull("status", args.status),
    priority: notNull("priority", args.priority),
    assigneeEmail: optionalEmail("assignee_email", args.assignee_email),
    dueDate: args.due_date,
  });
}

async function ownProject(db: Context["db"] | Tx, ctx: Context, id: string) {
  const project = await db.project.findFirst({ where: where(ctx, id), select: { id: true } });
  if (!project) throw notFound("project", id, "project_id"); // the nested routes name it project_id
}

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

const projectIdArg = (description: string) => builder.args((t) => ({ project_id: t.id({ required: true, description }) }));

builder.queryFields((t) => ({
  tasks: t.field({
    type: TaskList,
    description: "The tasks of one project, newest first.",
    extensions: rest("GET /projects/:project_id/tasks", "List the tasks of a project"),
    authScopes: { scope: "projects.read" },
    args: {
      ...projectIdArg("The project whose tasks to list (the {project_id} of the REST path)."),
      status: t.arg({ type: TaskStatusEnum }),
      priority: t.arg({ type: PriorityEnum }),
      assignee_email: t.arg.string(),
      ...pageArgs,
    },
    resolve: async (_root, args, ctx) => {
      const assignee = args.assignee_email == null ? undefined : optionalEmail("assignee_email", args.assignee_email);
      if (assignee === null) throw validationFailed("assignee_email", "assignee_email must be an e-mail address.");
      await ownProject(ctx.db, ctx, args.project_id);
      return listPage(args, ({ cursor, ...page }) =>
        ctx.db.task.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            projectId: args.project_id,
            ...(args.status && { status: args.status }),
            ...(args.priority && { priority: args.priority }),
            ...(assignee && { assigneeEmail: assignee }),
            ...cursor,
          },
          ...page,
        }),
      );
    },
  }),
  task: t.prismaField({
    type: "Task",
    nullable: true,
    extensions: rest("GET /tasks/:id", "Retrieve a task"),
    authScopes: { scope: "projects.read" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      found("task", args.id, await ctx.db.task.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createTask: t.prismaField({
    type: "Task",
    description: "Creates a task in the project; created as done, it is completed at once (task.completed).",
    extensions: rest("POST /projects/:project_id/tasks", "Create a task in a project", 201),
    authScopes: { scope: "projects.write" },
    args: { ...projectIdArg("The project to add the task to (the {project_id} of the REST path)."), ...taskFields(true) },
    resolve: (query, _root, { project_id, ...args }, ctx) => {
      const data = { ...taskData(args), title: requiredText("title", args.title) };
      const done = data.status === "done";
      return ctx.db.$transaction(async (tx) => {
        await ownProject(tx, ctx, project_id);
        const task = await tx.task.create({
          ...query,
          data: {
            ...data,
            ...(done && { completedAt: new Date() }),
            id: newId("task"),
            projectId: project_id,
            workspaceId: ctx.credential.workspaceId,
          },
        });
        if (done) await emit(tx, ctx, "task.completed", "Task", task);
        return task;
      });
    },
  }),
  updateTask: t.prismaField({
    type: "Task",
    description:
      "Updates the fields sent; null clears an optional field. Moving to done sets completed_at and emits task.completed; moving out of done clears completed_at.",
    extensions: rest("PATCH /tasks/:id", "Update a task"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true }), ...taskFields(false) },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = taskData(args);
      return ctx.db.$transaction(async (tx) => {
        const current = found("task", id, await tx.task.findFirst({ where: where(ctx, id), select: { status: true } }));
        const completed = data.status === "done" && current.status !== "done";
        const reopened = data.status !== undefined && data.status !== "done" && current.status === "done";
        const task = await tx.task.update({
          ...query,
          where: where(ctx, id),
          data: { ...data, ...(completed && { completedAt: new Date() }), ...(reopened && { completedAt: null }) },
        });
        if (completed) await emit(tx, ctx, "task.completed", "Task", task);
        return task;
      });
    },
  }),
  deleteTask: t.field({
    type: Deleted,
    extensions: rest("DELETE /tasks/:id", "Delete a task"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("task", id, () => ctx.db.task.delete({ where: where(ctx, id) }));
      return { id, object: "task", deleted: true as const };
    },
  }),
}));
