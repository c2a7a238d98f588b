import { describeError, log } from "../observability/log.ts";

/** How often a credential's `last_used_at` is written at most. */
export const LAST_USED_INTERVAL_MS = 60_000;

/**
 * Records when a credential was last used, at most once per interval per id: the write runs after
 * the current request's work is queued, is never awaited, and a failure is logged, not thrown.
 * `write` must itself skip rows written less than an interval ago, so that several processes
 * together still write at most once per interval.
 */
export class LastUsed {
  private readonly written = new Map<string, number>();

  constructor(
    private readonly what: string,
    private readonly write: (id: string, now: Date, since: Date) => Promise<unknown>,
    private readonly intervalMs = LAST_USED_INTERVAL_MS,
    private readonly maxEntries = 10_000,
  ) {}

  touch(id: string): void {
    const now = Date.now();
    const last = this.written.get(id);
    if (last !== undefined && now - last < this.intervalMs) return;
    if (this.written.size >= this.maxEntries) this.written.clear();
    this.written.set(id, now);
    setImmediate(() => {
      this.write(id, new Date(now), new Date(now - this.intervalMs)).catch((error: unknown) => {
        log("warn", `could not record when ${this.what} was last used`, { id, ...describeError(error) });
      });
    });
  }
}
