import { useEffect, useRef, useState } from "react";
import { graphql } from "../../api/graphql.ts";
import { type LeadStage, MoveLeadDocument } from "../../generated/graphql.ts";
import { ErrorBanner, Notice } from "../../ui/ErrorBanner.tsx";
import { type Lead, STAGE_LABEL, STAGES } from "./lead-shared.tsx";
import { PipelineColumn } from "./PipelineColumn.tsx";

/**
 * The leads by stage, a column each. A lead moves with its Stage menu (or by dragging its card):
 * it shows in its new column at once and the API is told (`updateLead` with `stage`); a refusal
 * puts it back and says why. Moves of one lead go to the API one after the other, in order, so
 * stepping through the stages with the arrow keys ends at the stage last chosen.
 */
export function Pipeline({ search, canWrite }: { search: string; canWrite: boolean }) {
  const [moved, setMoved] = useState<ReadonlyMap<string, Lead>>(() => new Map());
  const [failure, setFailure] = useState<{ name: string; error: unknown } | null>(null);
  const [notice, setNotice] = useState("");
  const [dragging, setDragging] = useState<Lead | null>(null);
  const queues = useRef(new Map<string, Promise<void>>());
  const latest = useRef(new Map<string, number>());
  const focusNext = useRef<string | null>(null);

  // The moved card is another element in another column: focus goes on with it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs after each move is drawn.
  useEffect(() => {
    const id = focusNext.current;
    if (!id) return;
    focusNext.current = null;
    document.querySelector<HTMLSelectElement>(`select[data-stage-of="${CSS.escape(id)}"]`)?.focus();
  }, [moved]);

  const put = (lead: Lead) => setMoved((current) => new Map(current).set(lead.id, lead));
  const focused = (id: string) => document.activeElement?.getAttribute("data-stage-of") === id;

  const move = (lead: Lead, stage: LeadStage, keepFocus: boolean) => {
    if (lead.stage === stage || !canWrite) return;
    const ticket = (latest.current.get(lead.id) ?? 0) + 1;
    latest.current.set(lead.id, ticket);
    if (keepFocus || focused(lead.id)) focusNext.current = lead.id;
    put({ ...lead, stage });
    setFailure(null);
    setNotice(`${lead.full_name} moved to ${STAGE_LABEL[stage]}.`);
    const previous = queues.current.get(lead.id) ?? Promise.resolve();
    const sent = previous.then(() => graphql(MoveLeadDocument, { id: lead.id, stage }));
    queues.current.set(
      lead.id,
      sent.then(
        ({ updateLead }) => {
          if (latest.current.get(lead.id) === ticket) put(updateLead);
        },
        (error: unknown) => {
          if (latest.current.get(lead.id) !== ticket) return;
          if (focused(lead.id)) focusNext.current = lead.id;
          put(lead);
          setNotice("");
          setFailure({ name: lead.full_name, error });
        },
      ),
    );
  };

  return (
    <div className="stack">
      <Notice>{notice}</Notice>
      <ErrorBanner error={failure?.error} title={failure ? `${failure.name} was not moved:` : undefined} />
      <div className="crm-pipeline">
        {STAGES.map((stage) => (
          <PipelineColumn
            key={stage}
            stage={stage}
            search={search}
            moved={moved}
            canWrite={canWrite}
            dragging={dragging}
            onMove={move}
            onDragStart={setDragging}
            onDragEnd={() => setDragging(null)}
          />
        ))}
      </div>
    </div>
  );
}
