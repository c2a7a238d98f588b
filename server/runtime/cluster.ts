import cluster, { type Worker } from "node:cluster";
import type { DemoSeed } from "../accounts/seed.ts";
import { log } from "../observability/log.ts";
import type { Config } from "./config.ts";
import { shutdownBoundMs } from "./drain.ts";

/**
 * Cluster mode (KONTOR_WORKERS ≥ 2): a primary forks the workers with node:cluster and they all
 * listen on PORT (the primary accepts and hands the connections round-robin). The primary opens
 * no database, Redis or socket of its own: it only starts, watches and stops the workers.
 *
 * What happens once, not per worker:
 * - migrations: every worker migrates on start, as one process does, under PostgreSQL's advisory
 *   lock (server/db/open.ts); the first applies them, the others find nothing left to do;
 * - the Demo workspace and the banner: once every worker serves, the primary asks worker 1 to seed
 *   (development only), then prints the banner, credentials included, itself, once;
 * - the CLI's control socket: the embedded database is the only one that opens it, and cluster
 *   mode requires PostgreSQL, so no process owns one: the CLI connects to PostgreSQL on its own.
 * What runs in every worker, because it is safe to: the webhook worker (fan-out takes events with
 * SKIP LOCKED and each delivery is claimed under a database lease), and the periodic sweeps
 * (expired events, request logs, sandboxes, agent records, unreferenced bytes), which delete
 * what has expired, so running them twice deletes nothing twice.
 *
 * Shutdown: SIGTERM or SIGINT to the primary goes on to every worker, which drains its requests
 * as a single process does (server/runtime/drain.ts) and exits. The primary restarts none of them, exits
 * once all have stopped, kills those still running STOP_MARGIN_MS past their own bound, and kills
 * all of them at once on a second signal.
 */

/** What a worker tells its primary over the IPC channel. */
export type WorkerMessage =
  | { kontor: "ready" }
  | { kontor: "seeded"; demo: DemoSeed | null }
  | { kontor: "failed"; message: string }
  /** A signal started the worker's drain: it exits once its requests are done. */
  | { kontor: "stopping" };

/** What the primary tells a worker. */
export type PrimaryMessage = { kontor: "seed" };

/** Set by the primary in each worker's environment: the worker's number (1…N), kept across restarts. */
const WORKER_ENV = "KONTOR_CLUSTER_WORKER";

/** A worker that dies is started again after this, doubled for each crash in a row, up to the cap. */
const RESTART_DELAY_MS = 500;
const RESTART_DELAY_CAP_MS = 30_000;
/** A worker that served this long before dying starts its back-off afresh. */
const STABLE_MS = 60_000;
/** A slot whose replacements die this many times in a row before serving makes the primary give up. */
const MAX_START_FAILURES = 5;
/**
 * Workers still running this long past their own bound (KONTOR_SHUTDOWN_TIMEOUT_MS for the drain,
 * then the closing steps': server/runtime/drain.ts) are killed.
 */
const STOP_MARGIN_MS = 5_000;

/** This process's number when it is a cluster worker, else undefined. */
export function workerNumber(): number | undefined {
  return cluster.isWorker ? Number(process.env[WORKER_ENV]) : undefined;
}

/** Sends `message` to the primary and resolves once it left (at once when there is no primary). */
export function tellPrimary(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

/** Calls `handler` for the primary's messages to this worker. */
export function onPrimaryMessage(handler: (message: PrimaryMessage) => void): void {
  process.on("message", (message: unknown) => {
    if ((message as PrimaryMessage | null)?.kontor === "seed") handler(message as PrimaryMessage);
  });
}

interface Slot {
  number: number;
  worker: Worker | undefined;
  ready: boolean;
  readyAt: number;
  /** Deaths in a row (reset once a worker served for STABLE_MS): the back-off's exponent. */
  crashes: number;
  /** Deaths in a row before serving. */
  startFailures: number;
  /** Why the current worker failed, as it said before exiting. */
  reason: string | undefined;
  /** The current worker said a signal started its drain. */
  stopping: boolean;
  restart: NodeJS.Timeout | undefined;
}

export interface PrimaryOptions {
  /** Called once, when every worker serves (and, in development, the Demo workspace exists). */
  onReady(demo: DemoSeed | null): void;
}

/** Runs the cluster primary until a signal stops it or the workers cannot start; then exits. */
export function runPrimary(config: Config, options: PrimaryOptions): void {
  let phase: "starting" | "seeding" | "running" | "stopping" = "starting";
  let exitCode = 0;
  const slots: Slot[] = Array.from({ length: config.workers }, (_, i) => ({
    number: i + 1,
    worker: undefined,
    ready: false,
    readyAt: 0,
    crashes: 0,
    startFailures: 0,
    reason: undefined,
    stopping: false,
    restart: undefined,
  }));

  const alive = () => slots.filter((slot) => slot.worker !== undefined);

  function fork(slot: Slot): void {
    const worker = cluster.fork({ [WORKER_ENV]: String(slot.number) });
    slot.worker = worker;
    slot.ready = false;
    slot.reason = undefined;
    slot.stopping = false;
    const pid = worker.process.pid;
    worker.on("message", (message: WorkerMessage) => {
      if (message?.kontor === "failed") slot.reason = message.message;
      else if (message?.kontor === "stopping") slot.stopping = true;
      else if (message?.kontor === "ready") {
        slot.ready = true;
        slot.readyAt = Date.now();
        slot.startFailures = 0;
        log("info", "worker ready", { worker: slot.number, pid });
        if (phase === "starting" && slots.every((s) => s.ready)) allReady();
      } else if (message?.kontor === "seeded" && phase === "seeding") {
        running(message.demo);
      }
    });
    // An IPC failure (a worker gone mid-send); its exit follows and is handled there.
    worker.on("error", (error) =>
      log("warn", "worker channel error", { worker: slot.number, pid, error: error.message }),
    );
    worker.on("exit", (code, signal) => {
      // Once disconnected, node:cluster hands it no more connections: only then is it reported gone.
      if (worker.isConnected()) worker.once("disconnect", () => exited(slot, worker, code, signal));
      else exited(slot, worker, code, signal);
    });
  }

  function allReady(): void {
    if (config.env !== "development") {
      running(null);
      return;
    }
    // Seeded by one worker, once all serve: a cluster that failed to start leaves no unseen credentials.
    phase = "seeding";
    slots[0]!.worker!.send({ kontor: "seed" } satisfies PrimaryMessage);
  }

  function running(demo: DemoSeed | null): void {
    phase = "running";
    options.onReady(demo);
  }

  function exited(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return;
    slot.worker = undefined;
    const wasReady = slot.ready;
    slot.ready = false;
    const pid = worker.process.pid;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    if (phase === "stopping") {
      const clean = code === 0 || signal === "SIGTERM" || signal === "SIGINT";
      if (!clean) exitCode = 1;
      log(clean ? "info" : "warn", "worker stopped", { worker: slot.number, pid, code, signal });
      if (alive().length === 0) process.exit(exitCode);
      return;
    }
    if (slot.stopping && code === 0 && phase === "running") {
      // Drained and stopped on a signal of its own (an operator's, or one sent to every process of
      // a group or cgroup just before the primary's own): replaced after the first back-off delay,
      // which the primary's own shutdown cancels, and not counted as a crash.
      log("info", "worker stopped: starting another", {
        worker: slot.number,
        pid,
        code,
        signal,
        restart_in_ms: RESTART_DELAY_MS,
      });
      slot.restart = setTimeout(() => {
        slot.restart = undefined;
        if (phase !== "stopping") fork(slot);
      }, RESTART_DELAY_MS);
      return;
    }
    const reason = slot.reason ?? `could not start: it ${how}`;
    // Until every worker has served once, a failure is the start's: stop as one process would.
    if (phase === "starting" || phase === "seeding") {
      giveUp(`worker ${slot.number}: ${reason}`);
      return;
    }
    if (!wasReady && ++slot.startFailures >= MAX_START_FAILURES) {
      giveUp(
        `worker ${slot.number} failed to start ${slot.startFailures} times in a row; the last time: ${reason}`,
      );
      return;
    }
    if (wasReady && Date.now() - slot.readyAt >= STABLE_MS) slot.crashes = 0;
    slot.crashes++;
    const delay = Math.min(RESTART_DELAY_CAP_MS, RESTART_DELAY_MS * 2 ** (slot.crashes - 1));
    log(wasReady ? "error" : "warn", "worker died: starting another", {
      worker: slot.number,
      pid,
      code,
      signal,
      ...(slot.reason && { reason: slot.reason }),
      restart_in_ms: delay,
    });
    slot.restart = setTimeout(() => {
      slot.restart = undefined;
      if (phase !== "stopping") fork(slot);
    }, delay);
  }

  function giveUp(message: string): void {
    console.error(`kontor: ${message}`);
    stop(1, undefined);
  }

  function stop(code: number, signal: string | undefined): void {
    if (phase === "stopping") {
      if (!signal) return;
      // A second signal: the operator will not wait for the drain.
      log("warn", "second signal: killing the workers without waiting for the requests in flight", {
        signal,
        workers: alive().length,
      });
      for (const slot of alive()) slot.worker!.process.kill("SIGKILL");
      process.exit(1);
    }
    phase = "stopping";
    exitCode = code;
    for (const slot of slots) clearTimeout(slot.restart);
    const timeoutMs = shutdownBoundMs(config) + STOP_MARGIN_MS;
    if (signal) log("info", "shutting down", { signal, workers: alive().length, timeout_ms: timeoutMs });
    if (alive().length === 0) process.exit(exitCode);
    // Each worker drains its requests, then closes its server and its database on SIGTERM, as a single process does.
    for (const slot of alive()) slot.worker!.process.kill("SIGTERM");
    setTimeout(() => {
      for (const slot of alive()) {
        log("warn", "worker did not stop in time: killing it", {
          worker: slot.number,
          pid: slot.worker!.process.pid,
          after_ms: timeoutMs,
        });
        slot.worker!.process.kill("SIGKILL");
      }
    }, timeoutMs).unref();
  }

  process.on("SIGINT", () => stop(0, "SIGINT"));
  process.on("SIGTERM", () => stop(0, "SIGTERM"));
  log("info", "starting workers", { workers: config.workers, pid: process.pid });
  for (const slot of slots) fork(slot);
}
