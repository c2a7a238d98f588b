import { useId } from "react";
import { PLAN_LIMITS, PLANS } from "../../../../schema/lib/plans.ts";
import type { StorageOverviewQuery } from "../../generated/graphql.ts";
import { formatBytes, formatNumber, formatPercent } from "../../ui/format.ts";
import { Panel } from "../../ui/Page.tsx";
import type { Usage } from "./storage-shared.ts";

/** What the workspace stores, against its plan's quota. */
export function UsagePanel({ usage }: { usage: Usage }) {
  const summaryId = useId();
  const free = Math.max(0, usage.limit_bytes - usage.used_bytes);
  return (
    <Panel title="Usage">
      <p id={summaryId} className="storage-summary">
        <strong data-testid="storage-used">{formatBytes(usage.used_bytes)}</strong> of{" "}
        <span data-testid="storage-limit">{usage.limit_label}</span> used (
        <span data-testid="storage-percent">{formatPercent(usage.used_percent)}</span>)
      </p>
      <meter
        className="meter"
        min={0}
        max={usage.limit_bytes}
        low={usage.limit_bytes * 0.8}
        high={usage.limit_bytes * 0.95}
        optimum={0}
        value={usage.used_bytes}
        aria-label="Storage used"
        aria-describedby={summaryId}
      >
        {formatPercent(usage.used_percent)}
      </meter>
      <dl className="facts storage-facts">
        <div>
          <dt>Free</dt>
          <dd data-testid="storage-free">{formatBytes(free)}</dd>
        </div>
        <div>
          <dt>Buckets</dt>
          <dd data-testid="storage-buckets">{formatNumber(usage.bucket_count)}</dd>
        </div>
        <div>
          <dt>Files</dt>
          <dd data-testid="storage-files">{formatNumber(usage.object_count)}</dd>
        </div>
      </dl>
      {usage.used_percent >= 90 && (
        <div className="banner storage-warn" role="note">
          {usage.used_bytes >= usage.limit_bytes ? "The quota is used up" : "The quota is almost used up"}:
          delete files or move to a larger plan to upload more.
        </div>
      )}
    </Panel>
  );
}

/** The plan's storage limits, and what another plan would give. */
export function PlanPanel({
  workspace,
  free,
}: {
  workspace: StorageOverviewQuery["workspace"];
  free: number;
}) {
  return (
    <Panel title="Plan limits">
      <dl className="facts storage-facts">
        <div>
          <dt>Plan</dt>
          <dd data-testid="storage-plan">{workspace.plan}</dd>
        </div>
        <div>
          <dt>Storage quota</dt>
          <dd>{workspace.limits.storage_label}</dd>
        </div>
        <div>
          <dt>Largest file</dt>
          <dd>Up to {formatBytes(free)}, the space left</dd>
        </div>
        <div>
          <dt>Requests a minute</dt>
          <dd>{formatNumber(workspace.limits.requests_per_minute)}</dd>
        </div>
      </dl>
      <p className="field-hint">
        Each upload, download and list is one request. Storage on each plan:{" "}
        {PLANS.map((plan, index) => (
          <span key={plan}>
            {index > 0 && " · "}
            {plan === workspace.plan ? (
              <strong>{`${plan} ${PLAN_LIMITS[plan].storage_label} (this workspace)`}</strong>
            ) : (
              `${plan} ${PLAN_LIMITS[plan].storage_label}`
            )}
          </span>
        ))}
        .
      </p>
    </Panel>
  );
}
