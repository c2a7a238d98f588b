import { Prisma } from "../generated/prisma/client.ts";
import { notFound } from "./errors.ts";

type Tx = Prisma.TransactionClient;

/** The tables a request locks rows of, by the object name its not_found errors use. */
const TABLES = {
  lead: "leads",
  task: "tasks",
  project: "projects",
  client: "clients",
  invoice: "invoices",
  bucket: "buckets",
  webhook_endpoint: "webhook_endpoints",
} as const;

export type Lockable = keyof typeof TABLES;

/**
 * `update` (the default) makes other lockers and writers of the row wait until this transaction
 * ends: the mode of a read-check-write. `share` only keeps the row from changing or going away
 * (a reference to it about to be written), and lets other sharers through.
 */
export type LockMode = "update" | "share";

/**
 * Locks one row of the workspace until the transaction ends (`select … for update`) and answers
 * whether it is there. A transaction waiting for the lock goes on once the holder ends, and reads
 * the row as it committed it: absent if the holder deleted it.
 */
export async function lockRow(
  tx: Tx,
  object: Lockable,
  id: string,
  workspaceId: string,
  mode: LockMode = "update",
): Promise<boolean> {
  const table = Prisma.raw(TABLES[object]);
  const rows = await tx.$queryRaw<{ id: string }[]>`
    select id from ${table} where id = ${id} and workspace_id = ${workspaceId} for ${Prisma.raw(mode === "share" ? "share" : "update")}`;
  return rows.length > 0;
}

/**
 * The way into every read-check-write of one object (a state transition, a delete that checks
 * first, an edit whose checks read the row): locks its row like lockRow, or throws 404 not_found
 * (`param` names the path parameter). Read the row after this, inside the same transaction: with
 * the lock held nobody else changes it, so concurrent requests on one object take turns and each
 * sees what the one before it committed. Of N requests making the same transition one makes it;
 * the others find it made (invalid_state, or nothing to do) and emit no event.
 *
 * @example
 * await ctx.db.$transaction(async (tx) => {
 *   await lockOwned(tx, "lead", id, ctx.credential.workspaceId);
 *   const lead = await tx.lead.findUniqueOrThrow({ where: { id } });
 *   if (lead.clientId) throw invalidState("…already converted…");
 *   …
 * });
 */
export async function lockOwned(
  tx: Tx,
  object: Lockable,
  id: string,
  workspaceId: string,
  param = "id",
): Promise<void> {
  if (!(await lockRow(tx, object, id, workspaceId))) throw notFound(object, id, param);
}

/**
 * Locks the workspace's row until the transaction ends: what serializes the checks that count
 * rows of a workspace against a cap (members, API keys, agents, trusted providers).
 */
export async function lockWorkspace(tx: Tx, workspaceId: string): Promise<void> {
  await tx.$queryRaw`select id from workspaces where id = ${workspaceId} for update`;
}
