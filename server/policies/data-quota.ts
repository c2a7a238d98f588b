import type { Plugin } from "graphql-yoga";
import type { DataQuotaServices, DataUsage } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { describeError, log } from "../observability/log.ts";
import { useSweep } from "../runtime/sweep.ts";
import type { IdempotencyStore } from "./idempotency-store.ts";

/** A sandbox (an anonymous agent's workspace) gets this share of the free plan's data quota. */
export const SANDBOX_DATA_SHARE = 10;

const exceeded = (usage: DataUsage) =>
  new ApiError(
    403,
    "permission_error",
    "data_quota_exceeded",
    `The workspace's stored records (${usage.bytes} bytes) have reached its data quota of ${usage.quotaBytes} bytes. ` +
      "Delete records (or upgrade the plan) to write again; reads and deletes still work.",
  );

/**
 * The data quota (docs/api/limits.md): the bytes a workspace's records take — every row of its tables
 * as PostgreSQL stores it, kept in `data_usage` by database triggers, plus its idempotency records
 * — against its plan's quota. Past it, writes are refused; reads and deletes still work.
 *
 * @example
 * const quota = new DataQuota(prisma, idempotencyStore, config.dataQuotaCapBytes);
 * await quota.assertWritable("ws_01J…"); // throws 403 data_quota_exceeded at the quota
 */
export class DataQuota implements DataQuotaServices {
  /** Workspaces whose usage rows are being folded (see foldSoon). */
  private readonly folding = new Set<string>();
  /** Runs after the request that asked, which does not wait for it. */
  private readonly foldOutside = (workspaceId: string) => {
    foldWorkspaceUsage(this.db, workspaceId)
      .catch((error: unknown) =>
        log("warn", "data usage fold failed", { workspace_id: workspaceId, ...describeError(error) }),
      )
      .finally(() => this.folding.delete(workspaceId));
  };

  constructor(
    private readonly db: PrismaClient,
    private readonly idempotency: IdempotencyStore,
    /** KONTOR_DATA_QUOTA_CAP_BYTES: caps every plan's quota (a small database, or a test). */
    private readonly capBytes: number | undefined,
  ) {}

  /** The quota of a workspace on `plan`: a sandbox has a tenth of free's. */
  quotaBytes(plan: PlanName, sandbox: boolean): number {
    const quota = sandbox
      ? PLAN_LIMITS.free.data_quota_bytes / SANDBOX_DATA_SHARE
      : PLAN_LIMITS[plan].data_quota_bytes;
    return this.capBytes === undefined ? quota : Math.min(quota, this.capBytes);
  }

  async usage(workspaceId: string): Promise<DataUsage> {
    const [records, idempotencyBytes] = await Promise.all([
      this.records(workspaceId),
      this.idempotency.workspaceBytes(workspaceId),
    ]);
    return usageOf(records, idempotencyBytes);
  }

  /** The workspace's plan, quota and the bytes its stored rows take (`data_usage`). */
  private async records(workspaceId: string): Promise<Records> {
    const [row] = await this.db.$queryRaw<
      { plan: PlanName; sandbox: boolean; bytes: bigint; rows: bigint }[]
    >`
      select w.plan::text as plan, w.sandbox_expires_at is not null as sandbox, u.bytes, u.rows
      from workspaces w cross join lateral (
        select coalesce(sum(bytes), 0)::bigint as bytes, count(*)::bigint as rows
        from data_usage where workspace_id = w.id
      ) u
      where w.id = ${workspaceId}`;
    if (row && Number(row.rows) > FOLD_AT_ROWS) this.foldSoon(workspaceId);
    return {
      bytes: Math.max(0, Number(row?.bytes ?? 0)),
      quotaBytes: row ? this.quotaBytes(row.plan, row.sandbox) : 0,
      idempotencyMaxBytes: row ? PLAN_LIMITS[row.plan].idempotency_bytes : 0,
    };
  }

  /**
   * Every write of a busy workspace reads its usage, summing the rows written since the last fold:
   * past FOLD_AT_ROWS they are folded now, after the request, rather than at the next minute's sweep
   * (a workspace writing 100 records a second summed ~4 000 rows a write before).
   */
  private foldSoon(workspaceId: string): void {
    if (this.folding.has(workspaceId) || this.folding.size >= MAX_FOLDING) return;
    this.folding.add(workspaceId);
    setImmediate(this.foldOutside, workspaceId);
  }

  /**
   * Throws data_quota_exceeded once the workspace's records and idempotency records reach its
   * quota. Idempotency records never hold more than the plan's `idempotency_bytes` (the oldest are
   * dropped past it), so a workspace further than that below its quota is let through on its rows
   * alone, without asking the idempotency store.
   */
  async assertWritable(workspaceId: string): Promise<void> {
    const records = await this.records(workspaceId);
    if (records.bytes + records.idempotencyMaxBytes < records.quotaBytes) return;
    const usage = usageOf(records, await this.idempotency.workspaceBytes(workspaceId));
    if (usage.bytes >= usage.quotaBytes) throw exceeded(usage);
  }
}

interface Records {
  bytes: number;
  quotaBytes: number;
  /** What the workspace's idempotency records may hold at most (its plan's idempotency_bytes). */
  idempotencyMaxBytes: number;
}

const usageOf = (records: Records, idempotencyBytes: number): DataUsage => ({
  recordBytes: records.bytes,
  idempotencyBytes,
  bytes: records.bytes + idempotencyBytes,
  quotaBytes: records.quotaBytes,
});

/** A workspace whose usage is kept in more rows than this is folded when a write reads it. */
export const FOLD_AT_ROWS = 64;
/** Workspaces folding at once in one process, at most. */
const MAX_FOLDING = 100;

/**
 * Folds one workspace's usage rows into one (see foldDataUsage). Returns the rows taken.
 *
 * @example await foldWorkspaceUsage(prisma, "ws_01J…") // → 65
 */
export async function foldWorkspaceUsage(db: PrismaClient, workspaceId: string): Promise<number> {
  const [{ taken } = { taken: 0n }] = await db.$queryRaw<{ taken: bigint }[]>`
    with gone as (
      delete from data_usage where workspace_id = ${workspaceId} returning bytes
    ), kept as (
      insert into data_usage (workspace_id, bytes)
      select ${workspaceId}::text, sum(g.bytes) from gone g
      where exists (select 1 from workspaces w where w.id = ${workspaceId})
      having sum(g.bytes) <> 0
    )
    select count(*)::bigint as taken from gone`;
  return Number(taken);
}

/** Workspaces one fold takes at most: no statement holds the table long. */
const FOLD_WORKSPACES = 2_000;
export const DATA_USAGE_FOLD_INTERVAL_MS = 60_000;

/**
 * Folds the usage rows of workspaces that have several into one row each, so reading a
 * workspace's usage sums a few rows. Safe in several processes at once: each row is deleted once. Returns the rows taken.
 *
 * @example await foldDataUsage(prisma) // → 0 when nothing was written since the last fold
 */
export async function foldDataUsage(db: PrismaClient): Promise<number> {
  const [{ taken } = { taken: 0n }] = await db.$queryRaw<{ taken: bigint }[]>`
    with busy as (
      select workspace_id from data_usage group by workspace_id having count(*) > 1 limit ${FOLD_WORKSPACES}
    ), gone as (
      delete from data_usage u using busy b where u.workspace_id = b.workspace_id returning u.workspace_id, u.bytes
    ), kept as (
      insert into data_usage (workspace_id, bytes)
      select g.workspace_id, sum(g.bytes) from gone g
      where exists (select 1 from workspaces w where w.id = g.workspace_id)
      group by g.workspace_id having sum(g.bytes) <> 0
    )
    select count(*)::bigint as taken from gone`;
  return Number(taken);
}

/** Folds the data usage rows every minute in every process while the app lives. */
export const useDataUsageFold = (db: PrismaClient, intervalMs = DATA_USAGE_FOLD_INTERVAL_MS): Plugin =>
  useSweep("data usage fold", intervalMs, async () => {
    const rows = await foldDataUsage(db);
    if (rows > 10_000) log("info", "data usage folded", { rows });
  });
