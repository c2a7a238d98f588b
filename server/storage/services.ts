import { Readable } from "node:stream";
import type { StorageServices } from "../../schema/context.ts";
import { PLAN_LIMITS, type PlanName } from "../../schema/lib/plans.ts";
import { quotaExceeded } from "../../schema/lib/storage.ts";
import type { StorageConfig } from "../config.ts";
import { describeError, log } from "../log.ts";
import { TooLargeError, type ByteSource, type ByteStore, type PutResult } from "./byte-store.ts";

/** The resolvers' view of the byte store, and the quota rule of the server's configuration. */
export class Storage implements StorageServices {
  constructor(
    readonly store: ByteStore,
    private readonly config: StorageConfig,
  ) {}

  quotaBytes(plan: PlanName): number {
    const planQuota = PLAN_LIMITS[plan].storage_bytes;
    return this.config.quotaCapBytes === undefined ? planQuota : Math.min(planQuota, this.config.quotaCapBytes);
  }

  /** Streams into the store; running past `maxBytes` is the quota's 403, with nothing left behind. */
  async put(
    key: string,
    bytes: ByteSource | Uint8Array,
    options: { maxBytes: number; quotaBytes: number; contentType: string; signal?: AbortSignal },
  ): Promise<PutResult> {
    const source = bytes instanceof Uint8Array ? Readable.from([bytes]) : bytes;
    try {
      return await this.store.put(key, source, { maxBytes: Math.max(options.maxBytes, 0), contentType: options.contentType, signal: options.signal });
    } catch (error) {
      if (error instanceof TooLargeError) throw quotaExceeded(options.maxBytes, options.quotaBytes);
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
