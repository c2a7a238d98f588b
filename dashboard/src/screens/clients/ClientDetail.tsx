import { useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { ClientDetailDocument, DeleteClientDocument } from "../../generated/graphql.ts";
import { Link, navigate, useLocation } from "../../router.tsx";
import { routeParam } from "../../routes.ts";
import { useSession } from "../../session.tsx";
import { Button } from "../../ui/Button.tsx";
import { ConfirmDialog } from "../../ui/ConfirmDialog.tsx";
import { ErrorBanner, Notice, RoleNote } from "../../ui/ErrorBanner.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import "../crm.css";
import { ClientFormDialog } from "./ClientFormDialog.tsx";
import { ClientDocuments, ClientProjects } from "./ClientRecords.tsx";
import { addressLines, CLIENTS_PATH, type Client, ONLY_WRITERS } from "./client-shared.ts";

const PATTERN = `${CLIENTS_PATH}/:id`;

/** One client: every field, an edit form, their invoices and quotes, their projects, and deletion. */
export default function ClientDetail() {
  const { path } = useLocation();
  const id = routeParam(PATTERN, path);
  const canWrite = useSession().can("clients.write");
  const query = useQuery(ClientDetailDocument, { id });
  const [saved, setSaved] = useState<Client | null>(null);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState<Client | null>(null);
  const [notice, setNotice] = useState("");

  const fetched = query.data?.client ?? null;
  const client = saved && saved.id === id ? saved : fetched;

  return (
    <Page
      title={client?.name ?? "Client"}
      actions={
        <Link to={CLIENTS_PATH} className="button button-secondary">
          All clients
        </Link>
      }
    >
      {!canWrite && <RoleNote>{ONLY_WRITERS}</RoleNote>}
      <Notice>{notice}</Notice>
      <ErrorBanner error={query.error} />
      {query.loading && !client && <Loading />}
      {client && (
        <>
          <Panel
            title="Details"
            actions={
              <div className="row-actions">
                <Button variant="primary" disabled={!canWrite} onClick={() => setEditing(true)}>
                  Edit client
                </Button>
                <Button variant="danger" disabled={!canWrite} onClick={() => setDeleting(client)}>
                  Delete client
                </Button>
              </div>
            }
          >
            <ClientFacts client={client} />
          </Panel>
          <ClientDocuments clientId={client.id} />
          <ClientProjects clientId={client.id} />
        </>
      )}
      <ClientFormDialog
        open={editing}
        client={client}
        onClose={() => setEditing(false)}
        onSaved={(updated) => {
          setEditing(false);
          setSaved(updated);
          setNotice("Client saved.");
        }}
      />
      <ConfirmDialog
        subject={deleting}
        title="Delete this client?"
        label="Delete client"
        confirm="Delete client"
        mutation={DeleteClientDocument}
        variables={(subject) => ({ id: subject.id })}
        onClose={() => setDeleting(null)}
        onDone={() => {
          setDeleting(null);
          navigate(CLIENTS_PATH);
        }}
      >
        <p>
          {deleting?.name} is deleted for good. A client with invoices or quotes cannot be deleted: the API
          refuses it.
        </p>
      </ConfirmDialog>
    </Page>
  );
}

function ClientFacts({ client }: { client: Client }) {
  const address = addressLines(client.address);
  const facts: [string, string][] = [
    ["Company", client.company_name ?? "—"],
    ["E-mail", client.email ?? "—"],
    ["Phone", client.phone ?? "—"],
    ["Tax or VAT number", client.tax_id ?? "—"],
    ["Currency", client.currency],
    ["Created", formatDateTime(client.created_at)],
    ["Updated", formatDateTime(client.updated_at)],
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
        <div>
          <dt>Address</dt>
          <dd>
            {address.length === 0
              ? "—"
              : address.map((line) => (
                  <span key={line} className="crm-line">
                    {line}
                  </span>
                ))}
          </dd>
        </div>
      </dl>
      <div className="crm-notes">
        <h3>Notes</h3>
        <p className={client.notes ? undefined : "muted"}>{client.notes ?? "No notes."}</p>
      </div>
    </>
  );
}
