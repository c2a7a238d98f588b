import { useState } from "react";
import { usePaged } from "../../api/paged.ts";
import { ClientListDocument } from "../../generated/graphql.ts";
import { Link, useQueryState } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDate } from "../../ui/format.ts";
import { Loading, Page } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { SearchForm } from "../../ui/TextFilter.tsx";
import "../crm.css";
import { ClientFormDialog } from "./ClientFormDialog.tsx";
import { clientPath, ONLY_WRITERS } from "./client-shared.ts";

/** The workspace's clients, searched (the search in the URL) and paged; new ones made in a dialog. */
export default function Clients() {
  const canWrite = useSession().can("clients.write");
  const [filters, setFilters] = useQueryState(["search"]);
  const clients = usePaged(ClientListDocument, { search: filters.search || null }, (data) => data.clients);
  const [creating, setCreating] = useState(false);
  const [notice, setNotice] = useState<{ text: string; id: string } | null>(null);

  return (
    <Page
      title="Clients"
      actions={
        <Button variant="primary" disabled={!canWrite} onClick={() => setCreating(true)}>
          New client
        </Button>
      }
    >
      {!canWrite && <RoleNote>{ONLY_WRITERS}</RoleNote>}
      {notice && (
        <Notice>
          {notice.text} <Link to={clientPath(notice.id)}>Open it</Link>
        </Notice>
      )}
      <div className="crm-toolbar">
        <SearchForm
          label="Search clients"
          value={filters.search}
          placeholder="Name, company or e-mail"
          className="crm-search"
          onSearch={(search) => setFilters({ search })}
        />
      </div>
      <ErrorBanner error={clients.error} />
      {clients.loading && clients.rows.length === 0 && <Loading />}
      {(!clients.loading || clients.rows.length > 0) && (
        <Table
          caption="Clients"
          rows={clients.rows}
          rowKey={(client) => client.id}
          empty={filters.search ? "No clients match." : "No clients yet."}
          columns={[
            {
              header: "Name",
              cell: (client) => <Link to={clientPath(client.id)}>{client.name}</Link>,
            },
            { header: "Company", cell: (client) => client.company_name ?? "—" },
            { header: "E-mail", cell: (client) => client.email ?? "—" },
            { header: "Phone", cell: (client) => client.phone ?? "—", nowrap: true },
            { header: "Currency", cell: (client) => client.currency, nowrap: true },
            { header: "Created", cell: (client) => formatDate(client.created_at), nowrap: true },
          ]}
        />
      )}
      {clients.hasMore && (
        <Actions>
          <Button busy={clients.loading} onClick={clients.more}>
            Show more clients
          </Button>
        </Actions>
      )}
      <ClientFormDialog
        open={creating}
        client={null}
        onClose={() => setCreating(false)}
        onSaved={(client) => {
          setCreating(false);
          setNotice({ text: `Client ${client.name} created.`, id: client.id });
          clients.restart();
        }}
      />
    </Page>
  );
}
