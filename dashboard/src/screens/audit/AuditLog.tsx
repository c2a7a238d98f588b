import { useMemo } from "react";
import { ApiError } from "../../api/errors.ts";
import { usePaged } from "../../api/paged.ts";
import { AuditEventsDocument, type AuditEventsQuery } from "../../generated/graphql.ts";
import { useQueryState } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { Actions } from "../../ui/Form.tsx";
import { formatDateTime } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { useCredentialNames } from "../logs/credentials.ts";
import { shortId } from "../logs/log-format.tsx";
import { AuditFilters, type AuditFilterValues } from "./AuditFilters.tsx";
import "./audit.css";

/**
 * The workspace's audit log (auditEvents): every change to who may do what, newest first, 25 at a
 * time, filtered by action, actor, target and time range in the URL
 * (`?action=&actor=&target=&from=&to=`). Owners only: the API answers a member owner_required,
 * which the screen shows as it is.
 */

type AuditEvent = AuditEventsQuery["auditEvents"]["data"][number];

const NAMES = ["action", "actor", "target", "from", "to"] as const;

export default function AuditLog() {
  const [query, setQuery] = useQueryState(NAMES);
  const key = NAMES.map((name) => query[name]).join("\n");
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyed on the filters' values, not on the object.
  const filters: AuditFilterValues = useMemo(() => ({ ...query }), [key]);
  const list = usePaged(
    AuditEventsDocument,
    {
      action: filters.action || null,
      actor_id: filters.actor || null,
      target_id: filters.target || null,
      from: filters.from || null,
      to: filters.to || null,
    },
    (data) => data.auditEvents,
  );
  const { label } = useCredentialNames();
  const refused = list.error instanceof ApiError && list.error.code === "owner_required";
  const firstPageLoading = list.loading && list.firstPage;
  const showRows = !firstPageLoading && !(list.error && list.firstPage);
  const filtering = NAMES.some((name) => filters[name] !== "");

  const named = (id: string | null | undefined) => {
    if (!id) return null;
    const name = label(id);
    return name === shortId(id) ? (
      <code>{id}</code>
    ) : (
      <>
        {name} <code className="audit-id">{id}</code>
      </>
    );
  };
  const actor = (event: AuditEvent) => {
    if (event.actor.type === "user") return event.actor.email ?? named(event.actor.id);
    if (event.actor.type === "system") return <span className="muted">System (command line)</span>;
    return named(event.actor.id) ?? <span className="muted">{event.actor.type}</span>;
  };
  const optional = (value: string | null) =>
    value ? <code>{value}</code> : <span className="muted">none</span>;

  return (
    <Page
      title="Audit log"
      actions={
        !refused && (
          <Button busy={list.loading} onClick={list.restart}>
            Refresh
          </Button>
        )
      }
    >
      {refused ? (
        <ErrorBanner error={list.error} />
      ) : (
        <Panel title="Changes to access">
          <AuditFilters
            filters={filters}
            actions={[...new Set(list.rows.map((event) => event.action))].sort()}
            error={list.error}
            onApply={(next) => setQuery(next)}
          />
          <ErrorBanner error={list.error} fields={["action", "actor_id", "target_id", "from", "to"]} />
          {firstPageLoading && <Loading label="Loading the audit log…" />}
          {showRows && (
            <div className="audit-table">
              <Table
                caption="Audit events"
                rows={list.rows}
                rowKey={(event) => event.id}
                empty={filtering ? "No changes match these filters." : "No changes recorded yet."}
                columns={[
                  {
                    header: "Time",
                    cell: (event) => (
                      <time dateTime={event.created_at}>{formatDateTime(event.created_at)}</time>
                    ),
                  },
                  { header: "Action", nowrap: true, cell: (event) => <code>{event.action}</code> },
                  { header: "Actor", cell: actor },
                  {
                    header: "Target",
                    cell: (event) => (
                      <>
                        <span className="muted">{event.target.type}</span> {named(event.target.id)}
                      </>
                    ),
                  },
                  {
                    header: "IP and user agent",
                    cell: (event) => (
                      <>
                        <span className="audit-ip">{optional(event.client_ip)}</span>{" "}
                        {event.user_agent && <span className="audit-ua">{event.user_agent}</span>}
                      </>
                    ),
                  },
                  { header: "Request id", cell: (event) => optional(event.request_id) },
                ]}
              />
            </div>
          )}
          {list.hasMore && showRows && (
            <Actions>
              <Button busy={list.loading} onClick={list.more}>
                Show more
              </Button>
            </Actions>
          )}
        </Panel>
      )}
    </Page>
  );
}
