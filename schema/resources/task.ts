import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type Tx } from "../events.ts";
import { type Priority, TaskStatus } from "../generated/prisma/enums.ts";
import { notFound, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned, lockRow } from "../lib/locks.ts";
import { defined, found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { notNull, optionalEmail, optionalText, requiredText } from "../lib/validate.ts";
import { Project } from "./project.ts";
import { Deleted, listType, objectKind, PriorityEnum, pageArgs } from "./shared.ts";

export const TaskStatusEnum = builder.enumType(TaskStatus, {
  name: "TaskStatus",
  description: "Where a task stands; any status may follow any other.",
  values: {
    todo: { description: "Not started (the default)." },
    in_progress: { description: "Being worked on." },
    done: { description: "Finished: moving here sets completed_at and emits task.completed." },
  },
});

export const Task = builder.prismaObject("Task", {
  description:
    "A to-do in a project. Moving it to done stamps completed_at and emits task.completed. Visible with projects.read or projects.write.",
  authScopes: { readable: "projects" },
  fields: (t) => ({
    object: objectKind(t, "task"),
    id: t.exposeID("id", { description: "`task_…`." }),
    project_id: t.exposeString("projectId", { description: "The project the task belongs to (`prj_…`)." }),
    title: t.exposeString("title", { description: "What is to be done." }),
    description: t.exposeString("description", { nullable: true, description: "Free-text details." }),
    status: t.expose("status", { type: TaskStatusEnum, description: "Where the task stands." }),
    priority: t.expose("priority", { type: PriorityEnum, description: "How urgent the task is." }),
    assignee_email: t.exposeString("assigneeEmail", {
      nullable: true,
      description: "E-mail address of the person doing it, in lower case; null when unassigned.",
    }),
    due_date: t.expose("dueDate", {
      type: "Date",
      nullable: true,
      description: "When the task is due; null when it has no due date.",
    }),
    completed_at: t.expose("completedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the task last moved to done; null while it is not done.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the task was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the task was last changed." }),
    project: t.relation("project", {
      type: Project,
      extensions: { rest: false },
      description: "The project the task belongs to.",
    }),
  }),
});

const TaskList = listType("Task", Task);

const taskFields = (required: boolean) =>
  builder.args((t) => ({
    title: t.string({ required, description: "What is to be done; cannot be empty or cleared." }),
    description: t.string({ description: "Free-text details; null clears them." }),
    status: t.field({ type: TaskStatusEnum, description: "Where the task stands; default todo." }),
    priority: t.field({ type: PriorityEnum, description: "How urgent the task is; default medium." }),
    assignee_email: t.string({ description: "E-mail address of the person doing it; null unassigns." }),
    due_date: t.field({ type: "Date", description: "When the task is due (YYYY-MM-DD); null clears it." }),
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

const projectIdArg = (description: string) =>
  builder.args((t) => ({ project_id: t.id({ required: true, description }) }));

builder.queryFields((t) => ({
  tasks: t.field({
    type: TaskList,
    description:
      "The tasks of one project, newest first; an unknown project is a not_found error (param project_id). Needs projects.read.",
    extensions: rest("GET /projects/:project_id/tasks", "List the tasks of a project"),
    authScopes: { scope: "projects.read" },
    args: {
      ...projectIdArg("The project whose tasks to list (the {project_id} of the REST path)."),
      status: t.arg({ type: TaskStatusEnum, description: "Only tasks in this status." }),
      priority: t.arg({ type: PriorityEnum, description: "Only tasks of this priority." }),
      assignee_email: t.arg.string({ description: "Only tasks assigned to this e-mail address (any case)." }),
      ...pageArgs,
    },
    resolve: async (_root, args, ctx, info) => {
      const assignee =
        args.assignee_email == null ? undefined : optionalEmail("assignee_email", args.assignee_email);
      if (assignee === null)
        throw validationFailed("assignee_email", "assignee_email must be an e-mail address.");
      await ownProject(ctx.db, ctx, args.project_id);
      return listPage(args, ctx, info, ({ cursor, ...page }) =>
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
    description: "One task by id; an unknown id is a not_found error. Needs projects.read.",
    extensions: rest("GET /tasks/:id", "Retrieve a task"),
    authScopes: { scope: "projects.read" },
    args: { id: t.arg.id({ required: true, description: "The task's id (`task_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("task", args.id, await ctx.db.task.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createTask: t.prismaField({
    type: "Task",
    description:
      "Creates a task in the project; created as done, it is completed at once (task.completed). Needs projects.write.",
    extensions: rest("POST /projects/:project_id/tasks", "Create a task in a project", 201),
    authScopes: { scope: "projects.write" },
    args: {
      ...projectIdArg("The project to add the task to (the {project_id} of the REST path)."),
      ...taskFields(true),
    },
    resolve: (query, _root, { project_id, ...args }, ctx) => {
      const data = { ...taskData(args), title: requiredText("title", args.title) };
      const done = data.status === "done";
      return ctx.db.$transaction(async (tx) => {
        // A share lock: the project cannot be deleted under the new task, and other creators are not held up.
        if (!(await lockRow(tx, "project", project_id, ctx.credential.workspaceId, "share")))
          throw notFound("project", project_id, "project_id");
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
      "Updates the fields sent; null clears an optional field. Moving to done sets completed_at and emits task.completed; moving out of done clears completed_at. Needs projects.write.",
    extensions: rest("PATCH /tasks/:id", "Update a task"),
    authScopes: { scope: "projects.write" },
    args: {
      id: t.arg.id({ required: true, description: "The task's id (`task_…`)." }),
      ...taskFields(false),
    },
    resolve: (query, _root, { id, ...args }, ctx) => {
      const data = taskData(args);
      return ctx.db.$transaction(async (tx) => {
        // Locked: of concurrent moves to done one completes the task (completed_at, task.completed), the rest find it done.
        await lockOwned(tx, "task", id, ctx.credential.workspaceId);
        const current = await tx.task.findUniqueOrThrow({ where: { id }, select: { status: true } });
        const completed = data.status === "done" && current.status !== "done";
        const reopened = data.status !== undefined && data.status !== "done" && current.status === "done";
        const task = await tx.task.update({
          ...query,
          where: where(ctx, id),
          data: {
            ...data,
            ...(completed && { completedAt: new Date() }),
            ...(reopened && { completedAt: null }),
          },
        });
        if (completed) await emit(tx, ctx, "task.completed", "Task", task);
        return task;
      });
    },
  }),
  deleteTask: t.field({
    type: Deleted,
    description: "Deletes a task for good. Needs projects.write.",
    extensions: rest("DELETE /tasks/:id", "Delete a task"),
    authScopes: { scope: "projects.write" },
    args: { id: t.arg.id({ required: true, description: "The task's id (`task_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      await owned("task", id, () => ctx.db.task.delete({ where: where(ctx, id) }));
      return { id, object: "task", deleted: true as const };
    },
  }),
}));
