import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Context } from "../../schema/context.ts";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import { internalError } from "../../schema/lib/errors.ts";
import { newId } from "../../schema/lib/ids.ts";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import { quotaExceeded, storeKey, type UploadTicket, uploadsBusy } from "../../schema/lib/storage.ts";
import { describeError, log } from "../observability/log.ts";
import {
  growReservation,
  openReservation,
  preemptYounger,
  releaseReservation,
  renewReservations,
  settleReservation,
} from "./reservations.ts";
import type { SlotStore } from "./upload-slots.ts";

/** How long an upload waits, near the quota, for younger streamed uploads to give way before it is refused. */
const PREEMPT_WAIT_MS = 5_000;

const preempted = (quota: number) =>
  quotaExceeded(0, quota, "an upload of the workspace that started earlier needed the room");

/**
 * The uploads this process runs (docs/api/storage.md and "Limits"): each holds one of its workspace's
 * upload slots and a reservation of bytes, both renewed here every third of the lease while it
 * runs, both given back when it ends. A process that dies leaves them to expire.
 */
export class Uploads {
  /** Names this process in its reservations, for whoever reads them after a crash. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly running = new Map<string, Ticket>();

  constructor(
    public slots: SlotStore,
    readonly leaseMs: number,
  ) {}

  /** Takes a slot (429 when all are taken), then reserves the expected bytes (403 when the quota has no room). */
  async begin(
    ctx: Context,
    quota: number,
    expected: { bytes: number; streamed: boolean },
  ): Promise<UploadTicket> {
    const { workspaceId, plan } = ctx.credential;
    const id = newId("storedObject");
    const limit = PLAN_LIMITS[plan].concurrent_uploads;
    if (!(await this.slots.take(workspaceId, id, limit))) throw uploadsBusy(limit);
    let opened;
    try {
      opened = await openReservation(ctx.db, {
        id,
        workspaceId,
        owner: this.owner,
        ...expected,
        quota,
        leaseMs: this.leaseMs,
      });
    } catch (error) {
      await this.slots.free(workspaceId, id).catch(() => {});
      throw error;
    }
    if ("refused" in opened) {
      await this.slots.free(workspaceId, id).catch(() => {});
      throw quotaExceeded(opened.refused.left, quota);
    }
    const ticket = new Ticket(this, ctx.db, {
      id,
      workspaceId,
      quota,
      maxBytes: opened.left,
      reserved: expected.bytes,
    });
    this.running.set(id, ticket);
    return ticket;
  }

  /** Renews the leases of every upload still running here. */
  async renew(db: PrismaClient): Promise<void> {
    const held = [...this.running.values()].map(({ workspaceId, id }) => ({ workspaceId, id }));
    if (held.length === 0) return;
    await Promise.all([
      renewReservations(
        db,
        held.map((upload) => upload.id),
        this.leaseMs,
      ),
      this.slots.renew(held),
    ]);
  }

  /** Stops at once the uploads of this process among `ids` (those elsewhere stop at their next reservation). */
  preempt(ids: readonly string[]): void {
    for (const id of ids) this.running.get(id)?.stop();
  }

  /** Gives back an upload's reservation (if any is left) and its slot; failures are logged, the leases then run out. */
  async finish(db: PrismaClient, id: string): Promise<void> {
    const upload = this.running.get(id);
    if (!upload) return;
    this.running.delete(id);
    try {
      await releaseReservation(db, id);
    } catch (error) {
      log("warn", "could not release an upload's reservation; the sweep will once its lease runs out", {
        upload: id,
        ...describeError(error),
      });
    }
    try {
      await this.slots.free(upload.workspaceId, id);
    } catch (error) {
      log("warn", "could not free an upload slot; its lease will run out", {
        upload: id,
        ...describeError(error),
      });
    }
  }
}

class Ticket implements UploadTicket {
  readonly id: string;
  readonly workspaceId: string;
  readonly key: string;
  readonly quotaBytes: number;
  readonly maxBytes: number;
  private reserved: number;
  private readonly preemption = new AbortController();

  constructor(
    private readonly uploads: Uploads,
    private readonly db: PrismaClient,
    opened: { id: string; workspaceId: string; quota: number; maxBytes: number; reserved: number },
  ) {
    this.id = opened.id;
    this.workspaceId = opened.workspaceId;
    this.key = storeKey(opened.workspaceId, opened.id);
    this.quotaBytes = opened.quota;
    this.maxBytes = opened.maxBytes;
    this.reserved = opened.reserved;
  }

  private get where() {
    return { id: this.id, workspaceId: this.workspaceId };
  }

  get signal(): AbortSignal {
    return this.preemption.signal;
  }

  stop(): void {
    this.preemption.abort(preempted(this.quotaBytes));
  }

  async cover(total: number): Promise<void> {
    const deadline = Date.now() + PREEMPT_WAIT_MS;
    let lastLook = false;
    for (let pause = 5; total > this.reserved; pause = Math.min(2 * pause, 200)) {
      this.preemption.signal.throwIfAborted();
      const need = total - this.reserved;
      const grown = await growReservation(this.db, {
        ...this.where,
        need,
        quota: this.quotaBytes,
        leaseMs: this.uploads.leaseMs,
      });
      if (grown === "lost") {
        log("error", "an upload's reservation expired while it ran (its lease was not renewed in time)", {
          upload: this.id,
        });
        throw internalError();
      }
      if (grown === "preempted") throw preempted(this.quotaBytes);
      if ("granted" in grown) {
        this.reserved += grown.granted;
        return;
      }
      // No room: younger streamed uploads give way to this one, if what they hold would do.
      const asked =
        Date.now() < deadline
          ? await preemptYounger(this.db, { ...this.where, shortfall: grown.short })
          : null;
      if (asked) {
        this.uploads.preempt(asked);
        await new Promise((resolve) => setTimeout(resolve, pause));
        continue;
      }
      // No one left to give way, but a younger upload may have released its room between the two
      // looks (it gave way to the last round): look at the room once more before refusing.
      // What this upload could have had in all: the room the others left, plus what it holds.
      if (lastLook) throw quotaExceeded(grown.room.left + this.reserved, this.quotaBytes);
      lastLook = true;
    }
  }

  settle(tx: Prisma.TransactionClient, size: number): Promise<boolean> {
    return settleReservation(tx, { ...this.where, size, quota: this.quotaBytes });
  }

  end(): Promise<void> {
    return this.uploads.finish(this.db, this.id);
  }
}
