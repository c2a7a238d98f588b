import { type DragEvent, useId } from "react";
import type { LeadStage } from "../../generated/graphql.ts";
import { Link } from "../../router.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { formatMoney } from "../../ui/money.ts";
import { PriorityTag } from "../../ui/PriorityTag.tsx";
import { type Lead, leadPath, STAGE_OPTIONS } from "./lead-shared.tsx";

/**
 * A lead on the pipeline: name (to its detail screen), company, value, priority, next follow-up,
 * and its Stage menu, which moves it. A writer may also drag it to another column.
 */
export function LeadCard({
  lead,
  canWrite,
  onMove,
  onDragStart,
  onDragEnd,
}: {
  lead: Lead;
  canWrite: boolean;
  onMove(lead: Lead, stage: LeadStage): void;
  onDragStart(lead: Lead): void;
  onDragEnd(): void;
}) {
  const id = useId();
  const dragStart = (event: DragEvent<HTMLLIElement>) => {
    event.dataTransfer.setData("text/plain", lead.id);
    event.dataTransfer.effectAllowed = "move";
    onDragStart(lead);
  };
  return (
    <li
      className="crm-card"
      data-lead={lead.id}
      draggable={canWrite}
      onDragStart={canWrite ? dragStart : undefined}
      onDragEnd={onDragEnd}
    >
      <Link to={leadPath(lead.id)} className="crm-card-name">
        {lead.full_name}
      </Link>
      {lead.company_name && <span className="crm-card-company">{lead.company_name}</span>}
      <dl className="crm-card-facts">
        <div>
          <dt>Value</dt>
          <dd data-testid="lead-value">
            {formatMoney(lead.estimated_value, lead.currency, "Not estimated")}
          </dd>
        </div>
        <div>
          <dt>Priority</dt>
          <dd>
            <PriorityTag priority={lead.priority} suffix="priority" />
          </dd>
        </div>
        <div>
          <dt>Next follow-up</dt>
          <dd>{formatDateTime(lead.next_follow_up_at, "None set")}</dd>
        </div>
      </dl>
      <div className="field crm-card-stage">
        <label htmlFor={id}>
          Stage<span className="visually-hidden"> of {lead.full_name}</span>
        </label>
        <select
          id={id}
          data-stage-of={lead.id}
          value={lead.stage}
          disabled={!canWrite}
          onChange={(event) => onMove(lead, event.target.value as LeadStage)}
        >
          {STAGE_OPTIONS.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      </div>
    </li>
  );
}
