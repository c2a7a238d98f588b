import { Readable } from "node:stream";
import type { Redis } from "ioredis";
import type { Context, StorageServices } from "../../schema/context.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { quotaExceeded, type UploadTicket } from "../../schema/lib/storage.ts";
import { describeError, log } from "../observability/log.ts";
import type { StorageConfig } from "../runtime/config.ts";
import { type ByteSource, type ByteStore, type PutResult, TooLargeError } from "./byte-store.ts";
import { MemorySlots, RedisSlots, SharedSlots } from "./upload-slots.ts";
import { Uploads } from "./uploads.ts";

/**
 * Yields `source` unchanged, reserving each chunk's bytes before the store sees them (README
 * "Storage"): what is written never passes what is reserved. Stops at once, even while waiting
 * for the client's next bytes, when an older upload preempts this one. Returns at once, so that a
 * Readable's 'error' has a listener before any await (see metered()).
 */
function reserving(source: ByteSource, upload: UploadTicket): AsyncGenerator<Uint8Array | string> {
  if (source instanceof Readable) source.on("error", () => {});
  return (async function* () {
    const chunks = (source as AsyncIterable<Uint8Array | string>)[Symbol.asyncIterator]();
    let done = false;
    try {
      let total = 0;
      for (;;) {
        const next = await nextUnlessStopped(chunks, upload.signal);
        if (next.done) {
          done = true;
          return;
        }
        total += typeof next.value === "string" ? Buffer.byteLength(next.value) : next.value.byteLength;
        await upload.cover(total);
        yield next.value;
      }
    } finally {
      // Not awaited: a source still waiting for its client finishes when the connection closes.
      if (!done) chunks.return?.().catch(() => {});
    }
  })();
}

/**
 * The next chunk, or the signal's reason once it is aborted. The listener goes with each chunk:
 * one kept on a long-lived promise (Promise.race) would keep every chunk of the upload reachable.
 */
function nextUnlessStopped<T>(chunks: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T>> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const stop = () => reject(signal.reason);
    signal.addEventListener("abort", stop, { once: true });
    chunks.next().then(
      (next) => {
        signal.removeEventListener("abort", stop);
        resolve(next);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/** The resolvers' view of the byte store, the quota rule of the server's configuration, and the uploads under way. */
export class Storage implements StorageServices {
  readonly uploads: Uploads;

  constructor(
    readonly store: ByteStore,
    private readonly config: StorageConfig,
  ) {
    this.uploads = new Uploads(new MemorySlots(), config.uploadLeaseMs);
  }

  /** With Redis, upload slots are counted across every process of the deployment. */
  shareSlots(redis: Redis, namespace: string): void {
    this.uploads.slots = new SharedSlots(new RedisSlots(redis, namespace, this.config.uploadLeaseMs));
  }

  quotaBytes(plan: PlanName): number {
    const planQuota = PLAN_LIMITS[plan].storage_bytes;
    return this.config.quotaCapBytes === undefined
      ? planQuota
      : Math.min(planQuota, this.config.quotaCapBytes);
  }

  beginUpload(ctx: Context, expectedBytes: number | null): Promise<UploadTicket> {
    return this.uploads.begin(ctx, this.quotaBytes(ctx.credential.plan), {
      bytes: expectedBytes ?? 0,
      streamed: expectedBytes === null,
    });
  }

  /** Streams into the store under the upload's key; running past the quota is its 403, with nothing left behind. */
  async put(
    upload: UploadTicket,
    bytes: ByteSource | Uint8Array,
    options: { contentType: string; signal?: AbortSignal },
  ): Promise<PutResult> {
    const source = bytes instanceof Uint8Array ? Readable.from([bytes]) : bytes;
    try {
      return await this.store.put(upload.key, reserving(source, upload), {
        maxBytes: Math.max(upload.maxBytes, 0),
        contentType: options.contentType,
        signal: options.signal,
      });
    } catch (error) {
      if (error instanceof TooLargeError) throw quotaExceeded(upload.maxBytes, upload.quotaBytes);
      throw error;
    }
  }

  async discard(key: string): Promise<void> {
    try {
      await this.store.delete(key);
    } catch (error) {
      log("warn", "could not delete stored bytes; the sweep will", { key, ...describeError(error) });
    }
  }
}
