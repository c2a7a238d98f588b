import { AsyncResource } from "node:async_hooks";
import { Queue, Worker } from "bullmq";
import type { WebhookServices } from "../../schema/context.ts";
import { validationFailed } from "../../schema/lib/errors.ts";
import { EVENT_RETENTION_DAYS } from "../../schema/events.ts";
import { baseUrl, type Config } from "../config.ts";
import type { Database } from "../db/open.ts";
import { describeError, log } from "../log.ts";
import { redisNamespace } from "../redis.ts";
import { requestState } from "../request-state.ts";
import { createSender } from "./attempt.ts";
import type { SecretBox } from "./secrets.ts";
import { claim, complete, deleteExpiredEvents, fanOut, overdue, type AttemptOutcome, type ClaimedDelivery, type DueDelivery } from "./store.ts";
import { checkWebhookTarget, parseWebhookUrl, UrlNotAllowedError, type LookupAll } from "./url-policy.ts";

const QUEUE_NAME = "webhook-deliveries";
/** Deliveries in flight at once in one process. */
const CONCURRENCY = 128;
/** With a queue: a due delivery no job has taken for this long is enqueued again. */
const OVERDUE_GRACE_MS = 5_000;
const RETENTION_EVERY_MS = 3_600_000;
/** How often the outbox and the due deliveries are looked at when nothing wakes the worker. */
const POLL_MS = 500;

export interface WebhookRuntimeOptions {
  /** Resolves target hostnames (default: the system resolver). */
  lookup?: LookupAll;
  /** Told of every attempt this process made and what it came to (`lease_lost`: not recorded), for metrics. */
  onAttempt?: (outcome: AttemptOutcome["status"] | "lease_lost", durationMs: number) => void;
}

export interface WebhookRuntime {
  services: WebhookServices;
  /** Look at the outbox and the due deliveries now. */
  wake(): void;
  close(): Promise<void>;
}

/** Deliveries per queue job: one claim query takes them all. */
const JOB_SIZE = 100;

/**
 * BullMQ as the schedule of deliveries: a job names the deliveries that become due at one time
 * (a fan-out batch, or one retry, delayed until it is due). The worker claims them in the
 * database and starts sending; the lease, not the job, guards each delivery from then on.
 */
class DeliveryQueue {
  private readonly queue: Queue;
  private readonly worker: Worker;

  constructor(config: Config, namespace: string, process: (ids: string[]) => Promise<void>) {
    const connection = { url: config.redisUrl!, maxRetriesPerRequest: null };
    // `kontor:{<id>}:bull`: every key of the queue shares the deployment's hash tag, so BullMQ's
    // scripts over several of them stay in one Redis Cluster slot.
    const prefix = `${namespace}bull`;
    this.queue = new Queue(QUEUE_NAME, { connection, prefix });
    this.worker = new Worker(QUEUE_NAME, async (job) => process((job.data as { ids: string[] }).ids), {
      connection,
      prefix,
      concurrency: 4,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    });
    this.worker.on("error", (error) => log("error", "webhook queue worker error", describeError(error)));
  }

  /** Jobs for due deliveries; a job id per (delivery, attempt) makes enqueueing one attempt twice a no-op. */
  async add(deliveries: DueDelivery[]): Promise<void> {
    const now = Date.now();
    // Due now (or within a few ms of clock difference): no delay, so the job skips the delayed set.
    const delayOf = (delivery: DueDelivery) => {
      const ms = new Date(delivery.nextAttemptAt!).getTime() - now;
      return ms > 50 ? ms : 0;
    };
    const due = deliveries.filter((delivery) => delivery.nextAttemptAt !== null);
    const immediate = due.filter((delivery) => delayOf(delivery) === 0);
    const jobs = [];
    for (let i = 0; i < immediate.length; i += JOB_SIZE) {
      const chunk = immediate.slice(i, i + JOB_SIZE);
      jobs.push({ name: "deliver", data: { ids: chunk.map((d) => d.id) }, opts: { jobId: `${chunk[0]!.id}-${chunk[0]!.attempts}-${chunk.length}` } });
    }
    for (const delivery of due.filter((d) => delayOf(d) > 0)) {
      jobs.push({ name: "deliver", data: { ids: [delivery.id] }, opts: { jobId: `${delivery.id}-${delivery.attempts}`, delay: delayOf(delivery) } });
    }
    if (jobs.length === 0) return;
    await this.queue.addBulk(jobs.map((job) => ({ ...job, opts: { ...job.opts, removeOnComplete: true, removeOnFail: true } })));
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
  }
}

/**
 * The delivery worker of one process (README "Webhooks"). It fans committed outbox events out to
 * deliveries and sends the due ones: with Redis through BullMQ, without by polling the database.
 * Either way the database lease in `claim` is what keeps two processes from sending one delivery
 * at the same time.
 */
export function startWebhooks(config: Config, db: Database, box: SecretBox, options: WebhookRuntimeOptions = {}): WebhookRuntime {
  const prisma = db.prisma;
  const production = config.env === "production";
  const policy = { production, lookup: options.lookup };
  // Longer than any attempt (send + record), so a live sender never loses its delivery.
  const leaseMs = 2 * config.webhooks.timeoutMs + 5_000;
  const send = createSender({ config: config.webhooks, baseUrl: baseUrl(config), production, box, lookup: options.lookup });

  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  let sweepSoon = false;
  let lastSweep = 0;
  const inflight = new Set<Promise<void>>();

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await send(delivery);
    const recorded = await complete(prisma, delivery, outcome);
    options.onAttempt?.(recorded ? outcome.status : "lease_lost", outcome.durationMs);
    if (!recorded) log("warn", "webhook delivery lease lost before its attempt was recorded", { delivery_id: delivery.id });
    else if (outcome.status === "retrying" && queue) {
      const nextAttemptAt = new Date(Date.now() + (outcome.retryInMs ?? 0));
      await queue.add([{ id: delivery.id, attempts: delivery.attempts, nextAttemptAt }]);
    }
  }

  /** Callers of `reserve()` waiting for a free slot, woken one per finished attempt. */
  const waiting: (() => void)[] = [];

  /** Runs `attempt` without holding up the caller; `close` waits for it. */
  function start(delivery: ClaimedDelivery): Promise<void> {
    const task = attempt(delivery)
      .catch((error) => log("error", "webhook delivery attempt failed to run", { ...describeError(error), delivery_id: delivery.id }))
      .finally(() => {
        inflight.delete(task);
        waiting.shift()?.();
      });
    inflight.add(task);
    return task;
  }

  /** Slots taken by claims still on their way back from the database. */
  let reserved = 0;
  const free = () => CONCURRENCY - inflight.size - reserved;

  /** Waits for free slots and reserves up to `wanted` of them; `release` gives back the unused ones. */
  async function reserve(wanted: number): Promise<number> {
    while (free() <= 0 && !closed) await new Promise<void>((resolve) => waiting.push(resolve));
    const taken = Math.max(0, Math.min(wanted, free()));
    reserved += taken;
    return taken;
  }
  const release = (count: number) => {
    reserved -= count;
    for (let i = 0; i < count; i++) waiting.shift()?.();
  };

  const queue = config.redisUrl
    ? new DeliveryQueue(config, redisNamespace(db.deploymentId), async (ids) => {
        for (let i = 0; i < ids.length && !closed; ) {
          const slots = await reserve(ids.length - i);
          if (slots === 0) break;
          const take = ids.slice(i, i + slots);
          i += take.length;
          let unused = slots;
          try {
            for (const delivery of await claim(prisma, { ids: take, limit: take.length, leaseMs })) {
              unused--;
              reserved--;
              void start(delivery);
            }
          } finally {
            // Ids another process took, or that are no longer due, give their slots back.
            release(unused);
          }
        }
      })
    : undefined;

  async function cycle(): Promise<void> {
    for (;;) {
      const { events, deliveries } = await fanOut(prisma);
      if (queue) await queue.add(deliveries);
      if (events === 0) break;
    }
    if (queue) {
      // Deliveries made due outside the fan-out (replay, test, resume) or orphaned by a crash.
      if (sweepSoon || Date.now() - lastSweep >= OVERDUE_GRACE_MS) {
        const grace = sweepSoon ? 0 : OVERDUE_GRACE_MS;
        sweepSoon = false;
        lastSweep = Date.now();
        await queue.add(await overdue(prisma, grace, 1_000));
      }
      return;
    }
    const room = free();
    if (room <= 0) return;
    const claimed = await claim(prisma, { limit: room, leaseMs });
    for (const delivery of claimed) void start(delivery).then(() => wake());
  }

  // Timers and wake-ups run outside the request that caused them.
  const run = AsyncResource.bind(() => {
    if (closed) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await cycle();
        } catch (error) {
          log("error", "webhook dispatch failed", describeError(error));
          return;
        }
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
    });
  });
  const wake = () => setImmediate(run);
  const poll = setInterval(run, POLL_MS);
  const retention = setInterval(
    AsyncResource.bind(() => {
      deleteExpiredEvents(prisma, EVENT_RETENTION_DAYS)
        .then((deleted) => deleted > 0 && log("info", "events past retention deleted", { deleted, retention_days: EVENT_RETENTION_DAYS }))
        .catch((error) => log("error", "event retention failed", describeError(error)));
    }),
    RETENTION_EVERY_MS,
  );
  for (const timer of [poll, retention]) timer.unref();
  wake();

  const services: WebhookServices = {
    seal: (secret) => box.seal(secret),
    async checkUrl(raw) {
      try {
        const url = parseWebhookUrl(raw.trim(), policy);
        await checkWebhookTarget(url, policy);
        return raw.trim();
      } catch (error) {
        if (error instanceof UrlNotAllowedError) throw validationFailed("url", error.message);
        throw error;
      }
    },
    wake(what) {
      if (what === "deliveries") sweepSoon = true;
      const state = requestState();
      // Inside a request the write has not committed yet: the request's end wakes the worker.
      if (state) state.wakeWebhooks = true;
      else wake();
    },
  };

  return {
    services,
    wake,
    async close() {
      closed = true;
      for (const resolve of waiting.splice(0)) resolve();
      clearInterval(poll);
      clearInterval(retention);
      await running;
      await Promise.allSettled([...inflight]);
      await queue?.close();
    },
  };
}
