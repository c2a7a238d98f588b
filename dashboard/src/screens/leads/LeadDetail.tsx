import { type ReactNode, useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { ConvertLeadDocument, DeleteLeadDocument, LeadDetailDocument } from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { formatDateTime, formatDay } from "../../ui/format.ts";
import { formatMoney } from "../../ui/money.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { PriorityTag } from "../../ui/PriorityTag.tsx";
import { clientPath } from "../clients/client-shared.ts";
import "../crm.css";
import { LeadFormDialog } from "./LeadFormDialog.tsx";
import { LEADS_PATH, type Lead, ONLY_WRITERS, StageTag } from "./lead-shared.tsx";

const PATTERN = `${LEADS_PATH}/:id`;

/** One lead: every field, an edit form, conversion into a client, and deletion. */
export default function LeadDetail() {
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  const session = useSession();
  const canWrite = session.can("leads.write");
  const canConvert = canWrite && session.can("clients.write");
  const query = useQuery(LeadDetailDocument, { id });
  const [saved, setSaved] = useState<Lead | null>(null);
  const [editing, setEditing] = useState(false);
  const [converting, setConverting] = useState<Lead | null>(null);
  const [deleting, setDeleting] = useState<Lead | null>(null);
  const [notice, setNotice] = useState("");

  const fetched = query.data?.lead ?? null;
  // What a save or conversion answered is newer than the query's answer until it is asked again.
  const lead = saved && saved.id === id ? saved : fetched;

  return (
    <Page
      title={lead?.full_name ?? "Lead"}
      actions={
        <Link to={LEADS_PATH} className="button button-secondary">
          All leads
        </Link>
      }
    >
      {!canWrite && <RoleNote>{ONLY_WRITERS}</RoleNote>}
      <Notice>{notice}</Notice>
      <ErrorBanner error={query.error} />
      {query.loading && !lead && <Loading />}
      {lead && (
        <>
          {lead.client_id && (
            <div className="banner banner-info" role="note">
              Converted into a client: <Link to={clientPath(lead.client_id)}>open the client</Link>.
            </div>
          )}
          <Panel
            title="Details"
            actions={
              <div className="row-actions">
                <Button variant="primary" disabled={!canWrite} onClick={() => setEditing(true)}>
                  Edit lead
                </Button>
                <Button disabled={!canConvert || lead.client_id !== null} onClick={() => setConverting(lead)}>
                  Convert to client
                </Button>
                <Button variant="danger" disabled={!canWrite} onClick={() => setDeleting(lead)}>
                  Delete lead
                </Button>
              </div>
            }
          >
            {canWrite && !canConvert && (
              <p className="muted">Converting needs the right to create clients, which your role lacks.</p>
            )}
            <LeadFacts lead={lead} />
          </Panel>
        </>
      )}
      <LeadFormDialog
        open={editing}
        lead={lead}
        onClose={() => setEditing(false)}
        onSaved={(updated) => {
          setEditing(false);
          setSaved(updated);
          setNotice("Lead saved.");
        }}
      />
      <ConfirmDialog
        subject={converting}
        title="Convert this lead into a client?"
        label="Convert to client"
        confirm="Convert to client"
        variant="primary"
        mutation={ConvertLeadDocument}
        variables={(subject) => ({ id: subject.id })}
        onClose={() => setConverting(null)}
        onDone={({ convertLead }) => {
          setConverting(null);
          setSaved(convertLead);
          setNotice(`${convertLead.full_name} is now a client, and the lead is won.`);
        }}
      >
        <p>
          A client is created from {converting?.full_name}'s name, e-mail, phone, company, currency and notes,
          and the lead moves to Won. A lead converts once.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        subject={deleting}
        title="Delete this lead?"
        label="Delete lead"
        confirm="Delete lead"
        mutation={DeleteLeadDocument}
        variables={(subject) => ({ id: subject.id })}
        onClose={() => setDeleting(null)}
        onDone={() => {
          setDeleting(null);
          navigate(LEADS_PATH);
        }}
      >
        <p>{deleting?.full_name} is deleted for good. A client made from it stays.</p>
      </ConfirmDialog>
    </Page>
  );
}

function LeadFacts({ lead }: { lead: Lead }) {
  const facts: [string, ReactNode][] = [
    ["Stage", <StageTag key="stage" stage={lead.stage} />],
    ["Priority", <PriorityTag key="priority" priority={lead.priority} suffix="priority" />],
    ["Estimated value", formatMoney(lead.estimated_value, lead.currency, "Not estimated")],
    ["Currency", lead.currency],
    ["Company", lead.company_name ?? "—"],
    ["E-mail", lead.email ?? "—"],
    ["Phone", lead.phone ?? "—"],
    ["Source", lead.source ?? "—"],
    ["Expected close", formatDay(lead.expected_close_date)],
    ["Next follow-up", formatDateTime(lead.next_follow_up_at, "None set")],
    ["Last contacted", formatDateTime(lead.last_contacted_at, "Not yet")],
    ["Stage changed", formatDateTime(lead.stage_changed_at, "Never")],
    ["Created", formatDateTime(lead.created_at)],
    ["Updated", formatDateTime(lead.updated_at)],
  ];
  return (
    <>
      <dl className="facts crm-facts">
        {facts.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      <div className="crm-notes">
        <h3>Notes</h3>
        <p className={lead.notes ? undefined : "muted"}>{lead.notes ?? "No notes."}</p>
      </div>
    </>
  );
}
