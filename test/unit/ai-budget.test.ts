import { describe, expect, it } from "vitest";
import { ApiError } from "../../schema/lib/errors.ts";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import {
  BYTES_PER_TOKEN,
  DEFAULT_OUTPUT_RESERVATION,
  dailyHeaders,
  GeneralBudget,
  reservationOf,
  utcDay,
} from "../../server/ai/budget.ts";
import { ConfigError, loadConfig } from "../../server/runtime/config.ts";
import { clockAt, newRequestId, newWorkspaceId, refusal } from "../support/meters.ts";

/**
 * General AI's daily token budget (docs/api/ai.md), in process with an injected clock: UTC days,
 * reservations taken before the provider and settled after it, the refusals and their
 * Retry-After, reservations that lapse, and the test-only cap. The Redis store and the server
 * are tested end to end in test/e2e/ai/budget.test.ts.
 */

const DAY = 86_400_000;
/** 2025-03-10 00:00 UTC. */
const MIDNIGHT = Date.UTC(2025, 2, 10);
const workspace = newWorkspaceId;
const request = newRequestId;

describe("the budget's numbers", () => {
  it("free 200 000, plus 2 000 000, pro 10 000 000, max 40 000 000 tokens a day", () => {
    expect(
      [PLAN_LIMITS.free, PLAN_LIMITS.plus, PLAN_LIMITS.pro, PLAN_LIMITS.max].map((l) => l.ai_tokens_daily),
    ).toEqual([200_000, 2_000_000, 10_000_000, 40_000_000]);
    const budget = new GeneralBudget(undefined, "test:");
    expect(budget.limit("free")).toBe(200_000);
    expect(budget.limit("max")).toBe(40_000_000);
  });

  it("utcDay(): days from 00:00 UTC; midnight opens the next one", () => {
    expect(utcDay(MIDNIGHT - 1).resetsAt.getTime()).toBe(MIDNIGHT);
    expect(utcDay(MIDNIGHT).resetsAt.getTime()).toBe(MIDNIGHT + DAY);
    expect(utcDay(MIDNIGHT).index).toBe(utcDay(MIDNIGHT - 1).index + 1);
    expect(utcDay(MIDNIGHT + DAY - 1).index).toBe(utcDay(MIDNIGHT).index);
  });

  it("reservationOf(): body bytes / 4 rounded up, plus max_output_tokens or 4 096; at least 1, at most the budget", () => {
    expect(BYTES_PER_TOKEN).toBe(4);
    expect(DEFAULT_OUTPUT_RESERVATION).toBe(4_096);
    expect(reservationOf(400, 100, 200_000)).toBe(200);
    expect(reservationOf(401, 100, 200_000)).toBe(201);
    expect(reservationOf(400, undefined, 200_000)).toBe(100 + 4_096);
    // Not a positive whole number: the default (the route refuses such a body anyway).
    for (const odd of [null, 0, -5, 1.5, "100", Number.NaN])
      expect(reservationOf(0, odd, 200_000)).toBe(4_096);
    expect(reservationOf(1024 * 1024, 1e15, 200_000)).toBe(200_000);
    expect(reservationOf(0, 1, 200_000)).toBe(1);
  });

  it("dailyHeaders(): the limit, what is left after the settled and reserved tokens (never below 0), the next midnight", () => {
    const resetsAt = new Date(MIDNIGHT);
    expect(dailyHeaders({ limit: 200_000, used: 50_000, reserved: 4_196, resetsAt })).toEqual({
      "x-ai-daily-tokens-limit": "200000",
      "x-ai-daily-tokens-remaining": "145804",
      "x-ai-daily-reset": "2025-03-10T00:00:00.000Z",
    });
    expect(
      dailyHeaders({ limit: 200_000, used: 199_000, reserved: 4_196, resetsAt })[
        "x-ai-daily-tokens-remaining"
      ],
    ).toBe("0");
  });
});

describe("GeneralBudget with an injected clock", () => {
  it("reserves, settles with what the provider reported, and refuses once the day's tokens reach the budget, until midnight", async () => {
    const clock = clockAt(MIDNIGHT - DAY + 3_600_000);
    const budget = new GeneralBudget(undefined, "test:", { clock: clock.now });
    const ws = workspace();
    const first = await budget.reserve(ws, "free", request(), 5_000);
    expect(first.tokens).toBe(5_000);
    expect(first.state).toMatchObject({ limit: 200_000, used: 0, reserved: 5_000 });
    expect((await budget.state(ws, "free")).reserved).toBe(5_000);
    await first.settle(1_234);
    // Settled once: a second call counts nothing more.
    await first.settle(99_999);
    expect(await budget.state(ws, "free")).toMatchObject({ used: 1_234, reserved: 0 });

    // Below the budget, a request is let in whatever its reservation: it may pass the budget by that much.
    const big = await budget.reserve(ws, "free", request(), 190_000);
    await big.settle(198_765);
    const last = await budget.reserve(ws, "free", request(), 50_000);
    expect(last.state).toMatchObject({ used: 199_999, reserved: 50_000 });
    await last.settle(10);
    expect((await budget.state(ws, "free")).used).toBe(200_009);

    const spent = await refusal(budget.reserve(ws, "free", request(), 1));
    expect([spent.status, spent.type, spent.code]).toEqual([429, "rate_limit_error", "rate_limit_exceeded"]);
    expect(spent.message).toContain("200000 tokens a day is used up");
    expect(spent.headers["Retry-After"]).toBe(String((DAY - 3_600_000) / 1000));
    expect(spent.headers["x-ai-daily-tokens-remaining"]).toBe("0");
    expect(spent.headers["x-ai-daily-reset"]).toBe(new Date(MIDNIGHT).toISOString());

    clock.set(MIDNIGHT - 1);
    expect((await refusal(budget.reserve(ws, "free", request(), 1))).headers["Retry-After"]).toBe("1");
    // A new UTC day: a full budget again.
    clock.set(MIDNIGHT);
    expect(await budget.state(ws, "free")).toMatchObject({
      used: 0,
      reserved: 0,
      resetsAt: new Date(MIDNIGHT + DAY),
    });
    await (await budget.reserve(ws, "free", request(), 1)).settle(0);
    // Other workspaces have budgets of their own.
    expect((await budget.state(workspace(), "free")).used).toBe(0);
  });

  it("counts reservations of running requests: a burst is let in only while they leave room, and refused with Retry-After 1", async () => {
    const clock = clockAt(MIDNIGHT + 60_000);
    const budget = new GeneralBudget(undefined, "test:", { clock: clock.now });
    const ws = workspace();
    const reservation = 30_007;
    const burst = await Promise.allSettled(
      Array.from({ length: 20 }, () => budget.reserve(ws, "free", request(), reservation)),
    );
    const admitted = burst
      .filter((r) => r.status === "fulfilled")
      .map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof budget.reserve>>>).value);
    // Let in while the reservations are below 200 000: the 7th takes them to 210 049, the 8th is refused.
    expect(admitted).toHaveLength(Math.ceil(200_000 / reservation));
    expect(admitted).toHaveLength(7);
    const refused = burst.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(ApiError);
    expect(refused.reason.headers["Retry-After"]).toBe("1");
    expect(refused.reason.message).toContain("reserved by requests still running");

    // Each one cost what it reserved: the day ends at most one reservation past the budget.
    await Promise.all(admitted.map((r) => r.settle(reservation)));
    const state = await budget.state(ws, "free");
    expect(state.used).toBe(7 * reservation);
    expect(state.used).toBeLessThan(200_000 + reservation);
    expect((await refusal(budget.reserve(ws, "free", request(), 1))).message).toContain("used up");
  });

  it("a released reservation makes room again; one its process never settled lapses after 15 minutes", async () => {
    const clock = clockAt(MIDNIGHT + 60_000);
    const budget = new GeneralBudget(undefined, "test:", { clock: clock.now });
    const ws = workspace();
    const held = await budget.reserve(ws, "free", request(), 200_000);
    expect((await refusal(budget.reserve(ws, "free", request(), 1))).headers["Retry-After"]).toBe("1");
    await held.settle(0);
    const orphan = await budget.reserve(ws, "free", request(), 250_000);
    expect(orphan.tokens).toBe(250_000);
    clock.advance(15 * 60_000 - 1);
    expect((await refusal(budget.reserve(ws, "free", request(), 1))).code).toBe("rate_limit_exceeded");
    clock.advance(1);
    expect(await budget.state(ws, "free")).toMatchObject({ used: 0, reserved: 0 });
    await (await budget.reserve(ws, "free", request(), 1)).settle(1);
  });

  it("a cap lowers every plan's budget (never raises it)", async () => {
    const budget = new GeneralBudget(undefined, "test:", { cap: 10_000 });
    expect(["free", "plus", "pro", "max"].map((plan) => budget.limit(plan as "free"))).toEqual([
      10_000, 10_000, 10_000, 10_000,
    ]);
    expect(new GeneralBudget(undefined, "test:", { cap: 1e9 }).limit("free")).toBe(200_000);
    const ws = workspace();
    await (await budget.reserve(ws, "max", request(), 1)).settle(10_000);
    expect((await refusal(budget.reserve(ws, "max", request(), 1))).headers["x-ai-daily-tokens-limit"]).toBe(
      "10000",
    );
  });
});

describe("KONTOR_AI_TOKENS_DAILY_CAP", () => {
  it("is a whole number of tokens, for tests: refused in production", () => {
    expect(loadConfig({}).ai.tokensDailyCap).toBeUndefined();
    expect(loadConfig({ KONTOR_AI_TOKENS_DAILY_CAP: "5000" }).ai.tokensDailyCap).toBe(5_000);
    for (const bad of ["0", "-1", "1.5", "lots"])
      expect(() => loadConfig({ KONTOR_AI_TOKENS_DAILY_CAP: bad })).toThrow(ConfigError);
    expect(() => loadConfig({ KONTOR_ENV: "production", KONTOR_AI_TOKENS_DAILY_CAP: "5000" })).toThrow(
      /refused in production/,
    );
  });
});
