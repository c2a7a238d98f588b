import { type ReactNode, useMemo } from "react";
import { Button } from "../../ui/Button.tsx";
import { Chart } from "../../ui/Chart.tsx";
import { formatNumber, formatPercent } from "../../ui/format.ts";
import { Table } from "../../ui/Table.tsx";
import { dayLabel, formatMs, plural, type Stats } from "./log-format.tsx";

/** The series colours (the pixel test of the charts looks for them). */
const COLOURS = {
  ok: "#2563eb",
  failed: "#dc2626",
  rate: "#c2410c",
  p50: "#0d9488",
  p95: "#7c3aed",
  endpoint: "#0891b2",
} as const;

/** The period's figures and charts: volume, error rate, latency, top endpoints. */
export function Traffic({
  stats,
  keyName,
  onRoute,
}: {
  stats: Stats;
  keyName: string | null;
  onRoute(route: string): void;
}) {
  const charts = useMemo(() => chartsOf(stats), [stats]);
  const errors = stats.daily.reduce((sum, day) => sum + day.errors, 0);
  const period = `the last ${stats.days} days (UTC)${keyName ? `, key ${keyName}` : ""}`;
  return (
    <>
      <p className="muted">
        Figures of {period}. The charts follow the key filter; status, route and time filters apply to the
        table below.
      </p>
      <dl className="facts logs-facts" aria-label="Totals">
        <div>
          <dt>Requests</dt>
          <dd data-testid="logs-total">{formatNumber(stats.total)}</dd>
        </div>
        <div>
          <dt>Error rate</dt>
          <dd data-testid="logs-error-rate">
            {formatPercent(stats.error_rate * 100)}{" "}
            <span className="logs-fact-note">({plural(errors, "error")})</span>
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
              <Chart
                type="bar"
                data={charts.volume}
                options={charts.volumeOptions}
                label={`Requests per day over ${period}: ${plural(stats.total, "request")}, ${plural(errors, "error")}.`}
              />
            </ChartFigure>
            <ChartFigure title="Error rate per day">
              <Chart
                type="line"
                data={charts.rate}
                options={charts.rateOptions}
                label={`Share of failed requests per day over ${period}; ${formatPercent(stats.error_rate * 100)} in all.`}
              />
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
              <EndpointBars endpoints={stats.top_endpoints} />
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
                    <Button
                      variant="link"
                      aria-label={`Show the requests to ${e.route}`}
                      onClick={() => onRoute(e.route)}
                    >
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

/**
 * The most requested routes as bars of HTML rather than a canvas: a route is long
 * ("POST /v1/buckets/{id}/objects"), and text wraps where a chart's axis would cut it.
 */
function EndpointBars({ endpoints }: { endpoints: Stats["top_endpoints"] }) {
  const most = Math.max(1, ...endpoints.map((e) => e.requests));
  return (
    <ol className="logs-endpoints" aria-label="Top endpoints">
      {endpoints.map((endpoint) => {
        const name = `${endpoint.method} ${endpoint.route}`;
        return (
          <li key={name}>
            <span className="logs-endpoint-label" title={name}>
              {name}
            </span>
            <span className="logs-endpoint-track" aria-hidden="true">
              <span
                className="logs-endpoint-bar"
                style={{ width: `${(100 * endpoint.requests) / most}%`, background: COLOURS.endpoint }}
              />
            </span>
            <span className="logs-endpoint-count">{plural(endpoint.requests, "request")}</span>
          </li>
        );
      })}
    </ol>
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
        {
          label: "Succeeded",
          data: stats.daily.map((d) => d.requests - d.errors),
          backgroundColor: COLOURS.ok,
          stack: "requests",
        },
        {
          label: "Failed (status ≥ 400)",
          data: stats.daily.map((d) => d.errors),
          backgroundColor: COLOURS.failed,
          stack: "requests",
        },
      ],
    },
    volumeOptions: {
      plugins: { legend },
      scales: {
        x: { stacked: true, grid: { display: false } },
        y: { stacked: true, beginAtZero: true, ticks: { precision: 0 }, grid },
      },
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
      plugins: {
        legend: { display: false },
        tooltip: {
          callbacks: { label: (item: { parsed: { y: number | null } }) => `${item.parsed.y ?? 0} %` },
        },
      },
      scales: {
        x: { grid: { display: false } },
        y: {
          beginAtZero: true,
          suggestedMax: 10,
          ticks: { callback: (value: string | number) => `${value} %` },
          grid,
        },
      },
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
      scales: {
        x: { grid: { display: false } },
        y: { beginAtZero: true, ticks: { callback: (value: string | number) => `${value} ms` }, grid },
      },
    },
  };
}
