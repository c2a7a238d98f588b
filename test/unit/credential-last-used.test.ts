import { afterEach, describe, expect, it, vi } from "vitest";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { AGENT_TOKEN_PREFIX, AgentTokenResolver } from "../../server/auth/agent-tokens.ts";
import { ApiKeyResolver, generateApiKey, randomBase62 } from "../../server/auth/api-keys.ts";
import { LAST_USED_INTERVAL_MS } from "../../server/auth/last-used.ts";
import { RevocationBus } from "../../server/auth/revocations.ts";

const logged = vi.hoisted(() => [] as { level: string; message: string; fields: Record<string, unknown> }[]);
vi.mock("../../server/observability/log.ts", () => ({
  log: (level: string, message: string, fields: Record<string, unknown> = {}) =>
    void logged.push({ level, message, fields }),
  describeError: (error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }),
}));

/**
 * The credential caches against a stub database and a fake clock: a rotated key's grace ends on
 * time even while cached, and `last_used_at` is written at most once a minute per credential,
 * after the lookup, never failing it.
 */

const flush = () => new Promise((resolve) => setImmediate(resolve));

function keyDb(row: { revokedAt: Date | null }, write: () => Promise<unknown> = async () => ({ count: 1 })) {
  const calls = { lookups: 0, writes: [] as unknown[] };
  const db = {
    apiKey: {
      findUnique: async () => {
        calls.lookups++;
        return {
          id: "key_1",
          workspaceId: "ws_1",
          scopes: ["leads.read"],
          revokedAt: row.revokedAt,
          workspace: { plan: "pro" },
        };
      },
      updateMany: async (args: unknown) => {
        calls.writes.push(args);
        return write();
      },
    },
  };
  return { db: db as unknown as PrismaClient, calls };
}

/** A bus of one process without Redis (the embedded database's): its caches always serve. */
const localBus = () => RevocationBus.open(undefined, "kontor:{test}:", { shared: false });

afterEach(() => {
  vi.useRealTimers();
});

describe("ApiKeyResolver", () => {
  it("lets a key in its grace period work until revoked_at, even from the cache", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const now = Date.now();
    const { db, calls } = keyDb({ revokedAt: new Date(now + 2_000) });
    const resolver = new ApiKeyResolver(db, await localBus(), 60_000);
    const key = generateApiKey();
    expect(await resolver.resolve(key)).toMatchObject({
      kind: "api_key",
      id: "key_1",
      expiresAt: now + 2_000,
    });
    vi.setSystemTime(now + 1_999);
    expect(await resolver.resolve(key)).not.toBeNull();
    vi.setSystemTime(now + 2_000);
    expect(await resolver.resolve(key)).toBeNull();
    expect(calls.lookups).toBe(1);
  });

  it("refuses a key revoked now or earlier", async () => {
    const { db } = keyDb({ revokedAt: new Date() });
    expect(await new ApiKeyResolver(db, await localBus()).resolve(generateApiKey())).toBeNull();
  });

  it("writes last_used_at at most once a minute per key, only for rows older than that", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { db, calls } = keyDb({ revokedAt: null });
    const resolver = new ApiKeyResolver(db, await localBus());
    const key = generateApiKey();
    for (let i = 0; i < 5; i++) await resolver.resolve(key);
    await flush();
    expect(calls.writes).toHaveLength(1);
    const since = new Date(Date.now() - LAST_USED_INTERVAL_MS);
    expect(calls.writes[0]).toEqual({
      where: { id: "key_1", OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: since } }] },
      data: { lastUsedAt: new Date(Date.now()) },
    });
    vi.setSystemTime(Date.now() + LAST_USED_INTERVAL_MS - 1);
    await resolver.resolve(key);
    await flush();
    expect(calls.writes).toHaveLength(1);
    vi.setSystemTime(Date.now() + 1);
    await resolver.resolve(key);
    await flush();
    expect(calls.writes).toHaveLength(2);
  });

  it("a failing write is logged, never thrown: the key still resolves", async () => {
    const { db, calls } = keyDb({ revokedAt: null }, async () => {
      throw new Error("database gone");
    });
    expect(await new ApiKeyResolver(db, await localBus()).resolve(generateApiKey())).not.toBeNull();
    await flush();
    await flush();
    expect(calls.writes).toHaveLength(1);
    expect(logged).toEqual([
      {
        level: "warn",
        message: "could not record when an API key was last used",
        fields: { id: "key_1", error: "database gone" },
      },
    ]);
  });
});

describe("AgentTokenResolver", () => {
  it("stamps the registration's last_used_at at most once a minute", async () => {
    const writes: unknown[] = [];
    const db = {
      agentToken: {
        findUnique: async () => ({
          id: "agt_1",
          scopes: ["leads.read"],
          expiresAt: new Date(Date.now() + 3_600_000),
          revokedAt: null,
          workspaceId: "ws_1",
          registration: { id: "areg_1", status: "active", revokedAt: null },
          workspace: { plan: "pro", agentAuthEnabled: true },
        }),
      },
      agentRegistration: {
        updateMany: async (args: unknown) => {
          writes.push(args);
          return { count: 1 };
        },
      },
    } as unknown as PrismaClient;
    const resolver = new AgentTokenResolver(db, await localBus());
    const token = `${AGENT_TOKEN_PREFIX}${randomBase62(43)}`;
    for (let i = 0; i < 3; i++)
      expect(await resolver.resolve(token)).toMatchObject({ kind: "agent", id: "areg_1" });
    await flush();
    expect(writes).toEqual([
      {
        where: { id: "areg_1", OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: expect.any(Date) } }] },
        data: { lastUsedAt: expect.any(Date) },
      },
    ]);
  });
});
