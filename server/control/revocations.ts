import type { Revocations, RevokedKind } from "../../schema/context.ts";
import { RevocationBus } from "../auth/revocations.ts";
import { openRedis, redisNamespace } from "../runtime/redis.ts";

/**
 * A CLI run's way to tell the deployment's servers of a revocation: through Redis when REDIS_URL
 * is set, connecting only when a command revokes something. Without Redis nothing needs telling:
 * servers on PostgreSQL without Redis cache no credential, and the embedded database's server runs
 * the command itself (its control socket) whenever it is up.
 */
export class CliRevocations implements Revocations {
  private bus: Promise<RevocationBus> | undefined;

  constructor(
    private readonly redisUrl: string | undefined,
    private readonly deploymentId: string,
  ) {}

  async revoked(kind: RevokedKind, ids: readonly string[]): Promise<void> {
    if (!this.redisUrl || ids.length === 0) return;
    this.bus ??= openRedis(this.redisUrl).then((redis) =>
      RevocationBus.publisher(redis!, redisNamespace(this.deploymentId)),
    );
    await (await this.bus).revoked(kind, ids);
  }

  async close(): Promise<void> {
    const bus = await this.bus?.catch(() => undefined);
    await bus?.close();
  }
}
