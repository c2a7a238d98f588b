import { changedFields } from "../../api/changes.ts";
import type { CreateTaskMutationVariables, Priority, TaskStatus } from "../../generated/graphql.ts";
import type { Task } from "./project-cells.tsx";

/** A task's form as typed. */
export interface TaskDraft {
  title: string;
  description: string;
  status: TaskStatus;
  priority: Priority;
  assignee_email: string;
  due_date: string;
}

export function taskDraft(task?: Task | null): TaskDraft {
  return {
    title: task?.title ?? "",
    description: task?.description ?? "",
    status: task?.status ?? "todo",
    priority: task?.priority ?? "medium",
    assignee_email: task?.assignee_email ?? "",
    due_date: task?.due_date ?? "",
  };
}

type TaskFields = Omit<CreateTaskMutationVariables, "project_id">;

/** Every field of createTask but the project, from the form: an empty optional field is null. */
export function taskVariables(draft: TaskDraft): TaskFields {
  return {
    title: draft.title.trim(),
    description: draft.description.trim() || null,
    status: draft.status,
    priority: draft.priority,
    assignee_email: draft.assignee_email.trim() || null,
    due_date: draft.due_date || null,
  };
}

/** Only the fields the form changed, for updateTask (a status moved meanwhile is not moved back). */
export function changedTaskVariables(task: Task, draft: TaskDraft): Partial<TaskFields> {
  return changedFields(taskVariables(taskDraft(task)), taskVariables(draft));
}

export const TASK_PARAMS = ["title", "description", "status", "priority", "assignee_email", "due_date"];
