import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { Revocations, RevokedKind } from "../../schema/context.ts";
import { describeError, log } from "../observability/log.ts";
import type { CredentialCache } from "./credential-cache.ts";

export type { Revocations, RevokedKind } from "../../schema/context.ts";

/** How long a revocation's publish may hold up its answer when Redis does not take it. */
const PUBLISH_TIMEOUT_MS = 1_000;

interface Message {
  from: string;
  kind: RevokedKind;
  ids: string[];
}

/** A tag names what an entry depends on: `api_key:key_…`, `agent_registration:areg_…`, `workspace:ws_…`. */
export const tag = (kind: RevokedKind, id: string) => `${kind}:${id}`;

/**
 * Tells every credential cache of the deployment that credentials were revoked. The process that
 * revokes drops its own entries synchronously, before it answers; the others hear of it on a Redis
 * channel within milliseconds. A cache serves entries only while it can hear (without Redis there
 * is one process, so always); while the channel is down every lookup goes to the database, and
 * when it comes back each cache starts empty, since messages sent meanwhile were lost.
 *
 * @example
 * const bus = await RevocationBus.open(redis, "kontor:{dep}:");
 * const keys = new CredentialCache<Credential | null>(bus);
 * // after the revoking transaction committed, before answering:
 * await bus.revoked("api_key", ["key_01J…"]);
 */
export class RevocationBus implements Revocations {
  private readonly caches = new Set<CredentialCache<unknown>>();
  private readonly id = randomUUID();
  private subscriber: Redis | undefined;
  private hearing: boolean;

  private constructor(
    private readonly redis: Redis | undefined,
    private readonly channel: string,
    hearing: boolean,
    private readonly ownsRedis = false,
  ) {
    this.hearing = hearing;
  }

  /**
   * A server process's bus: on `redis` when given (subscribed before it returns). Without Redis the
   * caches serve entries only when `shared` is false (the embedded database: one process, which
   * runs the CLI's commands too); servers sharing a PostgreSQL database without Redis cannot hear
   * each other, so they look every credential up.
   */
  static async open(
    redis: Redis | undefined,
    namespace: string,
    { shared }: { shared: boolean },
  ): Promise<RevocationBus> {
    const bus = new RevocationBus(redis, `${namespace}revocations`, !redis && !shared);
    await bus.subscribe();
    return bus;
  }

  /** A bus that only publishes, on a connection it owns and closes (the CLI's). */
  static publisher(redis: Redis, namespace: string): RevocationBus {
    return new RevocationBus(redis, `${namespace}revocations`, false, true);
  }

  /** Whether a revocation on another process would reach this one now. */
  get listening(): boolean {
    return this.hearing;
  }

  register(cache: CredentialCache<unknown>): void {
    this.caches.add(cache);
  }

  async revoked(kind: RevokedKind, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    this.invalidate(kind, ids);
    if (!this.redis) return;
    const message: Message = { from: this.id, kind, ids: [...ids] };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.redis.publish(this.channel, JSON.stringify(message)),
        new Promise(
          (_, reject) =>
            (timer = setTimeout(
              () => reject(new Error("Redis did not take the message in time")),
              PUBLISH_TIMEOUT_MS,
            )),
        ),
      ]);
    } catch (error) {
      // The others stop serving cached entries when they lose Redis too; else their TTL bounds it.
      log("warn", "could not tell other processes of a revocation", { kind, ...describeError(error) });
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    this.subscriber?.disconnect();
    if (this.ownsRedis) await this.redis?.quit().catch(() => this.redis?.disconnect());
  }

  private invalidate(kind: RevokedKind, ids: readonly string[]): void {
    const tags = new Set(ids.map((id) => tag(kind, id)));
    for (const cache of this.caches) cache.invalidate(tags);
  }

  private async subscribe(): Promise<void> {
    if (!this.redis) return;
    const subscriber = this.redis.duplicate({
      autoResubscribe: false,
      enableAutoPipelining: false,
      lazyConnect: true,
    });
    this.subscriber = subscriber;
    const deaf = () => {
      this.hearing = false;
    };
    subscriber.on("close", deaf);
    subscriber.on("end", deaf);
    subscriber.on("error", deaf);
    subscriber.on("message", (channel: string, text: string) => {
      if (channel !== this.channel) return;
      const message = parse(text);
      if (message && message.from !== this.id) this.invalidate(message.kind, message.ids);
    });
    const listen = async () => {
      await subscriber.subscribe(this.channel);
      // Whatever was published while this process could not hear is lost: start again empty.
      for (const cache of this.caches) cache.clear();
      this.hearing = true;
    };
    subscriber.on("ready", () => {
      if (!this.hearing)
        listen().catch((error: unknown) =>
          log("warn", "could not subscribe to revocations", describeError(error)),
        );
    });
    await subscriber.connect();
    if (!this.hearing) await listen();
  }
}

const KINDS = new Set<RevokedKind>(["api_key", "agent_token", "agent_registration", "workspace"]);

function parse(text: string): Message | null {
  try {
    const value = JSON.parse(text) as Partial<Message>;
    if (typeof value.from !== "string" || !KINDS.has(value.kind as RevokedKind) || !Array.isArray(value.ids))
      return null;
    return {
      from: value.from,
      kind: value.kind as RevokedKind,
      ids: value.ids.filter((id): id is string => typeof id === "string"),
    };
  } catch {
    return null;
  }
}
