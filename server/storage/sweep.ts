import type { Plugin } from "graphql-yoga";
import type { Redis } from "ioredis";
import { decodeTime } from "ulid";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { storeKey } from "../../schema/lib/storage.ts";
import { describeError, log } from "../observability/log.ts";
import { useSweep } from "../runtime/sweep.ts";
import type { ByteStore } from "./byte-store.ts";
import { expiredReservations, releaseReservation } from "./reservations.ts";
import type { Storage } from "./services.ts";

/**
 * How old bytes without a row must be before they go. An upload writes its bytes, then its row: no
 * request outlives the server's request timeout (1 h), so a day is far past any upload in flight.
 */
export const SWEEP_GRACE_MS = 24 * 60 * 60 * 1000;
const SWEEP_INTERVAL_MS = 6 * 60 * 60 * 1000;
const FIRST_SWEEP_DELAY_MS = 5 * 60 * 1000;

/** `ws_…/obj_…` as storeKey() makes it; the object id's ULID says when the upload began. */
const KEY = /^ws_[0-9a-z]{26}\/obj_([0-9a-z]{26})$/;

function startedAt(key: string): number | null {
  const ulid = KEY.exec(key)?.[1];
  if (!ulid) return null;
  try {
    return decodeTime(ulid.toUpperCase());
  } catch {
    return null;
  }
}

/**
 * Deletes bytes no object row refers to: left by a crash between a delete's commit and the bytes'
 * removal, by a failed removal, or by a deleted workspace. Keys Kontor did not make are left alone.
 */
export async function sweepUnreferencedBytes(
  db: PrismaClient,
  store: ByteStore,
  options: { graceMs?: number; now?: number } = {},
): Promise<{ checked: number; deleted: number }> {
  const cutoff = (options.now ?? Date.now()) - (options.graceMs ?? SWEEP_GRACE_MS);
  let cursor: string | null = null;
  let checked = 0;
  let deleted = 0;
  do {
    const page = await store.list("", { cursor, limit: 500 });
    cursor = page.cursor;
    const old = page.keys.filter((key) => {
      const time = startedAt(key);
      return time !== null && time < cutoff;
    });
    checked += page.keys.length;
    if (old.length === 0) continue;
    const referenced = await db.storedObject.findMany({
      where: { storeKey: { in: old } },
      select: { storeKey: true },
    });
    const kept = new Set(referenced.map((row) => row.storeKey));
    for (const key of old) {
      if (kept.has(key)) continue;
      await store.delete(key);
      deleted++;
    }
  } while (cursor !== null);
  return { checked, deleted };
}

/** Runs the sweep every 6 hours in every process (deleting twice is harmless). */
export const useBytesSweep = (db: PrismaClient, store: ByteStore): Plugin =>
  useSweep(
    "storage sweep",
    SWEEP_INTERVAL_MS,
    async () => {
      const { deleted } = await sweepUnreferencedBytes(db, store);
      if (deleted > 0) log("info", "unreferenced stored bytes deleted", { count: deleted });
    },
    FIRST_SWEEP_DELAY_MS,
  );

const RESERVATION_PAGE = 500;

/**
 * Releases the reservations of uploads whose process stopped renewing them (it was killed), and
 * removes the partial bytes such an upload left on the local disk (docs/api/storage.md). A reservation
 * renewed between the read and the release is kept. Safe in several processes at once.
 */
export async function sweepExpiredReservations(
  db: PrismaClient,
  store: ByteStore,
): Promise<{ released: number; bytes: number }> {
  let released = 0;
  let bytes = 0;
  for (;;) {
    const page = await expiredReservations(db, RESERVATION_PAGE);
    for (const reservation of page) {
      const freed = await releaseReservation(db, reservation.id, { expiredOnly: true });
      if (freed === null) continue;
      released++;
      bytes += freed;
      log("info", "an expired upload reservation was released", {
        upload: reservation.id,
        owner: reservation.owner,
        bytes: freed,
      });
      await store.abandon?.(storeKey(reservation.workspaceId, reservation.id)).catch((error: unknown) =>
        log("warn", "could not remove a crashed upload's partial bytes", {
          upload: reservation.id,
          ...describeError(error),
        }),
      );
    }
    if (page.length < RESERVATION_PAGE) return { released, bytes };
  }
}

/**
 * The upload slots and reservations of the process (docs/api/storage.md): shared across processes
 * through Redis when there is one; while the process lives it renews the leases of its uploads
 * every third of KONTOR_UPLOAD_LEASE_MS, and every lease it releases what dead processes left.
 */
export function useUploadLeases(
  db: PrismaClient,
  storage: Storage,
  redis: Redis | undefined,
  redisNamespace: string,
): Plugin[] {
  if (redis) storage.shareSlots(redis, redisNamespace);
  const { uploads, store } = storage;
  const renewEvery = Math.max(1, Math.floor(uploads.leaseMs / 3));
  return [
    useSweep("upload lease renewal", renewEvery, () => uploads.renew(db), renewEvery),
    useSweep(
      "upload reservation sweep",
      uploads.leaseMs,
      () => sweepExpiredReservations(db, store),
      uploads.leaseMs,
    ),
  ];
}
