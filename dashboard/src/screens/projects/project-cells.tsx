import type {
  ProjectFieldsFragment,
  ProjectStatus,
  TaskFieldsFragment,
  TaskStatus,
} from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";
import { formatDay } from "../../ui/format.ts";
import { Tag, type Tone } from "../../ui/Tag.tsx";

// The projects screens' shared types, texts and cells (the client screen lists projects with them too).

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

const PROJECT_STATUS_TONE: Record<ProjectStatus, Tone | undefined> = {
  active: "ok",
  on_hold: "warn",
  completed: undefined,
  archived: undefined,
};

export function ProjectStatusTag({ status }: { status: ProjectStatus }) {
  return <Tag tone={PROJECT_STATUS_TONE[status]}>{PROJECT_STATUS_TEXT[status]}</Tag>;
}

/** A project's start and due dates as a span. */
export function projectDates(project: Pick<Project, "start_date" | "due_date">): string {
  if (!project.start_date && !project.due_date) return "No dates";
  if (!project.due_date) return `From ${formatDay(project.start_date)}`;
  if (!project.start_date) return `Due ${formatDay(project.due_date)}`;
  return `${formatDay(project.start_date)} – ${formatDay(project.due_date)}`;
}
