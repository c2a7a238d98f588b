import { changedFields } from "../../api/changes.ts";
import type { CreateProjectMutationVariables, ProjectStatus } from "../../generated/graphql.ts";
import { moneyInputText, parseMoneyInput } from "../../ui/money.ts";
import type { Project } from "./project-cells.tsx";

/** A project's form as typed. */
export interface ProjectDraft {
  name: string;
  description: string;
  client_id: string;
  status: ProjectStatus;
  start_date: string;
  due_date: string;
  budget: string;
  currency: string;
}

export function projectDraft(project?: Project | null): ProjectDraft {
  return {
    name: project?.name ?? "",
    description: project?.description ?? "",
    client_id: project?.client_id ?? "",
    status: project?.status ?? "active",
    start_date: project?.start_date ?? "",
    due_date: project?.due_date ?? "",
    budget: moneyInputText(project?.budget),
    currency: project?.currency ?? "USD",
  };
}

const text = (value: string) => value.trim() || null;

/** Every argument of createProject, from the form: an empty optional field is null. */
export function projectVariables(draft: ProjectDraft): CreateProjectMutationVariables {
  return {
    name: draft.name.trim(),
    description: text(draft.description),
    client_id: draft.client_id || null,
    status: draft.status,
    start_date: draft.start_date || null,
    due_date: draft.due_date || null,
    budget: parseMoneyInput(draft.budget),
    currency: draft.currency.trim(),
  };
}

/** Only the arguments the form changed, for updateProject. */
export function changedProjectVariables(
  project: Project,
  draft: ProjectDraft,
): Partial<CreateProjectMutationVariables> {
  return changedFields(projectVariables(projectDraft(project)), projectVariables(draft));
}

export const PROJECT_PARAMS = [
  "name",
  "description",
  "client_id",
  "status",
  "start_date",
  "due_date",
  "budget",
  "currency",
];
