import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";

/**
 * The reservation ledger (docs/api/storage.md): `workspaces.storage_reserved_bytes` is the sum of the
 * workspace's `storage_reservations` rows, and `storage_bytes + storage_reserved_bytes` never passes
 * the quota. A row and the counter change together in one transaction, which locks an existing
 * reservation row before the workspace row (every statement here keeps that order: no deadlock).
 */

/**
 * Far from the quota an upload reserves ahead of its bytes in steps of this size, so a big upload
 * costs one small transaction per MiB, not one per chunk.
 */
export const RESERVE_STEP_BYTES = 1024 * 1024;
/**
 * Within this many bytes of the quota, exactly the bytes that arrived are reserved: near the quota
 * no upload holds room for bytes it has not received (each holds at most a step ahead elsewhere).
 */
export const EXACT_ZONE_BYTES = 64 * RESERVE_STEP_BYTES;

/** A lease in whole milliseconds; expiries are `now() + lease` by the database's clock, the same for every process. */
const expiry = (leaseMs: number) => Math.max(1, Math.round(leaseMs));

/** What the workspace's quota still leaves (negative when it is over, after a plan change). */
export interface Room {
  used: number;
  reserved: number;
  left: number;
}

async function lockedRoom(tx: Prisma.TransactionClient, workspaceId: string, quota: number): Promise<Room> {
  const rows = await tx.$queryRaw<{ used: bigint; reserved: bigint }[]>`
    select storage_bytes as used, storage_reserved_bytes as reserved from workspaces where id = ${workspaceId} for update`;
  const row = rows[0];
  if (!row) return { used: 0, reserved: 0, left: -1 };
  const used = Number(row.used);
  const reserved = Number(row.reserved);
  return { used, reserved, left: quota - used - reserved };
}

async function addReserved(tx: Prisma.TransactionClient, workspaceId: string, bytes: number): Promise<void> {
  await tx.$executeRaw`update workspaces set storage_reserved_bytes = storage_reserved_bytes + ${BigInt(bytes)} where id = ${workspaceId}`;
}

/**
 * Opens the reservation `id` with `bytes` reserved, if the quota has room for them: `{ refused }`
 * (nothing written) when it has not, else the room that was left before it. `streamed`: no length
 * was declared, so it grows as the bytes arrive (and may be preempted by an older upload).
 */
export async function openReservation(
  db: PrismaClient,
  r: {
    id: string;
    workspaceId: string;
    owner: string;
    bytes: number;
    streamed: boolean;
    quota: number;
    leaseMs: number;
  },
): Promise<Room | { refused: Room }> {
  return db.$transaction(async (tx) => {
    const room = await lockedRoom(tx, r.workspaceId, r.quota);
    if (r.bytes > room.left || room.left < 0) return { refused: room };
    await tx.$executeRaw`
      insert into storage_reservations (id, workspace_id, bytes, streamed, owner, expires_at)
      values (${r.id}, ${r.workspaceId}, ${BigInt(r.bytes)}, ${r.streamed}, ${r.owner},
              now() + ${expiry(r.leaseMs)}::int * interval '1 millisecond')`;
    if (r.bytes > 0) await addReserved(tx, r.workspaceId, r.bytes);
    return room;
  });
}

export type Growth =
  /** Reserved: the bytes added (`need`, plus a step ahead when the quota is far). */
  | { granted: number }
  /** No room for `need`: `shortfall` bytes are missing. */
  | { short: number; room: Room }
  /** An older upload needed the room this one holds. */
  | "preempted"
  /** The reservation is gone: a sweep took it after its lease ran out. */
  | "lost";

/** Reserves `need` more bytes for `id`, renewing its lease (see Growth). */
export async function growReservation(
  db: PrismaClient,
  r: { id: string; workspaceId: string; need: number; quota: number; leaseMs: number },
): Promise<Growth> {
  return db.$transaction(async (tx): Promise<Growth> => {
    const held = await tx.$queryRaw<{ preempted: boolean }[]>`
      update storage_reservations set expires_at = now() + ${expiry(r.leaseMs)}::int * interval '1 millisecond'
      where id = ${r.id} returning preempted`;
    if (!held[0]) return "lost";
    if (held[0].preempted) return "preempted";
    const room = await lockedRoom(tx, r.workspaceId, r.quota);
    if (r.need > room.left) return { short: r.need - Math.max(room.left, 0), room };
    const grant = room.left - r.need >= EXACT_ZONE_BYTES ? r.need + RESERVE_STEP_BYTES : r.need;
    await tx.$executeRaw`update storage_reservations set bytes = bytes + ${BigInt(grant)} where id = ${r.id}`;
    await addReserved(tx, r.workspaceId, grant);
    return { granted: grant };
  });
}

/**
 * Near the quota, older uploads go first: asks the youngest streamed uploads of the workspace that
 * started after `id` (ids are time-ordered) to give way, until what they hold covers `shortfall`.
 * Answers their ids, or null, asking none, when all of them together hold too little. Each stops
 * (403) at its next reservation, or at once when it runs in the asking process, and releases its
 * room; one that has all its bytes already may still finish. Run outside any transaction holding
 * the workspace row (the victims lock their own row first).
 */
export async function preemptYounger(
  db: PrismaClient,
  r: { id: string; workspaceId: string; shortfall: number },
): Promise<string[] | null> {
  const younger = await db.$queryRaw<{ id: string; bytes: bigint; preempted: boolean }[]>`
    select id, bytes, preempted from storage_reservations
    where workspace_id = ${r.workspaceId} and streamed and id collate "C" > ${r.id} and bytes > 0 order by id collate "C" desc`;
  let covered = 0;
  const victims: typeof younger = [];
  for (const victim of younger) {
    if (covered >= r.shortfall) break;
    covered += Number(victim.bytes);
    victims.push(victim);
  }
  if (covered < r.shortfall) return null;
  const asked = victims.filter((victim) => !victim.preempted).map((victim) => victim.id);
  if (asked.length > 0)
    await db.$executeRaw`update storage_reservations set preempted = true where id = any(${asked}::text[])`;
  return victims.map((victim) => victim.id);
}

/**
 * Inside the transaction recording the object: the reservation goes and `size` bytes become used,
 * if the quota takes them (it always does while the reservation covered them). False otherwise.
 */
export async function settleReservation(
  tx: Prisma.TransactionClient,
  r: { id: string; workspaceId: string; size: number; quota: number },
): Promise<boolean> {
  const gone = await tx.$queryRaw<
    { bytes: bigint }[]
  >`delete from storage_reservations where id = ${r.id} returning bytes`;
  const held = gone[0]?.bytes ?? 0n;
  const size = BigInt(r.size);
  const taken = await tx.$executeRaw`
    update workspaces set storage_bytes = storage_bytes + ${size}, storage_reserved_bytes = storage_reserved_bytes - ${held}
    where id = ${r.workspaceId} and storage_bytes + storage_reserved_bytes - ${held} + ${size} <= ${BigInt(r.quota)}`;
  return taken === 1;
}

/**
 * Gives back what reservation `id` holds; nothing when it is gone already, or, with `expiredOnly`
 * (the sweep), when its process renewed it meanwhile. Answers the bytes released, or null if none was.
 */
export async function releaseReservation(
  db: PrismaClient,
  id: string,
  { expiredOnly = false } = {},
): Promise<number | null> {
  const rows = await db.$queryRaw<{ bytes: bigint }[]>`
    with gone as (
      delete from storage_reservations where id = ${id} and (${!expiredOnly} or expires_at < now()) returning workspace_id, bytes
    )
    update workspaces w set storage_reserved_bytes = w.storage_reserved_bytes - gone.bytes
    from gone where w.id = gone.workspace_id returning gone.bytes`;
  return rows[0] ? Number(rows[0].bytes) : null;
}

/** Pushes the expiry of the reservations a process still holds `leaseMs` into the future. */
export async function renewReservations(db: PrismaClient, ids: string[], leaseMs: number): Promise<void> {
  if (ids.length === 0) return;
  await db.$executeRaw`
    update storage_reservations set expires_at = now() + ${expiry(leaseMs)}::int * interval '1 millisecond' where id = any(${ids}::text[])`;
}

export interface ExpiredReservation {
  id: string;
  workspaceId: string;
  owner: string;
  bytes: number;
}

/** Reservations whose process stopped renewing them (it crashed), oldest first, at most `limit`. */
export async function expiredReservations(db: PrismaClient, limit = 500): Promise<ExpiredReservation[]> {
  const rows = await db.$queryRaw<{ id: string; workspace_id: string; owner: string; bytes: bigint }[]>`
    select id, workspace_id, owner, bytes from storage_reservations where expires_at < now() order by expires_at limit ${limit}`;
  return rows.map((row) => ({
    id: row.id,
    workspaceId: row.workspace_id,
    owner: row.owner,
    bytes: Number(row.bytes),
  }));
}
