/**
 * docs/api/limits.md#traffic-policies: the leased limiter against a real Redis, several
 * limiters standing in for server processes (over running servers: rate-limit.test.ts).
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { afterAll, describe, expect, it } from "vitest";
import { LeasedLimiter } from "../../../server/policies/leased-limiter.ts";
import { REDIS_URL } from "../../support/stacks.ts";

/** Counts the commands each connection sends. */
function counted(redis: Redis) {
  let commands = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command) => {
    commands++;
    return send(command);
  };
  return () => commands;
}

describe("leased limiter (Redis)", () => {
  const clients: Redis[] = [];
  const prefix = `test-lease-${randomBytes(4).toString("hex")}`;
  const limiter = (points: number, options: { maxKeys?: number } = {}) => {
    const redis = new Redis(REDIS_URL, { lazyConnect: false });
    clients.push(redis);
    const sent = counted(redis);
    const leased = new LeasedLimiter({
      redis,
      keyPrefix: prefix,
      points,
      duration: 60,
      insuranceLimiter: new RateLimiterMemory({ points, duration: 60 }),
      ...options,
    });
    return { leased, sent, redis };
  };
  const outcome = (promise: Promise<RateLimiterRes>) =>
    promise.then(
      (res) => ({ ok: true, remaining: res.remainingPoints, ms: res.msBeforeNext }),
      (res: unknown) => {
        if (!(res instanceof RateLimiterRes)) throw res;
        return { ok: false, remaining: res.remainingPoints, ms: res.msBeforeNext };
      },
    );

  afterAll(async () => {
    const keys = await clients[0]!.keys(`${prefix}:*`);
    if (keys.length) await clients[0]!.del(...keys);
    for (const client of clients) client.disconnect();
  });

  const ready = async (redis: Redis) => {
    if (redis.status !== "ready") await new Promise((r) => redis.once("ready", r));
  };

  it("counts exactly in one process: remaining falls by one a request, then 0 and refusals", async () => {
    const { leased, redis } = limiter(120);
    await ready(redis);
    const key = `exact-${randomBytes(3).toString("hex")}`;
    const results = [];
    for (let i = 0; i < 125; i++) results.push(await outcome(leased.consume(key)));
    expect(results.slice(0, 120).map((r) => r.remaining)).toEqual(
      Array.from({ length: 120 }, (_, i) => 119 - i),
    );
    expect(results.slice(120).every((r) => !r.ok && r.remaining === 0)).toBe(true);
    expect(results.every((r) => r.ms > 0 && r.ms <= 60_000)).toBe(true);
    expect(Number(await redis.get(`${prefix}:${key}`))).toBe(120);
  });

  it("asks Redis once per batch, not once per request", async () => {
    const { leased, sent, redis } = limiter(1200);
    await ready(redis);
    const before = sent();
    const key = `batch-${randomBytes(3).toString("hex")}`;
    for (let i = 0; i < 600; i++) await leased.consume(key);
    // Leases of 1, 2, 4, 8, 16, then 24 (2 % of 1 200): 30 round trips for 600 requests.
    expect(sent() - before).toBeLessThanOrEqual(30);
    expect(sent() - before).toBeGreaterThan(0);
  });

  it("never grants more than the limit across processes, and refuses no earlier than 2 % a process", async () => {
    const processes = [limiter(600), limiter(600), limiter(600)];
    await Promise.all(processes.map((p) => ready(p.redis)));
    const key = `shared-${randomBytes(3).toString("hex")}`;
    // 900 requests, 30 at a time, spread over three processes.
    const all: { ok: boolean }[] = [];
    for (let wave = 0; wave < 30; wave++)
      all.push(
        ...(await Promise.all(
          Array.from({ length: 30 }, (_, i) => outcome(processes[(wave + i) % 3]!.leased.consume(key))),
        )),
      );
    const granted = all.filter((r) => r.ok).length;
    expect(granted).toBeLessThanOrEqual(600);
    // Each process may hold unspent at most 2 % of the limit (12) when the others run out.
    expect(granted).toBeGreaterThanOrEqual(600 - 3 * 12);
    expect(Number(await processes[0]!.redis.get(`${prefix}:${key}`))).toBeLessThanOrEqual(600);
  });

  it("makes concurrent requests of one key wait for one lease rather than each ask", async () => {
    const { leased, sent, redis } = limiter(1200);
    await ready(redis);
    const before = sent();
    const key = `burst-${randomBytes(3).toString("hex")}`;
    const results = await Promise.all(Array.from({ length: 40 }, () => outcome(leased.consume(key))));
    expect(results.every((r) => r.ok)).toBe(true);
    // 1 + 2 + 4 + 8 + 16 + 24 ≥ 40: six leases at most, not forty.
    expect(sent() - before).toBeLessThanOrEqual(6);
  });

  it("remembers at most maxKeys keys", async () => {
    const { leased, redis } = limiter(1200, { maxKeys: 50 });
    await ready(redis);
    for (let i = 0; i < 200; i++) await leased.consume(`many-${i}`);
    expect((leased as unknown as { leases: Map<string, unknown> }).leases.size).toBeLessThanOrEqual(50);
  });

  it("answers every waiting request when a lease fails, from the in-process count", async () => {
    const { leased, redis } = limiter(1200);
    await ready(redis);
    (redis as unknown as { kontorLease: () => Promise<never> }).kontorLease = () =>
      Promise.reject(new Error("lost the connection"));
    const results = await Promise.all(Array.from({ length: 5 }, () => outcome(leased.consume("failing"))));
    expect(results.map((r) => r.ok)).toEqual([true, true, true, true, true]);
  });

  it("counts in process while Redis is unreachable", async () => {
    const { leased, redis } = limiter(3);
    await ready(redis);
    redis.disconnect();
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await outcome(leased.consume("offline")));
    expect(results.map((r) => r.ok)).toEqual([true, true, true, false]);
  });
});
