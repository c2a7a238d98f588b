import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { CodingMeter, codingHeaders, windows } from "../../../server/ai/metering.ts";
import { clockAt, newRequestId, newWorkspaceId, refusal } from "../../support/meters.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";
import { DAY, FIVE_HOURS, HOUR, WEEK } from "./support.ts";

/**
 * The coding plan's meter (CodingMeter) with an injected clock: the 5-hour and weekly windows, the
 * x-codingplan-* headers, the pools and the concurrency slots, in memory and shared on Redis. The
 * coding plan end to end is in metering.test.ts.
 */

describe("CodingMeter with an injected clock", () => {
  /** Monday 2025-01-06 00:00 UTC. */
  const MONDAY = Date.UTC(2025, 0, 6);
  /** The first 5-hour boundary of that week (windows run from the epoch, not from Monday). */
  const FIRST_WINDOW = Math.ceil(MONDAY / FIVE_HOURS) * FIVE_HOURS;
  const workspace = newWorkspaceId;
  const request = newRequestId;

  it("windows(): fixed 5-hour windows from the epoch, weeks from Monday 00:00 UTC", () => {
    expect(windows(0).fiveHour).toEqual({ index: 0, resetsAt: new Date(FIVE_HOURS) });
    // 1970-01-01 was a Thursday: the first weekly reset is Monday the 5th.
    expect(windows(0).weekly.resetsAt.toISOString()).toBe("1970-01-05T00:00:00.000Z");

    // A 5-hour boundary belongs to the window it opens.
    const boundary = FIRST_WINDOW;
    expect(windows(boundary - 1).fiveHour.resetsAt.getTime()).toBe(boundary);
    expect(windows(boundary).fiveHour.resetsAt.getTime()).toBe(boundary + FIVE_HOURS);
    expect(windows(boundary).fiveHour.index).toBe(windows(boundary - 1).fiveHour.index + 1);

    // Monday 00:00 opens a week; the instant before belongs to the week before.
    expect(windows(MONDAY - 1).weekly.resetsAt.getTime()).toBe(MONDAY);
    expect(windows(MONDAY).weekly.resetsAt.toISOString()).toBe("2025-01-13T00:00:00.000Z");
    expect(windows(MONDAY + WEEK - 1).weekly.resetsAt.toISOString()).toBe("2025-01-13T00:00:00.000Z");
    expect(windows(MONDAY).weekly.index).toBe(windows(MONDAY - 1).weekly.index + 1);
    expect(windows(MONDAY + WEEK - 1).weekly.index).toBe(windows(MONDAY).weekly.index);

    for (let t = MONDAY - 3 * DAY; t < MONDAY + 10 * DAY; t += 97 * 60_000 + 13) {
      const w = windows(t);
      const untilFive = w.fiveHour.resetsAt.getTime() - t;
      const untilWeek = w.weekly.resetsAt.getTime() - t;
      expect(untilFive).toBeGreaterThan(0);
      expect(untilFive).toBeLessThanOrEqual(FIVE_HOURS);
      expect(w.fiveHour.resetsAt.getTime() % FIVE_HOURS).toBe(0);
      expect(untilWeek).toBeGreaterThan(0);
      expect(untilWeek).toBeLessThanOrEqual(WEEK);
      expect(w.weekly.resetsAt.getUTCDay()).toBe(1);
      expect(w.weekly.resetsAt.getTime() % DAY).toBe(0);
    }
  });

  it("codingHeaders(): percentages rounded to 2 decimals and capped at 100, resets in ISO 8601", () => {
    const resetsAt = new Date(FIRST_WINDOW);
    const headers = (used: number) =>
      codingHeaders({
        fiveHour: { used, limit: 200_000, resetsAt },
        weekly: { used, limit: 1_000_000, resetsAt: new Date(MONDAY + WEEK) },
      });
    expect(headers(0)).toEqual({
      "x-codingplan-5h-used-percent": "0",
      "x-codingplan-5h-reset": resetsAt.toISOString(),
      "x-codingplan-weekly-used-percent": "0",
      "x-codingplan-weekly-reset": "2025-01-13T00:00:00.000Z",
    });
    expect(headers(12_345)["x-codingplan-5h-used-percent"]).toBe("6.17");
    expect(headers(12_345)["x-codingplan-weekly-used-percent"]).toBe("1.23");
    expect(headers(450_000)["x-codingplan-5h-used-percent"]).toBe("100");
    expect(headers(450_000)["x-codingplan-weekly-used-percent"]).toBe("45");
  });

  it("the 5-hour and the weekly pools reset independently", async () => {
    const clock = clockAt(FIRST_WINDOW + 60_000);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    await meter.record(ws, 150_000);
    await meter.record(ws, 60_000);
    let state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([210_000, 210_000]);
    expect(state.fiveHour.resetsAt.getTime()).toBe(FIRST_WINDOW + FIVE_HOURS);

    const spent = await refusal(meter.begin(ws, "free", request()));
    expect([spent.status, spent.code]).toEqual([429, "rate_limit_exceeded"]);
    expect(spent.message).toContain("5-hour");
    expect(spent.headers["Retry-After"]).toBe(String((FIVE_HOURS - 60_000) / 1000));

    // One millisecond before the boundary: still spent. At it: the 5-hour pool is free, the weekly one still counts.
    clock.set(FIRST_WINDOW + FIVE_HOURS - 1);
    expect((await refusal(meter.begin(ws, "free", request()))).headers["Retry-After"]).toBe("1");
    clock.set(FIRST_WINDOW + FIVE_HOURS);
    state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([0, 210_000]);
    const { end, state: began } = await meter.begin(ws, "free", request());
    expect(codingHeaders(began)["x-codingplan-weekly-used-percent"]).toBe("21");
    await end();
    await meter.record(ws, 1_000);
    state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([1_000, 211_000]);

    // Another workspace has pools of its own.
    expect((await meter.state(workspace(), "free")).weekly.used).toBe(0);
  });

  it("a spent weekly pool refuses in a fresh 5-hour window until Monday", async () => {
    const clock = clockAt(FIRST_WINDOW + HOUR);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    // Five 5-hour windows of 200k each spend the week's million.
    for (let i = 0; i < 5; i++) {
      expect((await meter.state(ws, "free")).fiveHour.used).toBe(0);
      await meter.record(ws, 200_000);
      expect((await refusal(meter.begin(ws, "free", request()))).message).toContain(
        i < 4 ? "5-hour" : "weekly",
      );
      clock.advance(FIVE_HOURS);
    }
    const state = await meter.state(ws, "free");
    expect([state.fiveHour.used, state.weekly.used]).toEqual([0, 1_000_000]);
    const weekly = await refusal(meter.begin(ws, "free", request()));
    expect(weekly.code).toBe("rate_limit_exceeded");
    expect(weekly.message).toContain("weekly");
    expect(Number(weekly.headers["Retry-After"])).toBe(Math.ceil((MONDAY + WEEK - clock.now()) / 1000));
    expect(weekly.headers["x-codingplan-weekly-used-percent"]).toBe("100");
    expect(weekly.headers["x-codingplan-5h-used-percent"]).toBe("0");

    clock.set(MONDAY + WEEK);
    const fresh = await meter.state(ws, "free");
    expect([fresh.fiveHour.used, fresh.weekly.used]).toEqual([0, 0]);
    await (await meter.begin(ws, "free", request())).end();
  });

  it("concurrency slots: the plan's number at once, given back once, a dead holder's lease lapses", async () => {
    const clock = clockAt(FIRST_WINDOW);
    const meter = new CodingMeter(undefined, "test:", clock.now);
    const ws = workspace();
    const a = await meter.begin(ws, "free", request());
    const busy = await refusal(meter.begin(ws, "free", request()));
    expect([busy.status, busy.code, busy.headers["Retry-After"]]).toEqual([
      429,
      "concurrency_limit_exceeded",
      "1",
    ]);
    // Other workspaces have their own slots.
    await (await meter.begin(workspace(), "free", request())).end();

    await a.end();
    const b = await meter.begin(ws, "free", request());
    // Ending a twice does not give back b's slot.
    await a.end();
    expect((await refusal(meter.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");

    // b never ends (its process died): its lease lapses after 15 minutes.
    clock.advance(15 * 60_000 - 1);
    expect((await refusal(meter.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
    clock.advance(1);
    const c = await meter.begin(ws, "free", request());
    await c.end();
    await b.end();

    const running = [];
    for (let i = 0; i < PLAN_LIMITS.max.coding_concurrency; i++)
      running.push(await meter.begin(ws, "max", request()));
    expect((await refusal(meter.begin(ws, "max", request()))).message).toContain("8 coding requests");
    await Promise.all(running.map((slot) => slot.end()));
  });

  describe.skipIf(!stacks().includes("postgres"))("on Redis", () => {
    let redis: Redis;
    const namespace = `kontor-test-${randomBytes(6).toString("hex")}:`;
    beforeAll(async () => {
      redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
      await redis.connect();
    });
    afterAll(async () => {
      const keys = await redis.keys(`${namespace}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });

    it("two meters on one Redis share the pools and the slots; another namespace shares nothing", async () => {
      const clock = clockAt(FIRST_WINDOW + HOUR);
      const one = new CodingMeter(redis, namespace, clock.now);
      const two = new CodingMeter(redis, namespace, clock.now);
      const elsewhere = new CodingMeter(redis, `${namespace}other:`, clock.now);
      const ws = workspace();

      await one.record(ws, 150_000);
      await two.record(ws, 50_000);
      for (const meter of [one, two]) {
        const state = await meter.state(ws, "free");
        expect([state.fiveHour.used, state.weekly.used]).toEqual([200_000, 200_000]);
      }
      expect((await elsewhere.state(ws, "free")).fiveHour.used).toBe(0);
      expect((await refusal(two.begin(ws, "free", request()))).code).toBe("rate_limit_exceeded");

      // The next 5-hour window: the weekly count carries over, on both.
      clock.advance(FIVE_HOURS);
      expect((await two.state(ws, "free")).weekly.used).toBe(200_000);
      expect((await one.state(ws, "free")).fiveHour.used).toBe(0);

      const slot = await one.begin(ws, "free", request());
      expect((await refusal(two.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
      await (await elsewhere.begin(ws, "free", request())).end();
      await slot.end();
      const next = await two.begin(ws, "free", request());
      expect((await refusal(one.begin(ws, "free", request()))).code).toBe("concurrency_limit_exceeded");
      // A holder that never ends lapses after 15 minutes, for every process.
      clock.advance(15 * 60_000);
      await (await one.begin(ws, "free", request())).end();
      await next.end();

      // The counters expire on their own, an hour after their window.
      const ttls = await Promise.all(
        (await redis.keys(`${namespace}coding:${ws}:*`)).map(
          async (key) => [key, await redis.pttl(key)] as const,
        ),
      );
      expect(ttls.length).toBeGreaterThan(0);
      for (const [key, ttl] of ttls) {
        expect(ttl, key).toBeGreaterThan(0);
        expect(ttl, key).toBeLessThanOrEqual(WEEK + HOUR);
      }
    });
  });
});
