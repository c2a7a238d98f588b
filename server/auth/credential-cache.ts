import type { RevocationBus } from "./revocations.ts";

/** What a lookup found, and the tags whose revocation must drop it. */
export interface Loaded<T> {
  value: T;
  tags: string[];
}

/**
 * A short-lived cache of credential lookups that a RevocationBus empties by tag: the one cache of
 * every credential resolver (API keys, agent tokens). A lookup that raced a revocation (it read
 * the row before the revoking commit, and finished after the bus spoke) is answered but not kept,
 * so the cache never holds a credential revoked before it was stored.
 *
 * @example
 * const cache = new CredentialCache<Credential | null>(bus, 4_000);
 * const credential = await cache.get(hashApiKey(key), async () => {
 *   const row = await prisma.apiKey.findUnique({ where: { hash: hashApiKey(key) } });
 *   return { value: row && toCredential(row), tags: row ? [tag("api_key", row.id)] : [] };
 * });
 */
export class CredentialCache<T> {
  private readonly entries = new Map<string, { value: T; tags: string[]; expires: number }>();
  private generation = 0;

  constructor(
    private readonly bus: RevocationBus,
    /** The fallback bound when a revocation cannot be heard (Redis partitioned without a closed socket). */
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {
    bus.register(this as CredentialCache<unknown>);
  }

  async get(key: string, load: () => Promise<Loaded<T>>): Promise<T> {
    const now = Date.now();
    if (this.bus.listening) {
      const hit = this.entries.get(key);
      if (hit && hit.expires > now) return hit.value;
    }
    const generation = this.generation;
    const loaded = await load();
    if (generation === this.generation && this.bus.listening) {
      if (this.entries.size >= this.maxEntries) this.entries.clear();
      this.entries.set(key, { value: loaded.value, tags: loaded.tags, expires: now + this.ttlMs });
    }
    return loaded.value;
  }

  invalidate(tags: ReadonlySet<string>): void {
    this.generation++;
    for (const [key, entry] of this.entries)
      if (entry.tags.some((t) => tags.has(t))) this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
