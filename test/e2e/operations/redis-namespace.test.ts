import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { openDatabase } from "../../../server/db/open.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { redisNamespace } from "../../../server/runtime/redis.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { DashboardClient } from "../../support/dashboard-session.ts";
import { rest } from "../../support/http.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { provisionStack } from "../../support/server.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

/**
 * Another spelling of one database's URL, as a second machine or worker might have it: the other
 * scheme name, the default port left out, and connection parameters (none changes the database).
 */
function respell(url: string): string {
  const parsed = new URL(url);
  const scheme = parsed.protocol === "postgres:" ? "postgresql" : "postgres";
  const port = parsed.port === "" || parsed.port === "5432" ? "" : `:${parsed.port}`;
  const auth = parsed.username ? `${parsed.username}${parsed.password ? `:${parsed.password}` : ""}@` : "";
  const params = new URLSearchParams(parsed.search);
  params.set("application_name", "kontor-second-spelling");
  params.set("connect_timeout", "10");
  return `${scheme}://${auth}${parsed.hostname}${port}${parsed.pathname}?${params}`;
}

/** The Redis Cluster hash tag of a key: what lies between its first `{` and the next `}` (the whole key when there is none, or it is empty). */
function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open === -1) return key;
  const close = key.indexOf("}", open + 1);
  return close === -1 || close === open + 1 ? key : key.slice(open + 1, close);
}

async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for (let cursor = "0"; ; ) {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
    if (cursor === "0") return keys;
  }
}

/** An unauthenticated request: counted per client address; the remaining count it reports. */
async function remainingFor(server: RunningServer): Promise<number> {
  const res = await fetch(`${server.url.replace("//localhost:", "//127.0.0.1:")}/v1/workspace`);
  await res.arrayBuffer();
  expect(res.status).toBe(401);
  return Number(res.headers.get("x-ratelimit-remaining"));
}

async function freeKey(server: RunningServer): Promise<{ key: string; workspaceId: string }> {
  const workspace = await createWorkspace(server.db.prisma, {
    name: `Test ${randomBytes(3).toString("hex")}`,
    plan: "free",
    ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
    ownerPassword: "correct horse battery staple",
  });
  const { key } = await createApiKey(server.db.prisma, {
    workspaceId: workspace.workspace_id,
    scopes: [...SCOPES],
  });
  return { key, workspaceId: workspace.workspace_id };
}

describe("the deployment id", () => {
  for (const stack of stacks()) {
    // Four opens of one database (the first migrates it): PGlite takes a while for each.
    it(`is made by the migration, kept across opens, and made again if its row is deleted [${stack}]`, {
      timeout: 180_000,
    }, async () => {
      const scratch = await provisionStack(stack, { empty: true });
      try {
        const options = loadConfig({ ...scratch.env });
        let db = await openDatabase(options);
        const id = db.deploymentId;
        expect(id).toMatch(/^[0-9a-f]{16}$/);
        expect(redisNamespace(id)).toBe(`kontor:{${id}}:`);
        expect(await db.prisma.deployment.findMany({ select: { id: true } })).toEqual([{ id }]);
        // One row only.
        await expect(
          db.prisma.$executeRawUnsafe("insert into deployment (singleton, id) values (false, 'other')"),
        ).rejects.toThrow();
        await db.close();

        db = await openDatabase(options);
        expect(db.deploymentId).toBe(id);
        await db.prisma.deployment.deleteMany();
        await db.close();

        db = await openDatabase(options);
        expect(db.deploymentId).toMatch(/^[0-9a-f]{16}$/);
        expect(db.deploymentId).not.toBe(id);
        // An id that cannot stand in a hash tag stops the start with the reason.
        await db.prisma.deployment.updateMany({ data: { id: "not{ok}" } });
        await db.close();
        await expect(openDatabase(options)).rejects.toThrow(
          /deployment table holds the id "not\{ok\}".*delete the row/,
        );
      } finally {
        await scratch.drop();
      }
    });
  }
});

describe.runIf(stacks().includes("postgres"))("the Redis namespace [postgres]", () => {
  const drops: (() => Promise<void>)[] = [];
  const servers: RunningServer[] = [];
  let receiver: Receiver | undefined;
  let redis: Redis | undefined;

  /** Two processes on one database whose URLs are spelled differently, and a third on another database. */
  beforeAll(async () => {
    const one = await provisionStack("postgres");
    const other = await provisionStack("postgres");
    drops.push(one.drop, other.drop);
    const urls = [one.env.DATABASE_URL!, respell(one.env.DATABASE_URL!), other.env.DATABASE_URL!];
    expect(urls[1]).not.toBe(urls[0]);
    for (const [i, DATABASE_URL] of urls.entries()) {
      const config = loadConfig({
        DATABASE_URL,
        REDIS_URL,
        DATA_DIR: (i < 2 ? one : other).env.DATA_DIR,
        PORT: "0",
        KONTOR_ENV: "development",
      });
      servers.push(await startServer(config, { publicUrlFromPort: true }));
    }
    receiver = await startReceiver();
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await redis.connect();
  });

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await receiver?.close();
    // The keys these servers wrote (idempotency records live 24 h).
    for (const id of new Set(servers.map((s) => s.db.deploymentId))) {
      const keys = redis ? await keysUnder(redis, redisNamespace(id)) : [];
      if (keys.length > 0) await redis!.unlink(...keys);
    }
    redis?.disconnect();
    for (const drop of drops) await drop();
  });

  it("is the same for two spellings of one DATABASE_URL, so they share a rate limit", async () => {
    const [a, b] = servers as [RunningServer, RunningServer];
    expect(b.db.deploymentId).toBe(a.db.deploymentId);
    const { key } = await freeKey(a);
    const statuses: number[] = [];
    for (let i = 0; i < FREE + 10; i += 10) {
      const batch = Array.from({ length: Math.min(10, FREE + 10 - i) }, (_, j) =>
        rest(`${servers[(i + j) % 2]!.url}/v1`, key).get("/workspace"),
      );
      statuses.push(...(await Promise.all(batch)).map((r) => r.status));
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(FREE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });

  it("differs between two databases on one Redis: their limits never meet", async () => {
    const [a, , c] = servers as [RunningServer, RunningServer, RunningServer];
    expect(c.db.deploymentId).not.toBe(a.db.deploymentId);
    const before = await remainingFor(a);
    await remainingFor(a);
    expect(await remainingFor(a)).toBe(before - 2);
    const elsewhere = await remainingFor(c);
    expect(elsewhere).toBe(FREE - 1);
    expect(await remainingFor(a)).toBe(before - 3);
  });

  it("is `kontor:{<id>}:`, and every key the deployment writes carries the one hash tag (one Redis Cluster slot)", async () => {
    const [a] = servers as [RunningServer];
    const id = a.db.deploymentId;
    const { key } = await freeKey(a);
    const api = rest(`${a.url}/v1`, key);
    // A webhook that fails leaves a delayed retry in BullMQ; a keyed POST leaves its idempotency record.
    receiver!.answer = () => ({ status: 500 });
    expect(
      (await api.post("/webhook-endpoints", { url: receiver!.url("/namespace"), events: ["lead.created"] }))
        .status,
    ).toBe(201);
    const created = await fetch(`${a.url}/v1/leads`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        "idempotency-key": `namespace-${randomBytes(4).toString("hex")}`,
      },
      body: JSON.stringify({ first_name: "Slot" }),
    });
    await created.arrayBuffer();
    expect(created.status).toBe(201);
    await receiver!.waitFor("/namespace", 1);
    // A failed dashboard sign-in counts per account and per address.
    expect(
      (
        await new DashboardClient(a.url).signIn(
          `nobody-${randomBytes(4).toString("hex")}@example.com`,
          "not the password",
        )
      ).status,
    ).toBe(401);

    let keys: string[] = [];
    const deadline = Date.now() + 10_000;
    do {
      keys = await keysUnder(redis!, `kontor:{${id}}:`);
      if (keys.some((k) => k.includes(":bull:webhook-deliveries:delayed"))) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    const kinds = new Set(keys.map((k) => k.slice(`kontor:{${id}}:`.length).split(":")[0]));
    expect([...kinds]).toEqual(expect.arrayContaining(["ratelimit", "idem", "bull", "signin"]));
    expect(keys.filter((k) => k.includes(":bull:webhook-deliveries:"))).toEqual(
      expect.arrayContaining([expect.stringMatching(/:delayed$/)]),
    );
    for (const k of keys) expect(hashTag(k), k).toBe(id);
  });
});
