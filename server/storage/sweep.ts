import type { Plugin } from "graphql-yoga";
import { decodeTime } from "ulid";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { log } from "../log.ts";
import { useSweep } from "../plugins/sweep.ts";
import type { ByteStore } from "./byte-store.ts";

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
    const referenced = await db.storedObject.findMany({ where: { storeKey: { in: old } }, select: { storeKey: true } });
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
  useSweep("storage sweep", SWEEP_INTERVAL_MS, async () => {
    const { deleted } = await sweepUnreferencedBytes(db, store);
    if (deleted > 0) log("info", "unreferenced stored bytes deleted", { count: deleted });
  }, FIRST_SWEEP_DELAY_MS);
