import { useMemo } from "react";
import { useQuery } from "../../api/hooks.ts";
import { OverviewBusinessDocument, OverviewDocument } from "../../generated/graphql.ts";
import { BASE, Link } from "../../router.tsx";
import { useSession } from "../../session.tsx";
import { Chart } from "../../ui/Chart.tsx";
import { ErrorBanner } from "../../ui/ErrorBanner.tsx";
import { formatBytes, formatDate, formatNumber, formatPercent } from "../../ui/format.ts";
import { Loading, Page, Panel } from "../../ui/Page.tsx";
import { Table } from "../../ui/Table.tsx";
import { BusinessPanels } from "./BusinessPanels.tsx";
import "./overview.css";

/**
 * The screen an owner opens every morning: how the business is doing (GET /summary and the latest
 * events), then the workspace, its plan's limits and its storage.
 */
export default function Overview() {
  const session = useSession();
  const { data, error, loading } = useQuery(OverviewDocument, {});
  const business = useQuery(OverviewBusinessDocument, {});
  const usage = data?.storageUsage;
  const chartData = useMemo(
    () =>
      usage && {
        labels: ["Used", "Free"],
        datasets: [
          {
            data: [usage.used_bytes, Math.max(0, usage.limit_bytes - usage.used_bytes)],
            backgroundColor: ["#1d4ed8", "#cbd5e1"],
            borderWidth: 0,
          },
        ],
      },
    [usage],
  );

  if (session.body?.workspaces.length === 0) {
    return (
      <Page title="Overview">
        <p>You are not a member of any workspace. Ask an owner for an invitation.</p>
      </Page>
    );
  }
  const workspace = data?.workspace;
  const limits = workspace?.limits;
  return (
    <Page title="Overview">
      <ErrorBanner error={business.error} />
      {business.loading && !business.data && <Loading label="Loading the business…" />}
      {business.data && <BusinessPanels summary={business.data.summary} events={business.data.events.data} />}
      <ErrorBanner error={error} />
      {loading && !data && <Loading />}
      {workspace && limits && usage && chartData && (
        <>
          <dl className="facts">
            <div>
              <dt>Workspace</dt>
              <dd>{workspace.name}</dd>
            </div>
            <div>
              <dt>Plan</dt>
              <dd data-testid="plan">{workspace.plan}</dd>
            </div>
            <div>
              <dt>Your role</dt>
              <dd>{session.role}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatDate(workspace.created_at)}</dd>
            </div>
          </dl>
          <div className="grid-2">
            <Panel title="Plan limits">
              <Table
                caption="Plan limits"
                rowKey={(row) => row.name}
                columns={[
                  { header: "Limit", cell: (row) => row.name },
                  { header: "Allowed", cell: (row) => row.value, nowrap: true },
                ]}
                rows={[
                  { name: "Requests per minute, per key", value: formatNumber(limits.requests_per_minute) },
                  { name: "AI requests per minute", value: formatNumber(limits.ai_requests_per_minute) },
                  { name: "Storage", value: limits.storage_label },
                  { name: "Coding tokens per 5 hours", value: formatNumber(limits.coding_tokens_5h) },
                  { name: "Coding tokens per week", value: formatNumber(limits.coding_tokens_weekly) },
                  { name: "Coding requests at once", value: formatNumber(limits.coding_concurrency) },
                ]}
              />
            </Panel>
            <Panel title="Storage" actions={<Link to={`${BASE}/storage`}>Buckets and files</Link>}>
              <p>
                <strong>{formatBytes(usage.used_bytes)}</strong> of {usage.limit_label} used (
                {formatPercent(usage.used_percent)}) in {formatNumber(usage.bucket_count)} bucket
                {usage.bucket_count === 1 ? "" : "s"} holding {formatNumber(usage.object_count)} file
                {usage.object_count === 1 ? "" : "s"}.
              </p>
              <meter className="meter" min={0} max={100} value={usage.used_percent} aria-label="Storage used">
                {formatPercent(usage.used_percent)}
              </meter>
              <Chart
                type="doughnut"
                data={chartData}
                height={200}
                label={`Storage: ${formatBytes(usage.used_bytes)} used of ${usage.limit_label}`}
                options={{ plugins: { legend: { position: "bottom" } }, cutout: "60%" }}
              />
            </Panel>
          </div>
        </>
      )}
    </Page>
  );
}
