import { type DragEvent, useId, useState } from "react";
import { usePaged } from "../../api/paged.ts";
import { LeadListDocument, type LeadStage } from "../../generated/graphql.ts";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { formatCents, sumByCurrency } from "../../ui/money.ts";
import { Loading } from "../../ui/Page.tsx";
import { LeadCard } from "./LeadCard.tsx";
import { type Lead, STAGE_LABEL } from "./lead-shared.tsx";

/** Leads a column asks for at a time. */
const PAGE = 20;

/**
 * One stage of the pipeline: its leads (newest first, paged), their count and the sum of their
 * estimated values per currency. `moved` holds the leads moved on this screen, as they now are:
 * a column shows the ones moved into it and leaves out the ones moved away, without asking again.
 */
export function PipelineColumn({
  stage,
  search,
  moved,
  canWrite,
  dragging,
  onMove,
  onDragStart,
  onDragEnd,
}: {
  stage: LeadStage;
  search: string;
  moved: ReadonlyMap<string, Lead>;
  canWrite: boolean;
  /** A card is being dragged: the column takes it when it is dropped here. */
  dragging: Lead | null;
  onMove(lead: Lead, stage: LeadStage, keepFocus: boolean): void;
  onDragStart(lead: Lead): void;
  onDragEnd(): void;
}) {
  const headingId = useId();
  const [over, setOver] = useState(false);
  const paged = usePaged(
    LeadListDocument,
    { stage, search: search || null, limit: PAGE },
    (data) => data.leads,
  );
  const fetched = paged.rows.map((lead) => moved.get(lead.id) ?? lead).filter((lead) => lead.stage === stage);
  const shown = new Set(fetched.map((lead) => lead.id));
  const incoming = [...moved.values()].filter((lead) => lead.stage === stage && !shown.has(lead.id));
  // Newest first, as the API lists them (its ids grow with time).
  const cards = [...incoming, ...fetched].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  const totals = sumByCurrency(
    cards.map((lead) => ({ amount: lead.estimated_value, currency: lead.currency })),
  );

  const accepts = dragging !== null && dragging.stage !== stage;
  const dragOver = (event: DragEvent<HTMLElement>) => {
    if (!accepts) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
    setOver(true);
  };
  const dragLeave = (event: DragEvent<HTMLElement>) => {
    if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setOver(false);
  };
  const drop = (event: DragEvent<HTMLElement>) => {
    setOver(false);
    if (!accepts || !dragging) return;
    event.preventDefault();
    // The card leaves its column, so its own dragend may never come.
    onDragEnd();
    onMove(dragging, stage, false);
  };

  return (
    <section
      className="crm-column"
      aria-labelledby={headingId}
      data-stage={stage}
      data-over={over || undefined}
      onDragOver={dragOver}
      onDragLeave={dragLeave}
      onDrop={drop}
    >
      <header className="crm-column-header">
        <h2 id={headingId}>{STAGE_LABEL[stage]}</h2>
        <span className="crm-count" data-testid="column-count">
          {cards.length}
          <span className="visually-hidden"> {cards.length === 1 ? "lead" : "leads"}</span>
        </span>
      </header>
      <p className="crm-column-total" data-testid="column-total" data-none={totals.length === 0 || undefined}>
        {totals.length === 0
          ? "No estimated value"
          : `Total ${totals.map((sum) => formatCents(sum.cents, sum.currency)).join(" · ")}`}
      </p>
      <ErrorBanner error={paged.error} />
      {paged.loading && cards.length === 0 && <Loading />}
      {!paged.loading && cards.length === 0 && !paged.error && <p className="empty">No leads.</p>}
      {cards.length > 0 && (
        <ol className="crm-cards" aria-labelledby={headingId}>
          {cards.map((lead) => (
            <LeadCard
              key={lead.id}
              lead={lead}
              canWrite={canWrite}
              onMove={(card, to) => onMove(card, to, true)}
              onDragStart={onDragStart}
              onDragEnd={onDragEnd}
            />
          ))}
        </ol>
      )}
      {paged.hasMore && (
        <Button
          busy={paged.loading}
          onClick={paged.more}
          aria-label={`Show more ${STAGE_LABEL[stage]} leads`}
        >
          Show more
        </Button>
      )}
    </section>
  );
}
