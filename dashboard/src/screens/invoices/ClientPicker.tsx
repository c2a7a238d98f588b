import { useEffect, useState } from "react";
import { useQuery } from "../../api/hooks.ts";
import { InvoiceClientsDocument } from "../../generated/graphql.ts";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { SelectField, TextField } from "../../ui/Field.tsx";

export interface PickedClient {
  id: string;
  name: string;
  currency: string;
}

/**
 * The client billed, chosen from the workspace's clients (the first 100, newest first); when
 * there are more, a search field narrows the list (the API's `search`: name, company or e-mail).
 * `current` stays listed while it is chosen, whatever the search shows.
 */
export function ClientPicker({
  value,
  current,
  error,
  onChange,
}: {
  value: string;
  current: PickedClient | null;
  error: string | undefined;
  onChange(client: PickedClient | null): void;
}) {
  const [typed, setTyped] = useState("");
  const [search, setSearch] = useState("");
  useEffect(() => {
    const timer = setTimeout(() => setSearch(typed.trim()), 250);
    return () => clearTimeout(timer);
  }, [typed]);
  const clients = useQuery(InvoiceClientsDocument, { search: search || null });
  const found = clients.data?.clients.data ?? [];
  const listed = current && !found.some((client) => client.id === current.id) ? [current, ...found] : found;
  const [searchable, setSearchable] = useState(false);
  useEffect(() => {
    if (clients.data?.clients.has_more) setSearchable(true);
  }, [clients.data]);

  const none = clients.data && !search && found.length === 0;
  return (
    <div className="stack invoices-client">
      {searchable && (
        <TextField
          label="Find a client"
          type="search"
          hint="By name, company or e-mail."
          value={typed}
          onChange={(event) => setTyped(event.target.value)}
        />
      )}
      <SelectField
        label="Client"
        required
        value={value}
        error={error}
        hint={
          none
            ? "This workspace has no clients yet: add one under Clients first."
            : clients.loading && !clients.data
              ? "Loading the clients…"
              : search && found.length === 0
                ? `No client matches “${search}”.`
                : undefined
        }
        options={[
          { value: "", label: "Choose a client" },
          ...listed.map((client) => ({ value: client.id, label: client.name })),
        ]}
        onChange={(event) => {
          const client = listed.find((c) => c.id === event.target.value);
          onChange(client ? { id: client.id, name: client.name, currency: client.currency } : null);
        }}
      />
      <ErrorBanner error={clients.error} title="The clients could not be loaded." />
    </div>
  );
}
