import { usePaged } from "../../api/paged.ts";
import { LeadListDocument, type LeadStage } from "../../generated/graphql.ts";
import { Link } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, fieldError } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDate, formatDateTime } from "../../ui/format.ts";
import { formatMoney } from "../../ui/money.ts";
import { Loading } from "../../ui/Page.tsx";
import { PriorityTag } from "../../ui/PriorityTag.tsx";
import { Table } from "../../ui/Table.tsx";
import { isStage, leadPath, STAGE_LABEL, StageTag } from "./lead-shared.tsx";

/** Leads a page of the table holds. */
const PAGE = 25;

/** The leads as a table, filtered by stage (and the screen's search), paged with "Show more". */
export function LeadsTable({
  stage,
  search,
  onStage,
}: {
  /** As the URL has it: a stage, or "" for all. */
  stage: string;
  search: string;
  onStage(stage: string): void;
}) {
  const leads = usePaged(
    LeadListDocument,
    {
      stage: isStage(stage) ? stage : (null as LeadStage | null),
      search: search || null,
      limit: PAGE,
    },
    (data) => data.leads,
  );
  const filtered = Boolean(stage || search);
  return (
    <>
      <div className="crm-filters">
        <SelectField
          label="Stage"
          value={isStage(stage) ? stage : ""}
          options={optionsOf(STAGE_LABEL, "Every stage")}
          error={fieldError(leads.error, "stage")}
          onChange={(event) => onStage(event.target.value)}
        />
      </div>
      <ErrorBanner error={leads.error} fields={["stage"]} />
      {leads.loading && leads.rows.length === 0 && <Loading />}
      {(!leads.loading || leads.rows.length > 0) && (
        <Table
          caption="Leads"
          rows={leads.rows}
          rowKey={(lead) => lead.id}
          empty={filtered ? "No leads match." : "No leads yet."}
          columns={[
            {
              header: "Name",
              cell: (lead) => (
                <span className="crm-name">
                  <Link to={leadPath(lead.id)}>{lead.full_name}</Link>
                  {lead.email && <span className="muted">{lead.email}</span>}
                </span>
              ),
            },
            { header: "Company", cell: (lead) => lead.company_name ?? "—" },
            { header: "Stage", cell: (lead) => <StageTag stage={lead.stage} />, nowrap: true },
            {
              header: "Priority",
              cell: (lead) => <PriorityTag priority={lead.priority} suffix="priority" />,
              nowrap: true,
            },
            {
              header: "Value",
              cell: (lead) => formatMoney(lead.estimated_value, lead.currency),
              nowrap: true,
            },
            { header: "Source", cell: (lead) => lead.source ?? "—" },
            {
              header: "Next follow-up",
              cell: (lead) => formatDateTime(lead.next_follow_up_at, "—"),
            },
            { header: "Created", cell: (lead) => formatDate(lead.created_at), nowrap: true },
          ]}
        />
      )}
      {leads.hasMore && (
        <Actions>
          <Button busy={leads.loading} onClick={leads.more}>
            Show more leads
          </Button>
        </Actions>
      )}
    </>
  );
}
