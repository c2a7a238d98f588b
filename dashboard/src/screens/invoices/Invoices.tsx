import { useQuery } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  type DocumentType,
  InvoiceClientsDocument,
  type InvoiceStatus,
  InvoicesDocument,
} from "../../generated/graphql.ts";
import { Link, useQueryState } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, RoleNote } from "../../ui/ErrorBanner.tsx";
import { optionsOf, SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDay } from "../../ui/format.ts";
import { Money } from "../../ui/Money.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import {
  CANNOT_WRITE,
  documentName,
  INVOICES_PATH,
  type InvoiceRow,
  invoicePath,
  isDocumentType,
  STATUS_TEXT,
  StatusBadge,
  TYPE_OPTIONS,
  TYPE_TEXT,
} from "./invoice-cells.tsx";
import "./invoices.css";

const STATUSES = Object.keys(STATUS_TEXT) as InvoiceStatus[];
const FILTERS = ["status", "type", "client", "overdue"] as const;

/** A value of the URL the API would refuse is read as no filter. */
const oneOf = <T extends string>(value: string, values: readonly T[]): T | null =>
  values.includes(value as T) ? (value as T) : null;

/**
 * Invoices and quotes in one list, newest first, 20 at a time with "Show more", filtered by
 * status, type and client (the `invoices` query's arguments) and by "overdue", all kept in the
 * URL (`?status=&type=&client=&overdue=1`). The API has no overdue argument: overdue asks for
 * invoices only and keeps the rows the API marks overdue among those loaded.
 */
export default function Invoices() {
  const { can } = useSession();
  const [filters, setFilters] = useQueryState(FILTERS);
  const overdue = filters.overdue === "1";
  const status = oneOf(filters.status, STATUSES);
  const type: DocumentType | null = overdue ? "invoice" : isDocumentType(filters.type) ? filters.type : null;
  const list = usePaged(
    InvoicesDocument,
    { status, document_type: type, client_id: filters.client || null },
    (data) => data.invoices,
  );
  const clients = useQuery(InvoiceClientsDocument, { search: null });
  const filtering = FILTERS.some((name) => filters[name] !== "");

  const firstPageLoading = list.loading && list.firstPage;
  const rows = firstPageLoading ? [] : list.rows.filter((doc) => !overdue || doc.overdue);
  const clientOptions = clients.data?.clients.data ?? [];

  return (
    <Page
      title="Invoices"
      actions={
        can("invoices.write") ? (
          <Link to={`${INVOICES_PATH}/new`} className="button button-primary">
            New invoice or quote
          </Link>
        ) : (
          <Button variant="primary" disabled>
            New invoice or quote
          </Button>
        )
      }
    >
      {!can("invoices.write") && <RoleNote>{CANNOT_WRITE}</RoleNote>}
      <Panel title="Filters">
        <div className="invoices-filters">
          <SelectField
            label="Status"
            value={status ?? ""}
            options={optionsOf(STATUS_TEXT, "Any status")}
            onChange={(event) => setFilters({ status: event.target.value })}
          />
          <SelectField
            label="Type"
            value={overdue ? "invoice" : (type ?? "")}
            disabled={overdue}
            hint={overdue ? "Only invoices can be overdue." : undefined}
            options={TYPE_OPTIONS}
            onChange={(event) => setFilters({ type: event.target.value })}
          />
          <SelectField
            label="Client"
            value={filters.client}
            options={[
              { value: "", label: "Any client" },
              // A client of the URL that is not among the first 100 is still shown as chosen.
              ...(filters.client && !clientOptions.some((c) => c.id === filters.client)
                ? [{ value: filters.client, label: filters.client }]
                : []),
              ...clientOptions.map((client) => ({ value: client.id, label: client.name })),
            ]}
            onChange={(event) => setFilters({ client: event.target.value })}
          />
          <label className="checkbox invoices-overdue">
            <input
              type="checkbox"
              checked={overdue}
              onChange={(event) => setFilters({ overdue: event.target.checked ? "1" : "" })}
            />
            <span>Overdue only</span>
          </label>
        </div>
        {overdue && (
          <p className="field-hint">
            Overdue: past the due date with a balance due. Only the invoices loaded so far are searched; “Show
            more” looks further back.
          </p>
        )}
        {filtering && (
          <Actions>
            <Button onClick={() => setFilters({ status: "", type: "", client: "", overdue: "" })}>
              Clear filters
            </Button>
          </Actions>
        )}
      </Panel>
      <ErrorBanner error={list.error} />
      {firstPageLoading && <Loading label="Loading invoices and quotes…" />}
      {!firstPageLoading && !(list.error && list.firstPage) && (
        <Table
          caption="Invoices and quotes"
          rows={rows}
          rowKey={(doc) => doc.id}
          empty={
            filtering
              ? list.hasMore
                ? "None of the documents loaded so far match these filters: show more to look further back."
                : "No invoice or quote matches these filters."
              : "No invoices or quotes yet."
          }
          columns={COLUMNS}
        />
      )}
      {list.hasMore && !firstPageLoading && (
        <Actions>
          <Button busy={list.loading} onClick={list.more}>
            Show more
          </Button>
        </Actions>
      )}
    </Page>
  );
}

const COLUMNS = [
  {
    header: "Number",
    nowrap: true,
    cell: (doc: InvoiceRow) => (
      <Link to={invoicePath(doc.id)} aria-label={documentName(doc)}>
        {doc.invoice_number}
      </Link>
    ),
  },
  { header: "Type", cell: (doc: InvoiceRow) => TYPE_TEXT[doc.document_type] },
  { header: "Client", cell: (doc: InvoiceRow) => doc.client?.name ?? doc.client_id },
  { header: "Status", cell: (doc: InvoiceRow) => <StatusBadge doc={doc} /> },
  { header: "Issued", nowrap: true, cell: (doc: InvoiceRow) => formatDay(doc.issue_date) },
  { header: "Due", nowrap: true, cell: (doc: InvoiceRow) => formatDay(doc.due_date) },
  {
    header: "Total",
    nowrap: true,
    cell: (doc: InvoiceRow) => <Money amount={doc.total} currency={doc.currency} />,
  },
  {
    header: "Balance due",
    nowrap: true,
    cell: (doc: InvoiceRow) =>
      doc.document_type === "quote" ? (
        <span className="muted">—</span>
      ) : (
        <Money amount={doc.balance_due} currency={doc.currency} />
      ),
  },
];
