import type { Plugin } from "graphql-yoga";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { AUDIT_RETENTION_DAYS } from "../../schema/lib/audit.ts";
import { log } from "../observability/log.ts";
import { useSweep } from "../runtime/sweep.ts";

const DAY_MS = 86_400_000;
export const AUDIT_SWEEP_INTERVAL_MS = 3_600_000;
/** Rows one statement deletes: no single statement holds locks on a large table for long. */
const SLICE = 5_000;

/**
 * Deletes the audit records older than AUDIT_RETENTION_DAYS (400 days) before `now`, in slices.
 * Nothing else ever deletes or changes one. Returns how many went.
 *
 * @example await sweepExpiredAuditEvents(prisma) // 0 on a deployment younger than 400 days
 */
export async function sweepExpiredAuditEvents(db: PrismaClient, now: Date = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - AUDIT_RETENTION_DAYS * DAY_MS);
  let total = 0;
  for (;;) {
    const deleted = await db.$executeRaw`
      delete from audit_events where id in (select id from audit_events where created_at < ${cutoff} limit ${SLICE})`;
    total += deleted;
    if (deleted < SLICE) return total;
  }
}

/**
 * Runs the retention sweep hourly in every process while the app lives; two processes sweeping at
 * once delete each record once.
 *
 * @example plugins: [useAuditSweep(db.prisma), …]
 */
export const useAuditSweep = (db: PrismaClient, intervalMs = AUDIT_SWEEP_INTERVAL_MS): Plugin =>
  useSweep("audit sweep", intervalMs, async () => {
    const count = await sweepExpiredAuditEvents(db);
    if (count > 0) log("info", "expired audit records deleted", { count });
  });
