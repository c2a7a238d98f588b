import type { WebhookConfig } from "../runtime/config.ts";
import type { SecretBox } from "./secrets.ts";
import { postWebhook, type SendResult } from "./send.ts";
import { signedHeaders } from "./signature.ts";
import type { AttemptOutcome, ClaimedDelivery } from "./store.ts";
import type { LookupAll } from "./url-policy.ts";

/**
 * The largest body a delivery carries in full, in bytes. A larger event is sent thin: receivers
 * and their proxies often refuse big bodies (a 413 on every retry), and every attempt would move
 * the whole snapshot again.
 */
export const WEBHOOK_BODY_BUDGET_BYTES = 256 * 1024;

type EnvelopeSource = Pick<
  ClaimedDelivery,
  "eventId" | "eventType" | "eventCreatedAt" | "workspaceId" | "eventData"
>;

/**
 * docs/api/webhooks.md: the body of every delivery. Above WEBHOOK_BODY_BUDGET_BYTES it is the thin
 * form: `data.object` keeps only `object` and `id`, and `event_url` (`{base_url}/events/{id}`)
 * returns the full snapshot.
 */
export function envelope(delivery: EnvelopeSource, baseUrl: string): string {
  const resource = (
    typeof delivery.eventData === "string" ? JSON.parse(delivery.eventData) : delivery.eventData
  ) as Record<string, unknown>;
  const head = {
    id: delivery.eventId,
    object: "event",
    type: delivery.eventType,
    created_at: new Date(delivery.eventCreatedAt).toISOString(),
    workspace_id: delivery.workspaceId,
  };
  const full = JSON.stringify({ ...head, data: { object: resource } });
  if (Buffer.byteLength(full) <= WEBHOOK_BODY_BUDGET_BYTES) return full;
  return JSON.stringify({
    ...head,
    data: { object: { object: resource.object, id: resource.id } },
    thin: true,
    event_url: `${baseUrl}/events/${encodeURIComponent(delivery.eventId)}`,
  });
}

/** The wait before retry number `attempt` (1-based), spread by ± jitter; undefined when none is left. */
export function retryDelay(
  config: WebhookConfig,
  attempt: number,
  random: () => number = Math.random,
): number | undefined {
  const base = config.retryScheduleMs[attempt - 1];
  if (base === undefined) return undefined;
  return Math.max(0, Math.round(base * (1 + config.jitter * (2 * random() - 1))));
}

/** What a send result means for the delivery after its `attempts`-th attempt. */
export function outcomeOf(config: WebhookConfig, attempts: number, result: SendResult): AttemptOutcome {
  const recorded = {
    responseStatus: result.status,
    responseBody: result.body,
    lastError: result.ok ? null : result.error,
    durationMs: result.durationMs,
  };
  if (result.ok) return { status: "succeeded", ...recorded };
  if (result.status === 410) return { status: "failed", gone: true, ...recorded };
  const retryInMs = retryDelay(config, attempts);
  return retryInMs === undefined
    ? { status: "failed", ...recorded }
    : { status: "retrying", retryInMs, ...recorded };
}

/** Decrypted secrets by sealed value: rotation changes the sealed value, so stale entries are never used. */
class SecretCache {
  private readonly entries = new Map<string, string>();
  constructor(private readonly box: SecretBox) {}

  get(sealed: string): string {
    let secret = this.entries.get(sealed);
    if (secret === undefined) {
      if (this.entries.size >= 1000) this.entries.clear();
      secret = this.box.open(sealed);
      this.entries.set(sealed, secret);
    }
    return secret;
  }
}

export interface AttemptOptions {
  config: WebhookConfig;
  /** `{base_url}`, for the `event_url` of thin events. */
  baseUrl: string;
  production: boolean;
  box: SecretBox;
  lookup?: LookupAll;
}

/** Sends one claimed delivery: signs the envelope with the endpoint's current secret and posts it. */
export function createSender(options: AttemptOptions) {
  const secrets = new SecretCache(options.box);
  return async (delivery: ClaimedDelivery): Promise<AttemptOutcome> => {
    const body = envelope(delivery, options.baseUrl);
    const headers = signedHeaders({
      secret: secrets.get(delivery.secretSealed),
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      deliveryId: delivery.id,
      body,
    });
    const result = await postWebhook(
      delivery.url,
      body,
      { ...headers },
      {
        timeoutMs: options.config.timeoutMs,
        production: options.production,
        lookup: options.lookup,
      },
    );
    return outcomeOf(options.config, delivery.attempts, result);
  };
}
