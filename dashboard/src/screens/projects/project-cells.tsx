import type {
  Priority,
  ProjectFieldsFragment,
  ProjectStatus,
  TaskFieldsFragment,
  TaskStatus,
} from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";
import { formatDay } from "../ops/format.ts";

// The projects screens' shared types, texts and cells.

export type Project = ProjectFieldsFragment;
export type Task = TaskFieldsFragment;

export const PROJECTS_PATH = `${BASE}/projects`;
export const projectPath = (id: string) => `${PROJECTS_PATH}/${encodeURIComponent(id)}`;

/** Why a role's write buttons are disabled (no role lacks it today: see schema/lib/roles.ts). */
export const CANNOT_WRITE = "Your role in this workspace can read projects and tasks but not change them.";

export const PROJECT_STATUS_TEXT: Record<ProjectStatus, string> = {
  active: "Active",
  on_hold: "On hold",
  completed: "Completed",
  archived: "Archived",
};
export const PROJECT_STATUSES = Object.keys(PROJECT_STATUS_TEXT) as ProjectStatus[];
export const isProjectStatus = (value: string): value is ProjectStatus =>
  (PROJECT_STATUSES as string[]).includes(value);

export const TASK_STATUS_TEXT: Record<TaskStatus, string> = {
  todo: "To do",
  in_progress: "In progress",
  done: "Done",
};
export const TASK_STATUSES = Object.keys(TASK_STATUS_TEXT) as TaskStatus[];
export const isTaskStatus = (value: string): value is TaskStatus =>
  (TASK_STATUSES as string[]).includes(value);

export const PRIORITY_TEXT: Record<Priority, string> = {
  low: "Low",
  medium: "Medium",
  high: "High",
  urgent: "Urgent",
};
export const PRIORITIES = Object.keys(PRIORITY_TEXT) as Priority[];
export const isPriority = (value: string): value is Priority => (PRIORITIES as string[]).includes(value);

/** A select's options for an enum, with "any" first when given. */
export function optionsOf<T extends string>(text: Record<T, string>, any?: string) {
  return [
    ...(any === undefined ? [] : [{ value: "", label: any }]),
    ...(Object.entries(text) as [T, string][]).map(([value, label]) => ({ value, label })),
  ];
}

export function ProjectStatusTag({ status }: { status: ProjectStatus }) {
  const tone = { active: "tag-ok", on_hold: "tag-warn", completed: "", archived: "" }[status];
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{PROJECT_STATUS_TEXT[status]}</span>;
}

export function PriorityTag({ priority }: { priority: Priority }) {
  const tone = { low: "", medium: "", high: "tag-warn", urgent: "tag-bad" }[priority];
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{PRIORITY_TEXT[priority]}</span>;
}

/** A project's start and due dates as a span. */
export function projectDates(project: Pick<Project, "start_date" | "due_date">): string {
  if (!project.start_date && !project.due_date) return "No dates";
  if (!project.due_date) return `From ${formatDay(project.start_date)}`;
  if (!project.start_date) return `Due ${formatDay(project.due_date)}`;
  return `${formatDay(project.start_date)} – ${formatDay(project.due_date)}`;
}
