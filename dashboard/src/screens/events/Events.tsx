import { EVENT_TYPES, TEST_EVENT_TYPE } from "../../../../schema/lib/event-types.ts";
import { usePaged } from "../../api/paged.ts";
import { EventsDocument } from "../../generated/graphql.ts";
import { BASE, Link, useQueryState } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import "./events.css";

/**
 * The workspace's events (what webhooks deliver), newest first, 25 at a time, filtered by type in
 * the URL (`?type=invoice.paid`); each opens its own page with its payload and deliveries.
 * Read-only, for every viewer with webhooks.read (owners and members).
 */

/** Where an event's own page is. */
export const eventPath = (id: string) => `${BASE}/events/${encodeURIComponent(id)}`;

const TYPE_OPTIONS = [
  { value: "", label: "Every type" },
  ...[...EVENT_TYPES, TEST_EVENT_TYPE].map((type) => ({ value: type, label: type })),
];

export default function Events() {
  const [filters, setFilters] = useQueryState(["type"]);
  const list = usePaged(EventsDocument, { type: filters.type || null }, (data) => data.events);
  const firstPageLoading = list.loading && list.firstPage;

  return (
    <Page
      title="Events"
      actions={
        <Button busy={list.loading} onClick={list.restart}>
          Refresh
        </Button>
      }
    >
      <Panel title="Recent events">
        <div className="events-filters">
          <SelectField
            label="Type"
            options={TYPE_OPTIONS}
            value={filters.type}
            onChange={(event) => setFilters({ type: event.target.value })}
          />
        </div>
        <ErrorBanner error={list.error} fields={["type"]} />
        {firstPageLoading && <Loading label="Loading events…" />}
        {!firstPageLoading && !(list.error && list.firstPage) && (
          <Table
            caption="Events"
            rows={list.rows}
            rowKey={(event) => event.id}
            empty={
              filters.type
                ? `No ${filters.type} events in the last 30 days.`
                : "No events in the last 30 days. Creating or changing a lead, client, invoice or other record makes one."
            }
            columns={[
              { header: "Type", cell: (event) => <code>{event.type}</code> },
              {
                header: "Event",
                nowrap: true,
                cell: (event) => (
                  <Link to={eventPath(event.id)} className="events-id" aria-label={`Event ${event.id}`}>
                    {event.id}
                  </Link>
                ),
              },
              { header: "Time", nowrap: true, cell: (event) => formatDateTime(event.created_at) },
            ]}
          />
        )}
        {list.hasMore && !firstPageLoading && (
          <Actions>
            <Button busy={list.loading} onClick={list.more}>
              Show more
            </Button>
          </Actions>
        )}
      </Panel>
    </Page>
  );
}
