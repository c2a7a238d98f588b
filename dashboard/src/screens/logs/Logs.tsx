import { useMemo } from "react";
import { useQuery } from "../../api/hooks.ts";
import { usePaged } from "../../api/paged.ts";
import {
  RequestLogStatsDocument,
  RequestLogsDocument,
  type RequestOutcome,
} from "../../generated/graphql.ts";
import { BASE, Link, navigate, useLocation } from "../../router.tsx";
import { Button } from "../../ui/Button.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { SelectField } from "../../ui/Field.tsx";
import { Actions } from "../../ui/Form.tsx";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { useCredentialNames } from "./credentials.ts";
import { FilterForm } from "./FilterForm.tsx";
import { type Filters, formatMs, type Log, plural, StatusTag, timeShort } from "./log-format.tsx";
import { Traffic } from "./Traffic.tsx";
import "./logs.css";

/**
 * Request logs: the server's figures for the last days (requestLogStats: daily volume, error
 * rate, p50/p95 latency, top endpoints) drawn with Chart.js, and the requests themselves
 * (requestLogs), filtered by key, outcome, status, route and time range, a page of 25 at a time,
 * each linking to its own page (LogRequest.tsx). The filters live in the URL query
 * (`?key=&outcome=&status=&route=&from=&to=&days=`), so a link reproduces the view. Read-only, for
 * owners and members alike; only owners may list the keys (apiKeys), so a member filters by a key
 * id typed in and sees key ids where an owner sees names.
 */

const PATH = `${BASE}/logs`;

const DEFAULT_DAYS = 7;

const PERIODS = [
  { value: "7", label: "Last 7 days" },
  { value: "30", label: "Last 30 days" },
  { value: "90", label: "Last 90 days" },
];

const FILTER_NAMES = ["key", "outcome", "status", "route", "from", "to"] as const;

const OUTCOMES: readonly string[] = ["succeeded", "failed"] satisfies RequestOutcome[];

function readFilters(query: URLSearchParams): Filters {
  return {
    key: query.get("key") ?? "",
    outcome: query.get("outcome") ?? "",
    status: query.get("status") ?? "",
    route: query.get("route") ?? "",
    from: query.get("from") ?? "",
    to: query.get("to") ?? "",
  };
}

function readDays(query: URLSearchParams): number {
  const days = Number(query.get("days"));
  return PERIODS.some((period) => Number(period.value) === days) ? days : DEFAULT_DAYS;
}

function logsUrl(filters: Filters, days: number): string {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) if (filters[name].trim()) params.set(name, filters[name].trim());
  if (days !== DEFAULT_DAYS) params.set("days", String(days));
  const search = params.toString();
  return search ? `${PATH}?${search}` : PATH;
}

export default function Logs() {
  const { query } = useLocation();
  // The filters' identity changes only when one of them does (not with the period).
  const filterKey = FILTER_NAMES.map((name) => query.get(name) ?? "").join("\n");
  // biome-ignore lint/correctness/useExhaustiveDependencies: keyed on the filters' values, not on the query object.
  const filters = useMemo(() => readFilters(query), [filterKey]);
  const days = readDays(query);
  const filtering = FILTER_NAMES.some((name) => filters[name] !== "");

  const credentials = useCredentialNames();
  const keyLabel = credentials.label;

  // A status that is not a whole number never reaches the API (which takes an Int).
  const statusInvalid = filters.status !== "" && !/^-?\d{1,9}$/.test(filters.status);
  const variables = {
    key_id: filters.key || null,
    status: statusInvalid || !filters.status ? null : Number(filters.status),
    // An outcome the URL names wrongly is left out, as the filter's field shows "All".
    outcome: OUTCOMES.includes(filters.outcome) ? (filters.outcome as RequestOutcome) : null,
    route: filters.route || null,
    from: filters.from || null,
    to: filters.to || null,
  };
  const list = usePaged(RequestLogsDocument, variables, (data) => data.requestLogs, { skip: statusInvalid });
  const stats = useQuery(RequestLogStatsDocument, { days, key_id: filters.key || null });

  // A first page on its way replaces what is shown (other filters); a next page adds to it.
  const firstPageLoading = list.loading && list.firstPage;
  const showRows = !statusInvalid && !firstPageLoading && !(list.error && list.firstPage);
  const rows = showRows ? unique(list.rows) : [];
  const hasMore = showRows && !list.error && list.hasMore;

  const apply = (next: Filters, nextDays = days) => navigate(logsUrl(next, nextDays));
  const refresh = () => {
    list.restart();
    stats.reload();
  };

  // Suggestions for the route field: the top endpoints and the routes on screen.
  const routes = [
    ...new Set([
      ...(stats.data?.requestLogStats.top_endpoints.map((e) => e.route) ?? []),
      ...rows.flatMap((r) => (r.route ? [r.route] : [])),
    ]),
  ].sort();

  // The stats answer the same bad key_id as the list: said once, by the filters.
  const statsError =
    stats.error &&
    !(
      list.error instanceof Error &&
      stats.error instanceof Error &&
      list.error.message === stats.error.message
    )
      ? stats.error
      : undefined;

  return (
    <Page title="Request logs" actions={<Button onClick={refresh}>Refresh</Button>}>
      <Panel
        title="Traffic"
        actions={
          <SelectField
            label="Period"
            className="logs-period"
            options={PERIODS}
            value={String(days)}
            onChange={(event) => apply(filters, Number(event.target.value))}
          />
        }
      >
        <ErrorBanner error={statsError} />
        {stats.loading && !stats.data && <Loading label="Loading the figures…" />}
        {stats.data && (
          <Traffic
            stats={stats.data.requestLogStats}
            keyName={filters.key ? keyLabel(filters.key) : null}
            onRoute={(route) => apply({ ...filters, route })}
          />
        )}
      </Panel>

      <Panel title="Requests">
        <FilterForm
          filters={filters}
          error={list.error}
          statusInvalid={statusInvalid}
          // Owners pick from their keys (the list fills in as it loads); members, and an owner whose
          // key list failed, type a key id. The field never changes kind under the user.
          pickKey={!credentials.keysUnavailable}
          keys={credentials.keys}
          routes={routes}
          onApply={(next) => apply(next)}
          onClear={() => apply({ key: "", outcome: "", status: "", route: "", from: "", to: "" })}
          filtering={filtering}
        />
        <ErrorBanner error={list.error} fields={["key_id", "outcome", "status", "route", "from", "to"]} />
        {firstPageLoading && <Loading label="Loading requests…" />}
        {showRows && (
          <>
            <p className="muted logs-count" role="status">
              {rows.length === 0
                ? ""
                : `Showing ${plural(rows.length, "request")}${hasMore ? ", newest first; more follow." : ", newest first."}`}
            </p>
            <div className="logs-requests">
              <Table
                caption="Requests"
                rows={rows}
                rowKey={(log) => log.request_id}
                empty={
                  filtering
                    ? "No requests match these filters."
                    : "No requests in the last 30 days. Requests made with this workspace's API keys and agents appear here within a second."
                }
                columns={[
                  {
                    header: "Time",
                    nowrap: true,
                    cell: (log) => (
                      <time dateTime={log.created_at}>{timeShort.format(new Date(log.created_at))}</time>
                    ),
                  },
                  {
                    header: "Request",
                    cell: (log) => (
                      <>
                        <span className="logs-method">{log.method}</span>{" "}
                        {log.route ?? <span className="muted">(no route)</span>}
                      </>
                    ),
                  },
                  { header: "Status", nowrap: true, cell: (log) => <StatusTag status={log.status} /> },
                  { header: "Latency", nowrap: true, cell: (log) => formatMs(log.latency_ms) },
                  {
                    header: "Key",
                    cell: (log) =>
                      log.key_id ? keyLabel(log.key_id) : <span className="muted">no key</span>,
                  },
                  {
                    header: "Request id",
                    nowrap: true,
                    cell: (log) => (
                      <Link
                        to={`${PATH}/${encodeURIComponent(log.request_id)}`}
                        className="logs-id"
                        aria-label={`Details of ${log.request_id}`}
                      >
                        {log.request_id}
                      </Link>
                    ),
                  },
                ]}
              />
            </div>
          </>
        )}
        {hasMore && (
          <Actions>
            <Button busy={list.loading} onClick={list.more}>
              Load more
            </Button>
          </Actions>
        )}
      </Panel>
    </Page>
  );
}

function unique(logs: Log[]): Log[] {
  const seen = new Map<string, Log>();
  for (const log of logs) if (!seen.has(log.request_id)) seen.set(log.request_id, log);
  return [...seen.values()];
}
