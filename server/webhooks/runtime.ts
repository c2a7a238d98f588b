import { AsyncResource } from "node:async_hooks";
import { Queue, Worker } from "bullmq";
import type { WebhookServices } from "../../schema/context.ts";
import { validationFailed } from "../../schema/lib/errors.ts";
import { EVENT_RETENTION_DAYS } from "../../schema/events.ts";
import type { Config } from "../config.ts";
import type { Database } from "../db/open.ts";
import { describeError, log } from "../log.ts";
import { redisNamespace } from "../redis.ts";
import { requestState } from "../request-state.ts";
import { createSender } from "./attempt.ts";
import { SecretBox, serverSecret } from "./secrets.ts";
import { claim, complete, deleteExpiredEvents, fanOut, overdue, type ClaimedDelivery, type DueDelivery } from "./store.ts";
import { checkWebhookTarget, parseWebhookUrl, UrlNotAllowedError, type LookupAll } from "./url-policy.ts";

const QUEUE_NAME = "webhook-deliveries";
/** Deliveries sent at once by one process. */
const CONCURRENCY = 64;
/** With a queue: a due delivery no job has taken for this long is enqueued again. */
const OVERDUE_GRACE_MS = 2_000;
const RETENTION_EVERY_MS = 3_600_000;

export interface WebhookRuntimeOptions {
  /** Resolves target hostnames (default: the system resolver). */
  lookup?: LookupAll;
  /** How often the outbox and the due deliveries are looked at when nothing wakes the worker. */
  pollMs?: number;
}

export interface WebhookRuntime {
  services: WebhookServices;
  /** Look at the outbox and the due deliveries now. */
  wake(): void;
  close(): Promise<void>;
}

/** BullMQ as the schedule of deliveries: a job per due attempt, delayed until it is due. */
class DeliveryQueue {
  private readonly queue: Queue;
  private readonly worker: Worker;

  constructor(config: Config, leaseMs: number, process: (id: string) => Promise<void>) {
    const connection = { url: config.redisUrl!, maxRetriesPerRequest: null };
    const prefix = `${redisNamespace(config)}bull`;
    this.queue = new Queue(QUEUE_NAME, { connection, prefix });
    this.worker = new Worker(QUEUE_NAME, async (job) => process((job.data as { id: string }).id), {
      connection,
      prefix,
      concurrency: CONCURRENCY,
      // The database lease decides who may send; BullMQ only has to bring the job back after a crash.
      lockDuration: leaseMs,
      stalledInterval: leaseMs,
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    });
    this.worker.on("error", (error) => log("error", "webhook queue worker error", describeError(error)));
  }

  /** One job per due attempt; its id makes enqueueing the same attempt twice a no-op. */
  async add(deliveries: DueDelivery[]): Promise<void> {
    const due = deliveries.filter((delivery) => delivery.nextAttemptAt !== null);
    if (due.length === 0) return;
    const now = Date.now();
    await this.queue.addBulk(
      due.map((delivery) => ({
        name: "deliver",
        data: { id: delivery.id },
        opts: {
          jobId: `${delivery.id}-${delivery.attempts}`,
          delay: Math.max(0, new Date(delivery.nextAttemptAt!).getTime() - now),
          removeOnComplete: true,
          removeOnFail: true,
        },
      })),
    );
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
  }
}

/**
 * The delivery worker of one process (decisions.md §6). It fans committed outbox events out to
 * deliveries and sends the due ones: with Redis through BullMQ, without by polling the database.
 * Either way the database lease in `claim` is what keeps two processes from sending one delivery
 * at the same time.
 */
export function startWebhooks(config: Config, db: Database, options: WebhookRuntimeOptions = {}): WebhookRuntime {
  const prisma = db.prisma;
  const box = new SecretBox(serverSecret(config));
  const production = config.env === "production";
  const policy = { production, lookup: options.lookup };
  const pollMs = options.pollMs ?? 500;
  // Longer than any attempt (send + record), so a live sender never loses its delivery.
  const leaseMs = 2 * config.webhooks.timeoutMs + 5_000;
  const send = createSender({ config: config.webhooks, production, box, lookup: options.lookup });

  let closed = false;
  let running: Promise<void> | undefined;
  let again = false;
  let sweepSoon = false;
  let lastSweep = 0;
  const inflight = new Set<Promise<void>>();

  async function attempt(delivery: ClaimedDelivery): Promise<void> {
    const outcome = await send(delivery);
    const recorded = await complete(prisma, delivery, outcome);
    if (!recorded) log("warn", "webhook delivery lease lost before its attempt was recorded", { delivery_id: delivery.id });
    else if (outcome.status === "retrying" && queue) {
      const nextAttemptAt = new Date(Date.now() + (outcome.retryInMs ?? 0));
      await queue.add([{ id: delivery.id, attempts: delivery.attempts, nextAttemptAt }]);
    }
  }

  /** Runs `attempt` without holding up the caller; `close` waits for it. */
  function start(delivery: ClaimedDelivery): Promise<void> {
    const task = attempt(delivery)
      .catch((error) => log("error", "webhook delivery attempt failed to run", { ...describeError(error), delivery_id: delivery.id }))
      .finally(() => inflight.delete(task));
    inflight.add(task);
    return task;
  }

  const queue = config.redisUrl
    ? new DeliveryQueue(config, leaseMs, async (id) => {
        const [delivery] = await claim(prisma, { ids: [id], limit: 1, leaseMs });
        if (delivery) await start(delivery);
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
    const room = CONCURRENCY - inflight.size;
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
  const poll = setInterval(run, pollMs);
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
      clearInterval(poll);
      clearInterval(retention);
      await running;
      await Promise.allSettled([...inflight]);
      await queue?.close();
    },
  };
}
