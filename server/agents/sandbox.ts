import type { Plugin } from "graphql-yoga";
import type { Revocations } from "../../schema/context.ts";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { log } from "../observability/log.ts";
import { useSweep } from "../runtime/sweep.ts";
import { OAuthError } from "./oauth.ts";

/** An anonymous agent's sandbox is deleted this long after it was made, unless a user claims it. */
export const SANDBOX_LIFETIME_SECONDS = 7 * 24 * 3600;
export const SANDBOX_SWEEP_INTERVAL_MS = 3_600_000;

/** Any number, the same in every process: the advisory lock that makes counting and adding sandboxes one step. */
const SANDBOX_COUNT_LOCK = 0x6b74_7273; // "ktrs"
/** The longest Retry-After a full deployment names: sandboxes expire a week after they were made. */
const MAX_RETRY_AFTER_SECONDS = 3600;

/**
 * A new sandbox workspace: free plan, agent auth on, no owner until a user claims it. A deployment
 * keeps at most `maxSandboxes` live ones (KONTOR_MAX_SANDBOXES); past it the answer is 429
 * rate_limit_exceeded, until one expires or is claimed.
 */
export async function createSandbox(
  tx: Prisma.TransactionClient,
  agentName: string | null,
  maxSandboxes: number,
): Promise<{ id: string; expiresAt: Date }> {
  await tx.$executeRaw`select pg_advisory_xact_lock(${SANDBOX_COUNT_LOCK})`;
  const [live] = await tx.$queryRaw<{ count: bigint; next: Date | null }[]>`
    select count(*)::bigint as count, min(sandbox_expires_at) as next from workspaces where sandbox_expires_at > now()`;
  if (live && Number(live.count) >= maxSandboxes) {
    const untilNext = live.next
      ? Math.ceil((live.next.getTime() - Date.now()) / 1000)
      : MAX_RETRY_AFTER_SECONDS;
    const retryAfter = Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, untilNext));
    throw new OAuthError(
      429,
      "rate_limit_exceeded",
      `This deployment holds its most live sandboxes (${maxSandboxes}); retry in ${retryAfter} seconds, or register for a user with service_auth.`,
      {},
      { "Retry-After": String(retryAfter) },
    );
  }
  const expiresAt = new Date(Date.now() + SANDBOX_LIFETIME_SECONDS * 1000);
  const workspace = await tx.workspace.create({
    data: {
      id: newId("workspace"),
      name: `Sandbox of ${agentName ?? "an anonymous agent"}`,
      plan: "free",
      agentAuthEnabled: true,
      sandboxExpiresAt: expiresAt,
    },
  });
  return { id: workspace.id, expiresAt };
}

/**
 * Deletes the sandboxes whose time is up, with everything in them. Each one is locked and checked
 * again before it goes, so a claim that lands meanwhile (it clears sandboxExpiresAt) keeps it, and
 * two processes sweeping at once delete each sandbox once.
 */
export async function sweepExpiredSandboxes(
  db: PrismaClient,
  revocations: Revocations,
  now = new Date(),
): Promise<number> {
  const due = await db.workspace.findMany({
    where: { sandboxExpiresAt: { lte: now } },
    select: { id: true },
    take: 500,
  });
  let deleted = 0;
  for (const { id } of due) {
    const gone = await db.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<
        { id: string }[]
      >`select id from workspaces where id = ${id} and sandbox_expires_at <= ${now} for update`;
      if (locked.length === 0) return false;
      // Invoices first: an invoice's client is ON DELETE RESTRICT, which the workspace cascade would trip over.
      await tx.invoice.deleteMany({ where: { workspaceId: id } });
      await tx.workspace.delete({ where: { id } });
      return true;
    });
    if (gone) {
      deleted++;
      await revocations.revoked("workspace", [id]);
    }
  }
  return deleted;
}

/**
 * What the protocol leaves behind once it cannot matter any more: used JWT ids past their expiry,
 * ended sessions, tokens a day past their expiry, and registrations nobody claimed (no workspace)
 * a day after their claim token lapsed. Returns how many rows went.
 */
export async function sweepAgentLeftovers(db: PrismaClient, now = new Date()): Promise<number> {
  const dayAgo = new Date(now.getTime() - 86_400_000);
  const counts = await db.$transaction([
    db.usedJti.deleteMany({ where: { expiresAt: { lt: now } } }),
    db.session.deleteMany({ where: { expiresAt: { lt: now } } }),
    db.agentToken.deleteMany({ where: { expiresAt: { lt: dayAgo } } }),
    db.agentRegistration.deleteMany({ where: { workspaceId: null, claimExpiresAt: { lt: dayAgo } } }),
  ]);
  return counts.reduce((sum, { count }) => sum + count, 0);
}

/** Runs the sweep hourly in every process while the app lives (started at init, stopped on dispose). */
export const useSandboxSweep = (
  db: PrismaClient,
  revocations: Revocations,
  intervalMs = SANDBOX_SWEEP_INTERVAL_MS,
): Plugin =>
  useSweep("sandbox sweep", intervalMs, async () => {
    const sandboxes = await sweepExpiredSandboxes(db, revocations);
    if (sandboxes > 0) log("info", "expired sandboxes deleted", { count: sandboxes });
    const leftovers = await sweepAgentLeftovers(db);
    if (leftovers > 0) log("info", "expired agent records deleted", { count: leftovers });
  });
