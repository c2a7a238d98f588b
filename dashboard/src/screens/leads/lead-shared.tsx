import type { CrmLeadFieldsFragment, LeadStage } from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";
import { optionsOf } from "../../ui/Field.tsx";
import { PRIORITY_TEXT } from "../../ui/PriorityTag.tsx";
import { Tag } from "../../ui/Tag.tsx";

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

export const STAGE_OPTIONS = optionsOf(STAGE_LABEL);
export const PRIORITY_OPTIONS = optionsOf(PRIORITY_TEXT);

export const isStage = (value: string): value is LeadStage => (STAGES as readonly string[]).includes(value);

/** A stage as a tag; won and lost in their colours. */
export function StageTag({ stage }: { stage: LeadStage }) {
  return <Tag tone={stage === "won" ? "ok" : stage === "lost" ? "bad" : undefined}>{STAGE_LABEL[stage]}</Tag>;
}
