import type { Plugin } from "graphql-yoga";
import { describeError, log } from "../observability/log.ts";

/** The first run waits a little after start, so a process that starts does its own work first. */
const FIRST_RUN_DELAY_MS = 60_000;

/**
 * Runs a clean-up every `intervalMs` in every process while the app lives (the first run after
 * `firstDelayMs`, a minute unless said, or the interval if shorter; started at init, awaited on dispose). A failure is logged under `what`, never
 * thrown: the next run tries again. Sweeps must be safe to run in several processes at once.
 *
 * @example
 * useSweep("audit sweep", 3_600_000, async () => {
 *   const count = await sweepExpiredAuditEvents(db);
 *   if (count > 0) log("info", "expired audit records deleted", { count });
 * })
 */
export function useSweep(
  what: string,
  intervalMs: number,
  run: () => Promise<unknown>,
  firstDelayMs = FIRST_RUN_DELAY_MS,
): Plugin {
  const timers: NodeJS.Timeout[] = [];
  let running: Promise<unknown> = Promise.resolve();
  const sweep = () => {
    running = run().catch((error: unknown) => log("error", `${what} failed`, describeError(error)));
  };
  return {
    onYogaInit() {
      timers.push(
        setTimeout(sweep, Math.min(firstDelayMs, intervalMs)).unref(),
        setInterval(sweep, intervalMs).unref(),
      );
    },
    async onDispose() {
      for (const timer of timers) clearTimeout(timer);
      await running;
    },
  };
}
