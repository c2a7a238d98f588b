import { usePaged } from "../../api/paged.ts";
import { ClientDocumentsDocument, ClientProjectsDocument } from "../../generated/graphql.ts";
import { Link, useQueryState } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDay } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import {
  invoicePath,
  isDocumentType,
  StatusBadge,
  TYPE_OPTIONS,
  TYPE_TEXT,
} from "../invoices/invoice-cells.tsx";
import { ProjectStatusTag, projectPath } from "../projects/project-cells.tsx";

// A client's invoices and quotes, and their projects: lists of other areas, read for this client
// and shown with those areas' cells.

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
          options={TYPE_OPTIONS}
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
              cell: (document) => <Link to={invoicePath(document.id)}>{document.invoice_number}</Link>,
              nowrap: true,
            },
            {
              header: "Type",
              cell: (document) => TYPE_TEXT[document.document_type],
            },
            {
              header: "Status",
              cell: (document) => <StatusBadge doc={document} />,
            },
            { header: "Issued", cell: (document) => formatDay(document.issue_date), nowrap: true },
            { header: "Due", cell: (document) => formatDay(document.due_date), nowrap: true },
            {
              header: "Total",
              cell: (document) => <Money amount={document.total} currency={document.currency} />,
              nowrap: true,
            },
            {
              header: "Balance due",
              cell: (document) =>
                document.document_type === "quote" ? (
                  "—"
                ) : (
                  <Money amount={document.balance_due} currency={document.currency} />
                ),
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
              cell: (project) => <Link to={projectPath(project.id)}>{project.name}</Link>,
            },
            {
              header: "Status",
              cell: (project) => <ProjectStatusTag status={project.status} />,
              nowrap: true,
            },
            { header: "Starts", cell: (project) => formatDay(project.start_date), nowrap: true },
            { header: "Due", cell: (project) => formatDay(project.due_date), nowrap: true },
            {
              header: "Budget",
              cell: (project) => <Money amount={project.budget} currency={project.currency} />,
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
