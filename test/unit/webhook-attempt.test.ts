import { describe, expect, it } from "vitest";
import {
  ConfigError,
  DEFAULT_RETRY_SCHEDULE,
  loadConfig,
  parseDurations,
  type WebhookConfig,
} from "../../server/runtime/config.ts";
import { envelope, outcomeOf, retryDelay, WEBHOOK_BODY_BUDGET_BYTES } from "../../server/webhooks/attempt.ts";
import type { SendResult } from "../../server/webhooks/send.ts";

const HOUR = 3_600_000;
const config: WebhookConfig = { timeoutMs: 10_000, retryScheduleMs: [1_000, 2_000], jitter: 0.1 };
const result = (over: Partial<SendResult>): SendResult => ({
  ok: false,
  status: null,
  body: null,
  durationMs: 12,
  error: null,
  errorMessage: null,
  ...over,
});

describe("the retry schedule", () => {
  it("defaults to about 1 m, 5 m, 30 m, 2 h, 5 h, 10 h, then every 12 h: 12 attempts over about 3 days", () => {
    const schedule = parseDurations("x", DEFAULT_RETRY_SCHEDULE);
    expect(schedule.slice(0, 6)).toEqual([60_000, 300_000, 1_800_000, 2 * HOUR, 5 * HOUR, 10 * HOUR]);
    expect(schedule.slice(6).every((ms) => ms === 12 * HOUR)).toBe(true);
    expect(schedule.length + 1).toBe(12);
    const total = schedule.reduce((a, b) => a + b, 0) / HOUR;
    expect(total).toBeGreaterThan(72);
    expect(total).toBeLessThan(80);
    expect(loadConfig({}).webhooks).toEqual({ timeoutMs: 10_000, retryScheduleMs: schedule, jitter: 0.1 });
  });

  it("reads KONTOR_WEBHOOK_* settings and refuses bad ones with a clear message", () => {
    expect(
      loadConfig({
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms, 1.5s,2m",
        KONTOR_WEBHOOK_TIMEOUT_MS: "500",
        KONTOR_WEBHOOK_JITTER: "0",
      }).webhooks,
    ).toEqual({
      timeoutMs: 500,
      retryScheduleMs: [200, 1_500, 120_000],
      jitter: 0,
    });
    expect(() => loadConfig({ KONTOR_WEBHOOK_RETRY_SCHEDULE: "5 minutes" })).toThrow(ConfigError);
    expect(() => loadConfig({ KONTOR_WEBHOOK_RETRY_SCHEDULE: "1m,,2m" })).toThrow(
      /comma-separated list of durations/,
    );
    expect(() => loadConfig({ KONTOR_WEBHOOK_TIMEOUT_MS: "-1" })).toThrow(
      /KONTOR_WEBHOOK_TIMEOUT_MS must be a positive number/,
    );
    expect(() => loadConfig({ KONTOR_WEBHOOK_JITTER: "1" })).toThrow(/KONTOR_WEBHOOK_JITTER/);
    expect(() => loadConfig({ KONTOR_SECRET_KEY: "too short" })).toThrow(/at least 32 characters/);
  });

  it("spreads each wait by ± jitter and has none left after the last", () => {
    expect(retryDelay(config, 1, () => 0)).toBe(900);
    expect(retryDelay(config, 1, () => 0.5)).toBe(1_000);
    expect(retryDelay(config, 2, () => 0.999_999)).toBe(2_200);
    expect(retryDelay(config, 3)).toBeUndefined();
    for (let i = 0; i < 200; i++) {
      const delay = retryDelay(config, 2)!;
      expect(delay).toBeGreaterThanOrEqual(1_800);
      expect(delay).toBeLessThanOrEqual(2_200);
    }
  });
});

describe("what an attempt comes to", () => {
  it("a 2xx succeeds, even when its body stalled after the status", () => {
    expect(outcomeOf(config, 1, result({ ok: true, status: 204, body: "" }))).toEqual({
      status: "succeeded",
      responseStatus: 204,
      responseBody: "",
      lastError: null,
      durationMs: 12,
    });
    expect(
      outcomeOf(config, 3, result({ ok: true, status: 200, body: "par", error: "timeout" })).status,
    ).toBe("succeeded");
  });

  it("a failure retries while the schedule lasts, then fails", () => {
    const first = outcomeOf(config, 1, result({ status: 500, body: "boom" }));
    expect(first).toMatchObject({
      status: "retrying",
      responseStatus: 500,
      responseBody: "boom",
      lastError: null,
    });
    expect(first.retryInMs).toBeGreaterThanOrEqual(900);
    expect(outcomeOf(config, 2, result({ error: "timeout" }))).toMatchObject({
      status: "retrying",
      lastError: "timeout",
      responseStatus: null,
    });
    expect(outcomeOf(config, 3, result({ error: "connection_refused" }))).toEqual({
      status: "failed",
      responseStatus: null,
      responseBody: null,
      lastError: "connection_refused",
      durationMs: 12,
    });
  });

  it("a 410 fails at once and marks the endpoint gone", () => {
    expect(outcomeOf(config, 1, result({ status: 410, body: "gone" }))).toMatchObject({
      status: "failed",
      gone: true,
      responseStatus: 410,
    });
  });
});

describe("the envelope", () => {
  const BASE_URL = "https://api.kontor.test/v1";
  const event = (data: unknown) => ({
    eventId: "evt_1",
    eventType: "invoice.created",
    eventCreatedAt: new Date("2026-11-21T10:00:00.000Z"),
    workspaceId: "ws_1",
    eventData: data,
  });
  /** An invoice whose full envelope is exactly `bytes` long. */
  const invoiceOfSize = (bytes: number, unit = "x") => {
    const data = { object: "invoice", id: "inv_1", number: "INV-2026-0001", notes: "" };
    const bare = Buffer.byteLength(envelope(event(data), BASE_URL));
    const unitBytes = Buffer.byteLength(unit);
    expect((bytes - bare) % unitBytes).toBe(0);
    return { ...data, notes: unit.repeat((bytes - bare) / unitBytes) };
  };

  it('is the event object README "Webhooks" shows, with the resource as stored', () => {
    const body = envelope(event({ object: "lead", id: "lead_1", b: 1, a: 2 }), BASE_URL);
    expect(body).toBe(
      '{"id":"evt_1","object":"event","type":"invoice.created","created_at":"2026-11-21T10:00:00.000Z","workspace_id":"ws_1","data":{"object":{"object":"lead","id":"lead_1","b":1,"a":2}}}',
    );
  });

  it("has a budget of 256 KiB", () => {
    expect(WEBHOOK_BODY_BUDGET_BYTES).toBe(262_144);
  });

  it("carries an event of exactly the budget in full, without a thin field", () => {
    const data = invoiceOfSize(WEBHOOK_BODY_BUDGET_BYTES);
    const body = envelope(event(data), BASE_URL);
    expect(Buffer.byteLength(body)).toBe(WEBHOOK_BODY_BUDGET_BYTES);
    const parsed = JSON.parse(body);
    expect(parsed.data.object).toEqual(data);
    expect(parsed).not.toHaveProperty("thin");
    expect(parsed).not.toHaveProperty("event_url");
  });

  it("sends one byte over the budget thin: object and id only, thin: true and where to fetch it", () => {
    const data = invoiceOfSize(WEBHOOK_BODY_BUDGET_BYTES + 1);
    const body = envelope(event(data), BASE_URL);
    expect(JSON.parse(body)).toEqual({
      id: "evt_1",
      object: "event",
      type: "invoice.created",
      created_at: "2026-11-21T10:00:00.000Z",
      workspace_id: "ws_1",
      data: { object: { object: "invoice", id: "inv_1" } },
      thin: true,
      event_url: "https://api.kontor.test/v1/events/evt_1",
    });
    expect(Buffer.byteLength(body)).toBeLessThan(1024);
  });

  it("measures bytes, not characters", () => {
    // 2 bytes per character: under the budget in characters, over it in bytes.
    const data = invoiceOfSize(WEBHOOK_BODY_BUDGET_BYTES + 2, "é");
    expect(JSON.stringify(data).length).toBeLessThan(WEBHOOK_BODY_BUDGET_BYTES);
    expect(JSON.parse(envelope(event(data), BASE_URL)).thin).toBe(true);
    const fits = invoiceOfSize(WEBHOOK_BODY_BUDGET_BYTES, "é");
    expect(JSON.parse(envelope(event(fits), BASE_URL))).not.toHaveProperty("thin");
  });

  it("reads event data stored as a JSON string the same way", () => {
    const data = invoiceOfSize(WEBHOOK_BODY_BUDGET_BYTES + 1);
    expect(envelope(event(JSON.stringify(data)), BASE_URL)).toBe(envelope(event(data), BASE_URL));
  });
});
