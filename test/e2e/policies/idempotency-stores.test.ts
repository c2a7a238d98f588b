/** The idempotency stores (in-process and Redis) and two server processes sharing one; over a running server: idempotency.test.ts. */
import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { CLAIM_TTL_MS, IDEMPOTENCY_TTL_MS } from "../../../server/policies/idempotency.ts";
import {
  type IdempotencyStore,
  MemoryIdempotencyStore,
  RedisIdempotencyStore,
} from "../../../server/policies/idempotency-store.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { expectError } from "../../support/invoicing.ts";
import { provisionStack } from "../../support/server.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";
import { idempotentPost, isReplay, newKey } from "./support.ts";

/** A record key of workspace `ws` (or another). */
const k = (key: string, workspaceId = "ws") => ({ workspaceId, key });
/** No per-workspace bound: the test is about another one. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

describe("idempotency in-process store", () => {
  it("holds at most its byte cap, dropping the oldest finished records first and never a running claim", async () => {
    const cap = 40_000;
    const store = new MemoryIdempotencyStore(Date.now, cap);
    const response = { status: 201, headers: [] as [string, string][], body: "x".repeat(5_000) };
    expect(await store.claim(k("running"), { fingerprint: "f", owner: "r" }, CLAIM_TTL_MS)).toBeNull();
    for (let i = 0; i < 50; i++) {
      const key = k(String(i));
      expect(await store.claim(key, { fingerprint: "f", owner: `o${i}` }, CLAIM_TTL_MS)).toBeNull();
      await store.complete(
        key,
        { fingerprint: "f", owner: `o${i}`, response },
        IDEMPOTENCY_TTL_MS,
        UNBOUNDED,
      );
      expect(store.size).toBeLessThanOrEqual(cap);
    }
    // The newest are kept, the oldest were dropped (a retry of those runs again), the running claim stays.
    expect(await store.claim(k("49"), { fingerprint: "f", owner: "late" }, CLAIM_TTL_MS)).toMatchObject({
      owner: "o49",
      response,
    });
    expect(await store.claim(k("0"), { fingerprint: "f", owner: "late" }, CLAIM_TTL_MS)).toBeNull();
    expect(await store.claim(k("running"), { fingerprint: "f", owner: "other" }, CLAIM_TTL_MS)).toMatchObject(
      { owner: "r" },
    );
  });

  it("keeps a finished key 24 hours and an abandoned claim only for the claim TTL", async () => {
    let now = 1_000_000;
    const store = new MemoryIdempotencyStore(() => now);
    expect(await store.claim(k("a"), { fingerprint: "f", owner: "1" }, CLAIM_TTL_MS)).toBeNull();
    const response = { status: 201, headers: [], body: "" };
    await store.complete(k("a"), { fingerprint: "f", owner: "1", response }, IDEMPOTENCY_TTL_MS, UNBOUNDED);
    now += IDEMPOTENCY_TTL_MS - 1;
    expect(await store.claim(k("a"), { fingerprint: "f", owner: "2" }, CLAIM_TTL_MS)).toMatchObject({
      owner: "1",
      response,
    });
    now += 1;
    expect(await store.claim(k("a"), { fingerprint: "f", owner: "2" }, CLAIM_TTL_MS)).toBeNull();

    // Owner 2 "died": its claim lapses, and its late completion cannot overwrite owner 3's claim.
    now += CLAIM_TTL_MS;
    expect(await store.claim(k("a"), { fingerprint: "f", owner: "3" }, CLAIM_TTL_MS)).toBeNull();
    await store.complete(k("a"), { fingerprint: "f", owner: "2", response }, IDEMPOTENCY_TTL_MS, UNBOUNDED);
    await store.release(k("a"), "2");
    expect(await store.claim(k("a"), { fingerprint: "f", owner: "4" }, CLAIM_TTL_MS)).toMatchObject({
      owner: "3",
    });
  });
});

type OpenStore = (now: () => number) => { store: IdempotencyStore; close(): Promise<void> };

/** A Redis store in a namespace of its own, emptied afterwards. */
const openRedisStore: OpenStore = (now) => {
  const redis = new Redis(REDIS_URL);
  const namespace = `kontor:{test-${randomUUID()}}:`;
  return {
    store: new RedisIdempotencyStore(redis, namespace, IDEMPOTENCY_TTL_MS, now),
    close: async () => {
      const keys = await redis.keys(`${namespace}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
};

/** Each store with a clock the test moves; Redis's on the PostgreSQL + Redis stack. */
const STORES: [name: string, open: OpenStore][] = [
  ["in-process", (now) => ({ store: new MemoryIdempotencyStore(now), close: async () => {} })],
  ...(stacks().includes("postgres") ? [["Redis", openRedisStore] as [string, OpenStore]] : []),
];

describe.each(STORES)("idempotency records per workspace (%s store)", (_name, open) => {
  let now = 1_000_000;
  const { store, close } = open(() => now);
  afterAll(close);
  const response = { status: 201, headers: [] as [string, string][], body: "x".repeat(4_000) };
  const finish = async (key: { workspaceId: string; key: string }, bound: number) => {
    // Records finished in the same millisecond may go in either order: these finish apart.
    now += 10;
    expect(await store.claim(key, { fingerprint: "f", owner: key.key }, CLAIM_TTL_MS)).toBeNull();
    await store.complete(key, { fingerprint: "f", owner: key.key, response }, IDEMPOTENCY_TTL_MS, bound);
  };

  it("holds a workspace's records within its bound, dropping its oldest, never another's or a running claim", async () => {
    const bound = 20_000;
    await finish(k("b-1", "wsB"), bound);
    expect(await store.claim(k("running", "wsA"), { fingerprint: "f", owner: "r" }, CLAIM_TTL_MS)).toBeNull();
    for (let i = 0; i < 30; i++) {
      await finish(k(`a-${i}`, "wsA"), bound);
      expect(await store.workspaceBytes("wsA")).toBeLessThanOrEqual(bound);
    }
    const held = await store.workspaceBytes("wsA");
    // About four records of ~4 KB each fit: the bound is used, not just respected.
    expect(held).toBeGreaterThan(bound - 5_000);
    expect(
      await store.claim(k("a-29", "wsA"), { fingerprint: "f", owner: "late" }, CLAIM_TTL_MS),
    ).toMatchObject({ owner: "a-29" });
    expect(await store.claim(k("a-0", "wsA"), { fingerprint: "f", owner: "late" }, CLAIM_TTL_MS)).toBeNull();
    expect(
      await store.claim(k("running", "wsA"), { fingerprint: "f", owner: "other" }, CLAIM_TTL_MS),
    ).toMatchObject({ owner: "r" });
    expect(
      await store.claim(k("b-1", "wsB"), { fingerprint: "f", owner: "late" }, CLAIM_TTL_MS),
    ).toMatchObject({ owner: "b-1" });
    expect(await store.workspaceBytes("wsB")).toBeGreaterThan(4_000);
  });

  it("stops counting records once they expire", async () => {
    await finish(k("c-1", "wsC"), Number.MAX_SAFE_INTEGER);
    expect(await store.workspaceBytes("wsC")).toBeGreaterThan(4_000);
    now += IDEMPOTENCY_TTL_MS + 60_000;
    expect(await store.workspaceBytes("wsC")).toBe(0);
  });
});

describe.runIf(stacks().includes("postgres"))("idempotency store's Redis scripts [postgres]", () => {
  it("calls them by digest, and sends them again to a Redis that has forgotten them", async () => {
    const { store, close } = openRedisStore(Date.now);
    const monitor = await new Redis(REDIS_URL).monitor();
    const commands: string[] = [];
    // Only this store's commands: its keys name a test workspace of their own.
    const workspaceId = `ws-${randomUUID()}`;
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      // Not what the scripts call themselves (source "lua"): what the store sent.
      if (source !== "lua" && args.some((arg) => arg.includes(workspaceId)))
        commands.push(args[0]!.toLowerCase());
    });
    try {
      const finish = async (key: string) => {
        expect(
          await store.claim(k(key, workspaceId), { fingerprint: "f", owner: key }, CLAIM_TTL_MS),
        ).toBeNull();
        const response = { status: 201, headers: [] as [string, string][], body: key };
        await store.complete(
          k(key, workspaceId),
          { fingerprint: "f", owner: key, response },
          IDEMPOTENCY_TTL_MS,
          UNBOUNDED,
        );
      };
      await finish("first");
      await finish("second");
      // A restarted Redis knows no script: the next call finds out and sends the text once more.
      await new Redis(REDIS_URL).script("FLUSH").then((ok) => expect(ok).toBe("OK"));
      await finish("third");
      expect(await store.workspaceBytes(workspaceId)).toBeGreaterThan(0);
      // The text goes with a script's first call on the connection (EVAL), its digest after (EVALSHA);
      // a digest Redis no longer knows is answered NOSCRIPT, and the call is made again with the text.
      await expect
        .poll(() => commands)
        .toEqual(["set", "eval", "set", "evalsha", "set", "evalsha", "eval", "eval"]);
    } finally {
      monitor.disconnect();
      await close();
    }
  });
});

describe.runIf(stacks().includes("postgres"))("idempotency across two server processes [postgres]", () => {
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  const servers: RunningServer[] = [];

  beforeAll(async () => {
    scratch = await provisionStack("postgres");
    const env = { ...scratch.env, PORT: "0" };
    servers.push(await startServer(loadConfig(env), { publicUrlFromPort: true }));
    servers.push(await startServer(loadConfig(env), { publicUrlFromPort: true }));
  });

  afterAll(async () => {
    for (const running of servers) await running.close();
    await scratch?.drop();
  });

  it("replays on one process a key used on the other, and sees its claim", async () => {
    const [one, two] = servers as [RunningServer, RunningServer];
    const ws = await createWorkspace(one.db.prisma, {
      name: "Cross",
      plan: "pro",
      ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    const { key: apiKey } = await createApiKey(one.db.prisma, {
      workspaceId: ws.workspace_id,
      scopes: ["leads.read", "leads.write"],
    });
    const key = newKey();

    const first = await idempotentPost(`${one.url}/v1`, apiKey, "/leads", { first_name: "Twin" }, key);
    expect(first.status).toBe(201);
    const again = await idempotentPost(`${two.url}/v1`, apiKey, "/leads", { first_name: "Twin" }, key);
    expect(again.status).toBe(201);
    expect(isReplay(again)).toBe(true);
    expect(again.body).toEqual(first.body);
    expectError(
      await idempotentPost(`${two.url}/v1`, apiKey, "/leads", { first_name: "Other" }, key),
      409,
      "idempotency_conflict",
    );
    expect(await two.db.prisma.lead.count({ where: { workspaceId: ws.workspace_id } })).toBe(1);

    const racing = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        idempotentPost(
          `${(i % 2 ? one : two).url}/v1`,
          apiKey,
          "/leads",
          { first_name: "Race" },
          `${key}-race`,
        ),
      ),
    );
    expect(racing.filter((res) => res.status === 201 && !isReplay(res))).toHaveLength(1);
    for (const res of racing.filter((res) => res.status !== 201))
      expectError(res, 409, "idempotency_in_progress");
    expect(await one.db.prisma.lead.count({ where: { workspaceId: ws.workspace_id } })).toBe(2);
  });
});
