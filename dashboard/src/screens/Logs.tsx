import { useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { useQuery } from "../api/hooks.ts";
import {
  LogKeysDocument,
  RequestLogsDocument,
  RequestLogStatsDocument,
  type LogKeysQuery,
  type RequestLogFieldsFragment,
  type RequestLogStatsQuery,
} from "../generated/graphql.ts";
import { BASE, navigate, useLocation } from "../router.tsx";
import { useSession } from "../session.tsx";
import { Button } from "../ui/Button.tsx";
import { Chart } from "../ui/Chart.tsx";
import { Dialog } from "../ui/Dialog.tsx";
import { ErrorBanner, fieldError } from "../ui/ErrorBanner.tsx";
import { SelectField, TextField } from "../ui/Field.tsx";
import { Actions, Form } from "../ui/Form.tsx";
import { formatNumber, formatPercent } from "../ui/format.ts";
import { Loading, Page, Panel } from "../ui/Page.tsx";
import { Table } from "../ui/Table.tsx";
import "./logs.css";

/**
 * Request logs: the server's figures for the last days (requestLogStats: daily volume, error
 * rate, p50/p95 latency, top endpoints) drawn with Chart.js, and the requests themselves
 * (requestLogs), filtered by key, status, route and time range, a page of 25 at a time, each
 * with a detail view. The filters live in the URL query (`?key=&status=&route=&from=&to=&days=`),
 * so a link reproduces the view. Read-only, for owners and members alike; only owners may list
 * the keys (apiKeys), so a member filters by a key id typed in.
 */

type Log = RequestLogFieldsFragment;
type Stats = RequestLogStatsQuery["requestLogStats"];
type KeyInfo = LogKeysQuery["apiKeys"]["data"][number];

const PATH = `${BASE}/logs`;
const DEFAULT_DAYS = 7;
const PERIODS = [
  { value: "7", label: "Last 7 days" },
  { value: "30", label: "Last 30 days" },
  { value: "90", label: "Last 90 days" },
];

/** The series colours (the pixel test of the charts looks for them). */
const COLOURS = { ok: "#2563eb", failed: "#dc2626", rate: "#c2410c", p50: "#0d9488", p95: "#7c3aed", endpoint: "#0891b2" } as const;

interface Filters {
  key: string;
  status: string;
  route: string;
  /** ISO 8601 (UTC) in the URL; shown in the user's time zone. */
  from: string;
  to: string;
}

const FILTER_NAMES = ["key", "status", "route", "from", "to"] as const;

function readFilters(query: URLSearchParams): Filters {
  return { key: query.get("key") ?? "", status: query.get("status") ?? "", route: query.get("route") ?? "", from: query.get("from") ?? "", to: query.get("to") ?? "" };
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

const pad = (n: number) => String(n).padStart(2, "0");

/** An ISO time as a datetime-local value, in the browser's time zone, to the second. */
function toLocalInput(iso: string): string {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return "";
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** A datetime-local value (the browser's time zone) as an ISO time. */
function fromLocalInput(value: string): string {
  const date = new Date(value);
  return value && !Number.isNaN(date.getTime()) ? date.toISOString() : "";
}

const timeShort = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" });
const timeLong = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });
const dayLabel = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
const formatMs = (ms: number | null | undefined) => (ms == null ? "—" : `${formatNumber(ms)} ms`);
const plural = (n: number, one: string, many = `${one}s`) => `${formatNumber(n)} ${n === 1 ? one : many}`;

/** `key_01J…WXYZ`: enough to tell keys apart in a table cell. */
const shortId = (id: string) => (id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id);

export default function Logs() {
  const { isOwner } = useSession();
  const { query } = useLocation();
  // The filters' identity changes only when one of them does (not with the period).
  const filterKey = FILTER_NAMES.map((name) => query.get(name) ?? "").join("\n");
  const filters = useMemo(() => readFilters(query), [filterKey]);
  const days = readDays(query);
  const filtering = FILTER_NAMES.some((name) => filters[name] !== "");

  const keys = useQuery(LogKeysDocument, {}, { skip: !isOwner });
  const keyList = keys.data?.apiKeys.data;
  const keyLabel = (id: string | null): string => {
    if (!id) return "no key";
    const key = keyList?.find((k) => k.id === id);
    return key ? (key.name ?? `${key.prefix}…`) : shortId(id);
  };

  // A status that is not a whole number never reaches the API (which takes an Int).
  const statusInvalid = filters.status !== "" && !/^-?\d{1,9}$/.test(filters.status);
  const variables = {
    key_id: filters.key || null,
    status: statusInvalid || !filters.status ? null : Number(filters.status),
    route: filters.route || null,
    from: filters.from || null,
    to: filters.to || null,
  };
  const listKey = JSON.stringify(variables);
  const [paging, setPaging] = useState<{ for: string; cursor: string | null; earlier: Log[] }>({ for: listKey, cursor: null, earlier: [] });
  const page = paging.for === listKey ? paging : { for: listKey, cursor: null, earlier: [] as Log[] };
  const list = useQuery(RequestLogsDocument, { ...variables, cursor: page.cursor }, { skip: statusInvalid });
  const stats = useQuery(RequestLogStatsDocument, { days, key_id: filters.key || null });

  // A first page on its way replaces what is shown (other filters); a next page adds to it.
  const firstPageLoading = list.loading && page.cursor === null;
  const showRows = !statusInvalid && !firstPageLoading && !(list.error && page.cursor === null);
  const rows = showRows ? unique([...page.earlier, ...(list.error ? [] : (list.data?.requestLogs.data ?? []))]) : [];
  const hasMore = showRows && !list.error && (list.data?.requestLogs.has_more ?? false);

  const [selected, setSelected] = useState<Log | null>(null);
  const apply = (next: Filters, nextDays = days) => navigate(logsUrl(next, nextDays));
  const refresh = () => {
    setPaging({ for: listKey, cursor: null, earlier: [] });
    list.reload();
    stats.reload();
  };

  // Suggestions for the route field: the top endpoints and the routes on screen.
  const routes = [...new Set([...(stats.data?.requestLogStats.top_endpoints.map((e) => e.route) ?? []), ...rows.flatMap((r) => (r.route ? [r.route] : []))])].sort();

  // The stats answer the same bad key_id as the list: said once, by the filters.
  const statsError = stats.error && !(list.error instanceof Error && stats.error instanceof Error && list.error.message === stats.error.message) ? stats.error : undefined;

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
        {stats.data && <Traffic stats={stats.data.requestLogStats} keyName={filters.key ? keyLabel(filters.key) : null} onRoute={(route) => apply({ ...filters, route })} />}
      </Panel>

      <Panel title="Requests">
        <FilterForm
          filters={filters}
          error={list.error}
          statusInvalid={statusInvalid}
          // Owners pick from their keys (the list fills in as it loads); members, and an owner whose
          // key list failed, type a key id. The field never changes kind under the user.
          pickKey={isOwner && !keys.error}
          keys={keyList}
          routes={routes}
          onApply={(next) => apply(next)}
          onClear={() => apply({ key: "", status: "", route: "", from: "", to: "" })}
          filtering={filtering}
        />
        <ErrorBanner error={list.error} />
        {firstPageLoading && <Loading label="Loading requests…" />}
        {showRows && (
          <>
            <p className="muted logs-count" role="status">
              {rows.length === 0 ? "" : `Showing ${plural(rows.length, "request")}${hasMore ? ", newest first; more follow." : ", newest first."}`}
            </p>
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
                  cell: (log) => <time dateTime={log.created_at}>{timeShort.format(new Date(log.created_at))}</time>,
                },
                {
                  header: "Request",
                  cell: (log) => (
                    <>
                      <span className="logs-method">{log.method}</span> {log.route ?? <span className="muted">(no route)</span>}
                    </>
                  ),
                },
                { header: "Status", nowrap: true, cell: (log) => <StatusTag status={log.status} /> },
                { header: "Latency", nowrap: true, cell: (log) => formatMs(log.latency_ms) },
                { header: "Key", cell: (log) => (log.key_id ? keyLabel(log.key_id) : <span className="muted">no key</span>) },
                {
                  header: "Request id",
                  nowrap: true,
                  cell: (log) => (
                    <Button variant="link" className="logs-id" aria-label={`Details of ${log.request_id}`} onClick={() => setSelected(log)}>
                      {log.request_id}
                    </Button>
                  ),
                },
              ]}
            />
          </>
        )}
        {hasMore && (
          <Actions>
            <Button
              busy={list.loading}
              onClick={() => setPaging({ for: listKey, cursor: list.data?.requestLogs.next_cursor ?? null, earlier: rows })}
            >
              Load more
            </Button>
          </Actions>
        )}
      </Panel>

      <LogDetail
        log={selected}
        keyLabel={keyLabel}
        onClose={() => setSelected(null)}
        onFilter={(change) => {
          setSelected(null);
          apply({ ...filters, ...change });
        }}
      />
    </Page>
  );
}

function unique(logs: Log[]): Log[] {
  const seen = new Map<string, Log>();
  for (const log of logs) if (!seen.has(log.request_id)) seen.set(log.request_id, log);
  return [...seen.values()];
}

function StatusTag({ status }: { status: number }) {
  const tone = status >= 500 ? "tag-bad" : status >= 400 ? "tag-warn" : status < 300 ? "tag-ok" : "";
  return <span className={["tag", tone].filter(Boolean).join(" ")}>{status}</span>;
}

function FilterForm({
  filters,
  error,
  statusInvalid,
  pickKey,
  keys,
  routes,
  onApply,
  onClear,
  filtering,
}: {
  filters: Filters;
  error: unknown;
  statusInvalid: boolean;
  pickKey: boolean;
  keys: KeyInfo[] | undefined;
  routes: string[];
  onApply(filters: Filters): void;
  onClear(): void;
  filtering: boolean;
}) {
  const fromUrl = (f: Filters): Filters => ({ ...f, from: toLocalInput(f.from), to: toLocalInput(f.to) });
  const [draft, setDraft] = useState(() => fromUrl(filters));
  const [draftOf, setDraftOf] = useState(filters);
  // The URL changed (applied, a link, Back): the fields show it.
  if (draftOf !== filters) {
    setDraftOf(filters);
    setDraft(fromUrl(filters));
  }
  const set = (name: keyof Filters) => (event: { target: { value: string } }) => setDraft((d) => ({ ...d, [name]: event.target.value }));
  const submit = () => onApply({ ...draft, from: fromLocalInput(draft.from), to: fromLocalInput(draft.to) });

  const keyOptions = [
    { value: "", label: "All keys" },
    ...(keys ?? []).map((key) => ({ value: key.id, label: `${key.name ?? "(no name)"} · ${key.prefix}…${key.revoked_at ? " (revoked)" : ""}` })),
  ];
  if (draft.key && !keyOptions.some((option) => option.value === draft.key)) keyOptions.push({ value: draft.key, label: draft.key });
  const routesId = "logs-routes";

  return (
    <Form onSubmit={submit} aria-label="Filter requests" className="logs-filters">
      {pickKey ? (
        <SelectField label="Key" options={keyOptions} value={draft.key} onChange={set("key")} error={fieldError(error, "key_id")} />
      ) : (
        <TextField
          label="Key id"
          placeholder="key_…"
          spellCheck={false}
          autoComplete="off"
          value={draft.key}
          onChange={set("key")}
          error={fieldError(error, "key_id")}
          hint="As shown in a request's details."
        />
      )}
      <TextField
        label="Status"
        type="number"
        inputMode="numeric"
        placeholder="e.g. 404"
        value={draft.status}
        onChange={set("status")}
        error={statusInvalid ? "The status is a whole number, e.g. 404." : fieldError(error, "status")}
      />
      <TextField
        label="Route"
        placeholder="/v1/leads/{id}"
        spellCheck={false}
        autoComplete="off"
        list={routesId}
        value={draft.route}
        onChange={set("route")}
        error={fieldError(error, "route")}
        hint="The route template, as logged."
      />
      <datalist id={routesId}>
        {routes.map((route) => (
          <option key={route} value={route} />
        ))}
      </datalist>
      <TextField label="From" type="datetime-local" step={1} value={draft.from} onChange={set("from")} error={fieldError(error, "from")} />
      <TextField label="To" type="datetime-local" step={1} value={draft.to} onChange={set("to")} error={fieldError(error, "to")} hint="Up to, not including, this time." />
      <Actions>
        <Button onClick={onClear} disabled={!filtering && !Object.values(draft).some(Boolean)}>
          Clear filters
        </Button>
        <Button type="submit" variant="primary">
          Apply filters
        </Button>
      </Actions>
    </Form>
  );
}

function Traffic({ stats, keyName, onRoute }: { stats: Stats; keyName: string | null; onRoute(route: string): void }) {
  const charts = useMemo(() => chartsOf(stats), [stats]);
  const errors = stats.daily.reduce((sum, day) => sum + day.errors, 0);
  const period = `the last ${stats.days} days (UTC)${keyName ? `, key ${keyName}` : ""}`;
  return (
    <>
      <p className="muted">
        Figures of {period}. The charts follow the key filter; status, route and time filters apply to the table below.
      </p>
      <dl className="facts" aria-label="Totals">
        <div>
          <dt>Requests</dt>
          <dd data-testid="logs-total">{formatNumber(stats.total)}</dd>
        </div>
        <div>
          <dt>Error rate</dt>
          <dd data-testid="logs-error-rate">
            {formatPercent(stats.error_rate * 100)} <span className="logs-fact-note">({plural(errors, "error")})</span>
          </dd>
        </div>
        <div>
          <dt>Latency p50</dt>
          <dd data-testid="logs-p50">{formatMs(stats.latency_ms.p50)}</dd>
        </div>
        <div>
          <dt>Latency p95</dt>
          <dd data-testid="logs-p95">{formatMs(stats.latency_ms.p95)}</dd>
        </div>
      </dl>
      {stats.total === 0 ? (
        <p className="empty">No requests in {period}: nothing to chart yet.</p>
      ) : (
        <>
          <div className="logs-charts" data-testid="logs-charts">
            <ChartFigure title="Requests per day">
              <Chart type="bar" data={charts.volume} options={charts.volumeOptions} label={`Requests per day over ${period}: ${plural(stats.total, "request")}, ${plural(errors, "error")}.`} />
            </ChartFigure>
            <ChartFigure title="Error rate per day">
              <Chart type="line" data={charts.rate} options={charts.rateOptions} label={`Share of failed requests per day over ${period}; ${formatPercent(stats.error_rate * 100)} in all.`} />
            </ChartFigure>
            <ChartFigure title="Latency per day (p50 and p95)">
              <Chart
                type="bar"
                data={charts.latency}
                options={charts.latencyOptions}
                label={`Median and 95th percentile latency per day over ${period}: ${formatMs(stats.latency_ms.p50)} and ${formatMs(stats.latency_ms.p95)} in all.`}
              />
            </ChartFigure>
            <ChartFigure title="Top endpoints">
              <Chart
                type="bar"
                data={charts.endpoints}
                options={charts.endpointOptions}
                height={Math.max(160, 48 + 30 * stats.top_endpoints.length)}
                label={`The most requested routes over ${period}: ${stats.top_endpoints.map((e) => `${e.method} ${e.route} ${e.requests}`).join(", ")}.`}
              />
            </ChartFigure>
          </div>
          <details className="logs-figures">
            <summary>The figures as tables</summary>
            <Table
              caption="Requests per day"
              rows={[...stats.daily].reverse()}
              rowKey={(day) => day.date}
              columns={[
                { header: "Day (UTC)", cell: (day) => day.date, nowrap: true },
                { header: "Requests", cell: (day) => formatNumber(day.requests) },
                { header: "Errors", cell: (day) => formatNumber(day.errors) },
                { header: "Error rate", cell: (day) => formatPercent(day.error_rate * 100) },
                { header: "p50", cell: (day) => formatMs(day.p50_ms), nowrap: true },
                { header: "p95", cell: (day) => formatMs(day.p95_ms), nowrap: true },
              ]}
            />
            <Table
              caption="Top endpoints"
              rows={stats.top_endpoints}
              rowKey={(e) => `${e.method} ${e.route}`}
              empty="No requests matched a route."
              columns={[
                { header: "Endpoint", cell: (e) => `${e.method} ${e.route}` },
                { header: "Requests", cell: (e) => formatNumber(e.requests) },
                {
                  header: "Filter",
                  cell: (e) => (
                    <Button variant="link" aria-label={`Show the requests to ${e.route}`} onClick={() => onRoute(e.route)}>
                      Show requests
                    </Button>
                  ),
                },
              ]}
            />
          </details>
        </>
      )}
    </>
  );
}

function ChartFigure({ title, children }: { title: string; children: ReactNode }) {
  return (
    <figure className="logs-chart">
      <figcaption>{title}</figcaption>
      {children}
    </figure>
  );
}

function chartsOf(stats: Stats) {
  const labels = stats.daily.map((day) => dayLabel.format(new Date(`${day.date}T00:00:00Z`)));
  const legend = { position: "bottom" as const, labels: { boxWidth: 14 } };
  const grid = { color: "#e2e8f0" };
  return {
    volume: {
      labels,
      datasets: [
        { label: "Succeeded", data: stats.daily.map((d) => d.requests - d.errors), backgroundColor: COLOURS.ok, stack: "requests" },
        { label: "Failed (status ≥ 400)", data: stats.daily.map((d) => d.errors), backgroundColor: COLOURS.failed, stack: "requests" },
      ],
    },
    volumeOptions: {
      plugins: { legend },
      scales: { x: { stacked: true, grid: { display: false } }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, grid } },
    },
    rate: {
      labels,
      datasets: [
        {
          label: "Error rate",
          data: stats.daily.map((d) => Math.round(d.error_rate * 10_000) / 100),
          borderColor: COLOURS.rate,
          backgroundColor: "rgba(194, 65, 12, 0.15)",
          pointBackgroundColor: COLOURS.rate,
          borderWidth: 3,
          pointRadius: 4,
          fill: true,
        },
      ],
    },
    rateOptions: {
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: (item: { parsed: { y: number | null } }) => `${item.parsed.y ?? 0} %` } } },
      scales: { x: { grid: { display: false } }, y: { beginAtZero: true, suggestedMax: 10, ticks: { callback: (value: string | number) => `${value} %` }, grid } },
    },
    latency: {
      labels,
      datasets: [
        { label: "p50", data: stats.daily.map((d) => d.p50_ms), backgroundColor: COLOURS.p50 },
        { label: "p95", data: stats.daily.map((d) => d.p95_ms), backgroundColor: COLOURS.p95 },
      ],
    },
    latencyOptions: {
      plugins: { legend },
      scales: { x: { grid: { display: false } }, y: { beginAtZero: true, ticks: { callback: (value: string | number) => `${value} ms` }, grid } },
    },
    endpoints: {
      labels: stats.top_endpoints.map((e) => `${e.method} ${e.route}`),
      datasets: [{ label: "Requests", data: stats.top_endpoints.map((e) => e.requests), backgroundColor: COLOURS.endpoint }],
    },
    endpointOptions: {
      indexAxis: "y" as const,
      plugins: { legend: { display: false } },
      scales: { x: { beginAtZero: true, ticks: { precision: 0 }, grid }, y: { grid: { display: false } } },
    },
  };
}

function LogDetail({
  log,
  keyLabel,
  onClose,
  onFilter,
}: {
  log: Log | null;
  keyLabel(id: string | null): string;
  onClose(): void;
  onFilter(change: Partial<Filters>): void;
}) {
  const none = <span className="muted">none</span>;
  // Focus starts on Close (the dialog's own effect has opened it by now), not on a filter button.
  const actions = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (log) actions.current?.querySelector<HTMLButtonElement>("button")?.focus();
  }, [log]);
  const item = (term: string, value: ReactNode) => (
    <div key={term}>
      <dt>{term}</dt>
      <dd>{value ?? none}</dd>
    </div>
  );
  return (
    <Dialog open={log !== null} title="Request details" onClose={onClose}>
      {log && (
        <>
          <dl className="logs-detail" aria-label={`Request ${log.request_id}`}>
            {item("Request id", <code>{log.request_id}</code>)}
            {item(
              "Time",
              <>
                {timeLong.format(new Date(log.created_at))} <code className="logs-iso">{log.created_at}</code>
              </>,
            )}
            {item("Method", log.method)}
            {item(
              "Route",
              log.route && (
                <>
                  <code>{log.route}</code>{" "}
                  <Button variant="link" onClick={() => onFilter({ route: log.route ?? "" })}>
                    Only this route
                  </Button>
                </>
              ),
            )}
            {item("Status", <StatusTag status={log.status} />)}
            {item("Latency", formatMs(log.latency_ms))}
            {item("Error code", log.error_code && <code>{log.error_code}</code>)}
            {item(
              "Key",
              log.key_id && (
                <>
                  {keyLabel(log.key_id) !== shortId(log.key_id) && <>{keyLabel(log.key_id)} </>}
                  <code>{log.key_id}</code>{" "}
                  {log.key_id.startsWith("key_") && (
                    <Button variant="link" onClick={() => onFilter({ key: log.key_id ?? "" })}>
                      Only this key
                    </Button>
                  )}
                </>
              ),
            )}
            {item("Client IP", log.client_ip && <code>{log.client_ip}</code>)}
            {item("User agent", log.user_agent && <code>{log.user_agent}</code>)}
            {item("Model", log.model && <code>{log.model}</code>)}
            {item("Input tokens", log.input_tokens == null ? null : formatNumber(log.input_tokens))}
            {item("Output tokens", log.output_tokens == null ? null : formatNumber(log.output_tokens))}
          </dl>
          <div className="actions" ref={actions}>
            <Button variant="primary" onClick={onClose}>
              Close
            </Button>
          </div>
        </>
      )}
    </Dialog>
  );
}
