import type { Queue, Worker } from "bullmq";
import type { WebhookServices } from "../../schema/context.ts";
import { EVENT_RETENTION_DAYS } from "../../schema/events.ts";
import { validationFailed } from "../../schema/lib/errors.ts";
import type { Database } from "../db/open.ts";
import { describeError, log } from "../observability/log.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import { redisNamespace } from "../runtime/redis.ts";
import { createSender } from "./attempt.ts";
import type { SecretBox } from "./secrets.ts";
import { HOST_DELIVERY_SLOTS, PROCESS_DELIVERY_SLOTS, WORKSPACE_DELIVERY_SLOTS } from "./slots.ts";
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  claim,
  complete,
  type DueDelivery,
  deleteExpiredEvents,
  fanOut,
} from "./store.ts";
import { checkWebhookTarget, type LookupAll, parseWebhookUrl, UrlNotAllowedError } from "./url-policy.ts";

const QUEUE_NAME = "webhook-deliveries";
/** With a queue: how often a process claims without being woken (a lost job, a crashed process's lapsed lease). */
const SWEEP_MS = 5_000;
const RETENTION_EVERY_MS = 3_600_000;
/** How often the outbox (and, without a queue, the due deliveries) is looked at when nothing wakes the worker. */
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

/** Fan-out deliveries per wake-up job: a large fan-out wakes several workers (of several processes). */
const JOB_SIZE = 100;

/**
 * BullMQ as the schedule of deliveries: a job wakes a worker, of whichever process takes it, when
 * deliveries become due (a fan-out batch now, one retry delayed until it is due). The worker then
 * claims from the database like every claim, fairly and within the caps (store.ts `claim`): which
 * deliveries go first is the claim's decision, never the queue's order.
 */
class DeliveryQueue {
  private readonly queue: Queue;
  private readonly worker: Worker;

  constructor(bullmq: typeof import("bullmq"), config: Config, namespace: string, woken: () => void) {
    const { Queue, Worker } = bullmq;
    const connection = { url: config.redisUrl!, maxRetriesPerRequest: null };
    // `kontor:{<id>}:bull`: every key of the queue shares the deployment's hash tag, so BullMQ's
    // scripts over several of them stay in one Redis Cluster slot.
    const prefix = `${namespace}bull`;
    this.queue = new Queue(QUEUE_NAME, { connection, prefix });
    this.worker = new Worker(QUEUE_NAME, async () => woken(), {
      connection,
      prefix,
      concurrency: 4,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    });
    this.worker.on("error", (error) => log("error", "webhook queue worker error", describeError(error)));
  }

  /** Wake-ups for due deliveries; a job id per (delivery, attempt) makes enqueueing one attempt twice a no-op. */
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
      jobs.push({
        name: "deliver",
        data: { ids: chunk.map((d) => d.id) },
        opts: { jobId: `${chunk[0]!.id}-${chunk[0]!.attempts}-${chunk.length}` },
      });
    }
    for (const delivery of due.filter((d) => delayOf(d) > 0)) {
      jobs.push({
        name: "deliver",
        data: { ids: [delivery.id] },
        opts: { jobId: `${delivery.id}-${delivery.attempts}`, delay: delayOf(delivery) },
      });
    }
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map((job) => ({ ...job, opts: { ...job.opts, removeOnComplete: true, removeOnFail: true } })),
    );
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
  }
}

/**
 * The delivery worker of one process (docs/api/webhooks.md). It fans committed outbox events out to
 * deliveries and sends the due ones, claimed from the database (store.ts `claim`): fairly between
 * workspaces, within the per-host and per-workspace caps (slots.ts), and under a lease that keeps
 * two processes from sending one delivery at the same time. Without Redis it claims on every poll;
 * with Redis, when a queue job, a commit or a finished attempt wakes it, and every SWEEP_MS.
 */
export async function startWebhooks(
  config: Config,
  db: Database,
  box: SecretBox,
  options: WebhookRuntimeOptions = {},
): Promise<WebhookRuntime> {
  const prisma = db.prisma;
  const production = config.env === "production";
  const policy = { production, lookup: options.lookup };
  // Longer than any attempt (send + record), so a live sender never loses its delivery.
  const leaseMs = 2 * config.webhooks.timeoutMs + 5_000;
  const send = createSender({
    config: config.webhooks,
    baseUrl: baseUrl(config),
    production,
    box,
    lookup: options.lookup,
  });

  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  /** Something may have become claimable here: claim on the next cycle even with a queue. */
  let claimSoon = true;
  /** Events may be waiting in the outbox (a commit, a poll); a finished attempt alone does not look. */
  let fanOutSoon = true;
  let lastClaim = 0;
  const inflight = new Set<Promise<void>>();

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await send(delivery);
    const recorded = await complete(prisma, delivery, outcome);
    options.onAttempt?.(recorded ? outcome.status : "lease_lost", outcome.durationMs);
    if (!recorded)
      log("warn", "webhook delivery lease lost before its attempt was recorded", {
        delivery_id: delivery.id,
      });
    else if (outcome.status === "retrying" && queue) {
      const nextAttemptAt = new Date(Date.now() + (outcome.retryInMs ?? 0));
      await queue.add([{ id: delivery.id, attempts: delivery.attempts, nextAttemptAt }]);
    }
  }

  /** Runs `attempt` without holding up the caller; `close` waits for it. Its end frees a slot (and its host's and workspace's). */
  function start(delivery: ClaimedDelivery): void {
    const task = attempt(delivery)
      .catch((error) =>
        log("error", "webhook delivery attempt failed to run", {
          ...describeError(error),
          delivery_id: delivery.id,
        }),
      )
      .finally(() => {
        inflight.delete(task);
        wake("claim");
      });
    inflight.add(task);
  }

  // BullMQ is imported only with Redis: the embedded default never loads it.
  const queue = config.redisUrl
    ? new DeliveryQueue(await import("bullmq"), config, redisNamespace(db.deploymentId), () => wake("claim"))
    : undefined;

  async function cycle(): Promise<void> {
    if (fanOutSoon) {
      fanOutSoon = false;
      const { events, deliveries } = await fanOut(prisma);
      if (deliveries.length > 0) claimSoon = true;
      if (queue) await queue.add(deliveries);
      // More may be waiting: look again after this cycle's claim. One batch at a time, so a
      // workspace writing without pause never holds back everyone's deliveries behind its fan-out.
      if (events > 0) fanOutSoon = again = true;
    }
    if (queue && !claimSoon && Date.now() - lastClaim < SWEEP_MS) return;
    const room = PROCESS_DELIVERY_SLOTS - inflight.size;
    if (room <= 0) return;
    claimSoon = false;
    lastClaim = Date.now();
    const caps = { hostSlots: HOST_DELIVERY_SLOTS, workspaceSlots: WORKSPACE_DELIVERY_SLOTS };
    for (const delivery of await claim(prisma, { limit: room, leaseMs, ...caps })) start(delivery);
  }

  const run = () => {
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
  };
  // A wake-up (a commit, a job, a finished attempt) means something may be claimable now; a commit
  // may also have left events in the outbox.
  const wake = (what: "all" | "claim" = "all") => {
    claimSoon = true;
    if (what === "all") fanOutSoon = true;
    setImmediate(run);
  };
  const poll = setInterval(() => {
    fanOutSoon = true;
    run();
  }, POLL_MS);
  const retention = setInterval(() => {
    deleteExpiredEvents(prisma, EVENT_RETENTION_DAYS)
      .then(
        (deleted) =>
          deleted > 0 &&
          log("info", "events past retention deleted", { deleted, retention_days: EVENT_RETENTION_DAYS }),
      )
      .catch((error) => log("error", "event retention failed", describeError(error)));
  }, RETENTION_EVERY_MS);
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
    // Outside a request: a request's GraphQL context has its own, which waits for the request's end (server/app.ts).
    wake: () => wake(),
  };

  return {
    services,
    wake: () => wake(),
    async close() {
      closed = true;
      clearInterval(poll);
      clearInterval(retention);
      await running;
      await Promise.allSettled([...inflight]);
      await queue?.close();
    },
  };
}
