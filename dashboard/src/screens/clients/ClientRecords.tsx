import { usePaged } from "../../api/paged.ts";
import {
  ClientDocumentsDocument,
  ClientProjectsDocument,
  type DocumentType,
  type InvoiceStatus,
  type ProjectStatus,
} from "../../generated/graphql.ts";
import { BASE, Link, useQueryState } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatMoney } from "../../ui/money.ts";
import { Loading, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { formatDay } from "../crm/dates.ts";

// A client's invoices and quotes, and their projects: lists of other areas, read for this client.

const STATUS_LABEL: Record<InvoiceStatus, string> = {
  draft: "Draft",
  sent: "Sent",
  partially_paid: "Partially paid",
  paid: "Paid",
  void: "Void",
  accepted: "Accepted",
  declined: "Declined",
  converted: "Converted",
};

const STATUS_TONE: Partial<Record<InvoiceStatus, string>> = {
  paid: "tag-ok",
  accepted: "tag-ok",
  partially_paid: "tag-warn",
  void: "tag-bad",
  declined: "tag-bad",
};

const DOCUMENT_OPTIONS = [
  { value: "", label: "Invoices and quotes" },
  { value: "invoice", label: "Invoices" },
  { value: "quote", label: "Quotes" },
];

const isDocumentType = (value: string): value is DocumentType => value === "invoice" || value === "quote";

/** The client's invoices and quotes (number, status, total, balance due), newest first, paged; the type in the URL. */
export function ClientDocuments({ clientId }: { clientId: string }) {
  const [filters, setFilters] = useQueryState(["documents"]);
  const type = isDocumentType(filters.documents) ? filters.documents : null;
  const documents = usePaged(
    ClientDocumentsDocument,
    { client_id: clientId, document_type: type },
    (data) => data.invoices,
  );
  return (
    <Panel title="Invoices and quotes">
      <div className="crm-filters">
        <SelectField
          label="Show"
          value={type ?? ""}
          options={DOCUMENT_OPTIONS}
          onChange={(event) => setFilters({ documents: event.target.value })}
        />
      </div>
      <ErrorBanner error={documents.error} />
      {documents.loading && documents.rows.length === 0 && <Loading />}
      {(!documents.loading || documents.rows.length > 0) && (
        <Table
          caption="Invoices and quotes"
          rows={documents.rows}
          rowKey={(document) => document.id}
          empty={
            type === "quote" ? "No quotes." : type === "invoice" ? "No invoices." : "No invoices or quotes."
          }
          columns={[
            {
              header: "Number",
              cell: (document) => (
                <Link to={`${BASE}/invoices/${encodeURIComponent(document.id)}`}>
                  {document.invoice_number}
                </Link>
              ),
              nowrap: true,
            },
            {
              header: "Type",
              cell: (document) => (document.document_type === "quote" ? "Quote" : "Invoice"),
            },
            {
              header: "Status",
              cell: (document) => (
                <>
                  <span className={["tag", STATUS_TONE[document.status]].filter(Boolean).join(" ")}>
                    {STATUS_LABEL[document.status]}
                  </span>
                  {document.overdue && <span className="tag tag-bad">Overdue</span>}
                </>
              ),
            },
            { header: "Issued", cell: (document) => formatDay(document.issue_date), nowrap: true },
            { header: "Due", cell: (document) => formatDay(document.due_date), nowrap: true },
            {
              header: "Total",
              cell: (document) => formatMoney(document.total, document.currency),
              nowrap: true,
            },
            {
              header: "Balance due",
              cell: (document) =>
                document.document_type === "quote"
                  ? "—"
                  : formatMoney(document.balance_due, document.currency),
              nowrap: true,
            },
          ]}
        />
      )}
      {documents.hasMore && (
        <Actions>
          <Button busy={documents.loading} onClick={documents.more}>
            Show more invoices and quotes
          </Button>
        </Actions>
      )}
    </Panel>
  );
}

const PROJECT_STATUS: Record<ProjectStatus, string> = {
  active: "Active",
  on_hold: "On hold",
  completed: "Completed",
  archived: "Archived",
};

/** The client's projects, newest first, paged. */
export function ClientProjects({ clientId }: { clientId: string }) {
  const projects = usePaged(ClientProjectsDocument, { client_id: clientId }, (data) => data.projects);
  return (
    <Panel title="Projects">
      <ErrorBanner error={projects.error} />
      {projects.loading && projects.rows.length === 0 && <Loading />}
      {(!projects.loading || projects.rows.length > 0) && (
        <Table
          caption="Projects"
          rows={projects.rows}
          rowKey={(project) => project.id}
          empty="No projects."
          columns={[
            {
              header: "Project",
              cell: (project) => (
                <Link to={`${BASE}/projects/${encodeURIComponent(project.id)}`}>{project.name}</Link>
              ),
            },
            {
              header: "Status",
              cell: (project) => <span className="tag">{PROJECT_STATUS[project.status]}</span>,
              nowrap: true,
            },
            { header: "Starts", cell: (project) => formatDay(project.start_date), nowrap: true },
            { header: "Due", cell: (project) => formatDay(project.due_date), nowrap: true },
            {
              header: "Budget",
              cell: (project) => formatMoney(project.budget, project.currency),
              nowrap: true,
            },
          ]}
        />
      )}
      {projects.hasMore && (
        <Actions>
          <Button busy={projects.loading} onClick={projects.more}>
            Show more projects
          </Button>
        </Actions>
      )}
    </Panel>
  );
}
