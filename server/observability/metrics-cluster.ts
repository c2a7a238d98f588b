import cluster from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";

/**
 * Cluster mode (KONTOR_WORKERS ≥ 2): every worker shares one port, so a scrape lands on any one of
 * them. To make the answer the whole server's, a worker that is scraped asks the primary, which
 * collects every worker's registries (prom-client's AggregatorRegistry, over the cluster's IPC) and
 * sums them: counters and histograms add up, gauges follow each metric's `aggregator`.
 *
 * Kept apart from metrics.ts so the primary loads nothing but prom-client.
 */

/** Set in the primary's environment, inherited by the workers it forks: they then ask it. */
const AGGREGATED_ENV = "KONTOR_METRICS_AGGREGATED";
const ASK = "kontor:metrics-ask";
const ANSWER = "kontor:metrics-answer";
/** prom-client's own timeout in the primary is 5 s; a worker waits a little longer for its answer. */
const ASK_TIMEOUT_MS = 6_000;

interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/**
 * In the cluster primary, before it forks: serves the workers' requests for the aggregated
 * metrics. Without this call each worker answers with its own metrics.
 */
export function aggregateWorkerMetrics(): void {
  if (!cluster.isPrimary) throw new Error("aggregateWorkerMetrics() belongs in the cluster primary.");
  if (process.env[AGGREGATED_ENV] === "1") return;
  process.env[AGGREGATED_ENV] = "1";
  const aggregator = new AggregatorRegistry();
  cluster.on("message", (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== ASK || typeof message.id !== "number") return;
    const id = message.id;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: ANSWER, id, text } satisfies Answer),
      (error: Error) =>
        worker.isConnected() && worker.send({ type: ANSWER, id, error: error.message } satisfies Answer),
    );
  });
}

/** True in a worker whose primary aggregates (see aggregateWorkerMetrics). */
export const aggregatedByPrimary = () =>
  cluster.isWorker && process.env[AGGREGATED_ENV] === "1" && typeof process.send === "function";

let shared = false;
const waiting = new Map<number, { resolve(text: string): void; reject(error: Error): void }>();
let next = 0;

/**
 * In a worker: the registries the primary collects from this process (prom-client answers the
 * primary's requests for them). Called once per process; a worker runs one server.
 */
export function shareWithPrimary(registries: Registry[]): void {
  // Constructing an AggregatorRegistry in a worker installs prom-client's answering listener.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries(registries);
  if (shared) return;
  shared = true;
  process.on("message", (message: Answer) => {
    if (message?.type !== ANSWER) return;
    const pending = waiting.get(message.id);
    if (!pending) return;
    waiting.delete(message.id);
    if (message.text !== undefined) pending.resolve(message.text);
    else pending.reject(new Error(message.error ?? "no metrics from the primary"));
  });
}

/** The whole cluster's metrics, aggregated by the primary. */
export function askPrimary(): Promise<string> {
  const id = next++;
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`the cluster primary did not answer within ${ASK_TIMEOUT_MS} ms`));
    }, ASK_TIMEOUT_MS);
    timer.unref();
    waiting.set(id, {
      resolve: (text) => {
        clearTimeout(timer);
        resolve(text);
      },
      reject: (error) => {
        clearTimeout(timer);
        reject(error);
      },
    });
    process.send!({ type: ASK, id });
  });
}
