import type { CrmLeadFieldsFragment, LeadStage, Priority } from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";

// The leads screens' shared types, texts and cells.

export type Lead = CrmLeadFieldsFragment;

export const LEADS_PATH = `${BASE}/leads`;
export const leadPath = (id: string) => `${LEADS_PATH}/${encodeURIComponent(id)}`;

/** Why a role without leads.write sees its buttons greyed out. */
export const ONLY_WRITERS = "Your role can read leads but not create, change, move or delete them.";

/** The stages in the order of the sales process: the pipeline's columns. */
export const STAGES: readonly LeadStage[] = ["new", "contacted", "qualified", "proposal", "won", "lost"];

export const STAGE_LABEL: Record<LeadStage, string> = {
  new: "New",
  contacted: "Contacted",
  qualified: "Qualified",
  proposal: "Proposal",
  won: "Won",
  lost: "Lost",
};

export const PRIORITIES: readonly Priority[] = ["low", "medium", "high", "urgent"];

export const PRIORITY_LABEL: Record<Priority, string> = {
  low: "Low",
  medium: "Medium",
  high: "High",
  urgent: "Urgent",
};

export const STAGE_OPTIONS = STAGES.map((stage) => ({ value: stage, label: STAGE_LABEL[stage] }));
export const PRIORITY_OPTIONS = PRIORITIES.map((priority) => ({
  value: priority,
  label: PRIORITY_LABEL[priority],
}));

export const isStage = (value: string): value is LeadStage => (STAGES as readonly string[]).includes(value);

/** A priority as a tag; high and urgent stand out. */
export function PriorityTag({ priority }: { priority: Priority }) {
  const tone = priority === "urgent" ? "tag-bad" : priority === "high" ? "tag-warn" : "";
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{PRIORITY_LABEL[priority]} priority</span>;
}

/** A stage as a tag; won and lost in their colours. */
export function StageTag({ stage }: { stage: LeadStage }) {
  const tone = stage === "won" ? "tag-ok" : stage === "lost" ? "tag-bad" : "";
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{STAGE_LABEL[stage]}</span>;
}
