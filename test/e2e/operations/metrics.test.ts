/** /metrics of a server in this process; of server processes, a cluster and a Redis that lost its jobs: metrics-deployment.test.ts. */
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { rest } from "../../support/http.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import { http, metricsOf, parseExposition, scrape, scrapeUntil, sumOf, TOKEN, valueOf } from "./support.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

e2e(
  "metrics",
  (server, stack) => {
    it("counts requests by method, route template and status class, with rate-limit refusals and idempotency replays and conflicts", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const created = await api.post("/leads", { first_name: "Ada" });
      expect(created.status).toBe(201);
      expect((await api.get(`/leads/${created.body.id}`)).status).toBe(200);
      expect((await api.get(`/leads/${created.body.id}`)).status).toBe(200);
      expect((await api.get("/leads/lead_00000000000000000000000000")).status).toBe(404);
      expect(
        (
          await fetch(`${server().api}/no-such-route/lead_0123`, {
            headers: { authorization: `Bearer ${tenant.key}` },
          })
        ).status,
      ).toBe(404);

      const post = (body: unknown) =>
        fetch(`${server().api}/leads`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tenant.key}`,
            "content-type": "application/json",
            "idempotency-key": "metrics-1",
          },
          body: JSON.stringify(body),
        });
      expect((await post({ first_name: "Grace" })).status).toBe(201);
      const replay = await post({ first_name: "Grace" });
      expect([replay.status, replay.headers.get("idempotent-replay")]).toEqual([201, "true"]);
      expect((await post({ first_name: "Someone else" })).status).toBe(409);

      // One past the free plan's limit: the last is a 429.
      const free = await server().tenant({ plan: "free" });
      const statuses: number[] = [];
      for (let i = 0; i < FREE + 1; i += 20) {
        const batch = Array.from({ length: Math.min(20, FREE + 1 - i) }, () =>
          fetch(`${server().api}/workspace`, { headers: { authorization: `Bearer ${free.key}` } }).then(
            async (res) => {
              await res.arrayBuffer();
              return res.status;
            },
          ),
        );
        statuses.push(...(await Promise.all(batch)));
      }
      expect(statuses.filter((s) => s === 429)).toHaveLength(1);

      const families = await scrapeUntil(
        server().url,
        (f) => valueOf(f, "kontor_http_requests_total", http("GET", "/v1/workspace", "4xx")) === 1,
      );
      const count = (labels: Record<string, string>) =>
        valueOf(families, "kontor_http_requests_total", labels);
      expect(count(http("GET", "/v1/leads/{id}", "2xx"))).toBe(2);
      expect(count(http("GET", "/v1/leads/{id}", "4xx"))).toBe(1);
      expect(count(http("GET", "unmatched", "4xx"))).toBe(1);
      // The first lead, Grace and her replay; the conflict is a 4xx.
      expect(count(http("POST", "/v1/leads", "2xx"))).toBe(3);
      expect(count(http("POST", "/v1/leads", "4xx"))).toBe(1);
      expect(count(http("GET", "/v1/workspace", "2xx"))).toBe(FREE);
      expect(count(http("GET", "/v1/workspace", "4xx"))).toBe(1);
      // The latency histogram counts the same requests.
      expect(
        valueOf(families, "kontor_http_request_duration_seconds_count", http("GET", "/v1/leads/{id}", "2xx")),
      ).toBe(2);
      expect(
        valueOf(families, "kontor_http_request_duration_seconds_count", http("GET", "/v1/workspace", "2xx")),
      ).toBe(FREE);

      expect(
        valueOf(families, "kontor_rate_limit_refusals_total", { code: "rate_limit_exceeded", plan: "free" }),
      ).toBe(1);
      expect(
        valueOf(families, "kontor_rate_limit_refusals_total", { code: "rate_limit_exceeded", plan: "pro" }),
      ).toBe(0);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "replayed" })).toBe(1);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "conflict" })).toBe(1);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "in_progress" })).toBe(0);
      const inFlight = await scrapeUntil(
        server().url,
        (f) => valueOf(f, "kontor_http_requests_in_flight") === 0,
      );
      expect(valueOf(inFlight, "kontor_http_requests_in_flight")).toBe(0);

      // Route templates only: no id, no query string, no unknown path in any label.
      const routes = new Set(families.get("kontor_http_requests_total")!.samples.map((s) => s.labels.route));
      for (const route of routes) expect(route, "a route label").toMatch(/^(unmatched|\/[a-z0-9/{}_.-]*)$/);
      expect([...routes].join(" ")).not.toMatch(/lead_0|no-such-route/);
    });

    it("refuses a scrape without the token, with a wrong one or in another scheme: 401 in the API's error shape, even from loopback", async () => {
      const missing = await scrape(server().url, {});
      expect(missing.status).toBe(401);
      expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="kontor-metrics"');
      const body = JSON.parse(missing.text);
      expect(body).toEqual({
        error: {
          type: "authentication_error",
          code: "unauthenticated",
          message: expect.any(String),
          request_id: expect.stringMatching(/^req_/),
        },
      });
      expect(missing.headers.get("x-request-id")).toBe(body.error.request_id);
      expect(missing.text).not.toContain("kontor_");

      const wrong = await scrape(server().url, { authorization: `Bearer ${TOKEN}x` });
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toBe(
        'Bearer realm="kontor-metrics", error="invalid_token"',
      );
      expect(JSON.parse(wrong.text).error.code).toBe("invalid_token");

      const basic = await scrape(server().url, {
        authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}`,
      });
      expect([basic.status, JSON.parse(basic.text).error.code]).toEqual([401, "invalid_token"]);

      const post = await scrape(server().url, { authorization: `Bearer ${TOKEN}` }, "POST");
      expect([post.status, post.headers.get("allow"), JSON.parse(post.text).error.code]).toEqual([
        405,
        "GET, HEAD",
        "method_not_allowed",
      ]);

      const head = await scrape(server().url, { authorization: `Bearer ${TOKEN}` }, "HEAD");
      expect([head.status, head.text]).toEqual([200, ""]);
      expect(head.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");

      // The setting itself: too short a token stops the server at start.
      expect(() => loadConfig({ KONTOR_METRICS_TOKEN: "short" })).toThrow(
        /KONTOR_METRICS_TOKEN must be at least 32 characters/,
      );
    });

    it("is not rate limited, request-logged, counted or documented: scrapes past the per-address limit leave no trace", async () => {
      const { prisma } = server().running.db;
      const publicDoc = () => fetch(`${server().api}/openapi.json`);
      await flushRequestLogs(server().running.db);
      const rowsBefore = await prisma.requestLog.count();
      const before = await metricsOf(server().url);
      const first = await publicDoc();
      const openapi = await first.json();
      const remainingBefore = Number(first.headers.get("x-ratelimit-remaining"));

      // More scrapes (and refused scrapes) than the free rate this address has for a minute.
      for (let i = 0; i < FREE + 5; i += 25) {
        const batch = await Promise.all(Array.from({ length: 25 }, () => scrape(server().url)));
        for (const res of batch) {
          expect(res.status).toBe(200);
          expect(res.headers.get("x-ratelimit-limit"), "no rate-limit headers on a scrape").toBeNull();
        }
      }
      for (let i = 0; i < 5; i++) expect((await scrape(server().url, {})).status).toBe(401);

      const second = await publicDoc();
      await second.arrayBuffer();
      expect(second.status).toBe(200);
      // One more request of this address: the scrapes took nothing (a new window may have begun meanwhile).
      expect(Number(second.headers.get("x-ratelimit-remaining"))).toBeGreaterThanOrEqual(remainingBefore - 1);

      await flushRequestLogs(server().running.db);
      expect(await prisma.requestLog.count(), "request-log rows: the two OpenAPI requests only").toBe(
        rowsBefore + 2,
      );
      expect(await prisma.requestLog.count({ where: { route: { contains: "metrics" } } })).toBe(0);

      const after = await scrapeUntil(
        server().url,
        (f) => sumOf(f, "kontor_http_requests_total") >= sumOf(before, "kontor_http_requests_total") + 2,
      );
      expect(
        sumOf(after, "kontor_http_requests_total") - sumOf(before, "kontor_http_requests_total"),
        "counted: the two OpenAPI requests only",
      ).toBe(2);
      expect(
        after.get("kontor_http_requests_total")!.samples.some((s) => s.labels.route?.includes("metrics")),
      ).toBe(false);
      expect(Object.keys(openapi.paths).filter((path) => path.includes("metrics"))).toEqual([]);
    });

    it("answers in the Prometheus text format: every line parses, each family declared, histograms cumulative", async () => {
      const res = await scrape(server().url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-store");
      const families = parseExposition(res.text);
      const expected: Record<string, string> = {
        kontor_http_requests_total: "counter",
        kontor_http_request_duration_seconds: "histogram",
        kontor_http_requests_in_flight: "gauge",
        kontor_rate_limit_refusals_total: "counter",
        kontor_idempotency_requests_total: "counter",
        kontor_webhook_attempts_total: "counter",
        kontor_webhook_attempt_duration_seconds: "histogram",
        kontor_webhook_outbox_events: "gauge",
        kontor_webhook_outbox_oldest_seconds: "gauge",
        kontor_webhook_deliveries_waiting: "gauge",
        kontor_database_up: "gauge",
        kontor_request_log_buffered_rows: "gauge",
        process_resident_memory_bytes: "gauge",
        process_cpu_seconds_total: "counter",
        nodejs_heap_size_used_bytes: "gauge",
        nodejs_eventloop_lag_p99_seconds: "gauge",
        nodejs_gc_duration_seconds: "histogram",
      };
      if (stack === "postgres") {
        Object.assign(expected, {
          kontor_db_pool_connections: "gauge",
          kontor_db_pool_max_connections: "gauge",
          kontor_db_pool_waiting_requests: "gauge",
          kontor_redis_up: "gauge",
        });
      }
      for (const [name, type] of Object.entries(expected)) expect(families.get(name)?.type, name).toBe(type);
      if (stack === "embedded") {
        // No pool and no Redis: no series pretending there is one.
        for (const name of ["kontor_db_pool_connections", "kontor_redis_up"])
          expect(families.has(name), name).toBe(false);
      } else {
        expect(valueOf(families, "kontor_redis_up")).toBe(1);
        expect(valueOf(families, "kontor_db_pool_max_connections")).toBe(10);
        expect(valueOf(families, "kontor_db_pool_connections", { state: "in_use" })).toBeGreaterThanOrEqual(
          0,
        );
      }
      expect(valueOf(families, "kontor_database_up")).toBe(1);
      expect(valueOf(families, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000);
      // The parser is strict enough to fail: a sample without a TYPE, a bad value, an unquoted label.
      expect(() => parseExposition("kontor_x 1\n")).toThrow(/undeclared/);
      expect(() => parseExposition("# HELP a b\n# TYPE a gauge\na one\n")).toThrow(/not a sample value/);
      expect(() => parseExposition("# HELP a b\n# TYPE a gauge\na{x=1} 1\n")).toThrow(/not quoted/);
    });

    describe("webhooks", () => {
      let receiver: Receiver;
      beforeAll(async () => {
        receiver = await startReceiver();
        receiver.answer = (request) => ({ status: request.path === "/fails" ? 500 : 200 });
      });
      afterAll(async () => receiver?.close());

      it("counts delivery attempts by outcome and shows the deliveries waiting for a retry", async () => {
        const tenant = await server().tenant();
        const api = rest(server().api, tenant.key);
        for (const path of ["/ok", "/fails"]) {
          expect(
            (await api.post("/webhook-endpoints", { url: receiver.url(path), events: ["lead.created"] }))
              .status,
          ).toBe(201);
        }
        expect((await api.post("/leads", { first_name: "Hook" })).status).toBe(201);
        await receiver.waitFor("/ok", 1);
        await receiver.waitFor("/fails", 1);
        const families = await scrapeUntil(
          server().url,
          (f) =>
            valueOf(f, "kontor_webhook_attempts_total", { outcome: "retrying" }) === 1 &&
            valueOf(f, "kontor_webhook_deliveries_waiting", { state: "scheduled" }) === 1,
        );
        expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "succeeded" })).toBe(1);
        expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "retrying" })).toBe(1);
        expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "failed" })).toBe(0);
        expect(valueOf(families, "kontor_webhook_attempt_duration_seconds_count")).toBe(2);
        // The failed one waits about a minute for its retry; nothing is due or held.
        expect(valueOf(families, "kontor_webhook_deliveries_waiting", { state: "scheduled" })).toBe(1);
        expect(valueOf(families, "kontor_webhook_deliveries_waiting", { state: "due" })).toBe(0);
        expect(valueOf(families, "kontor_webhook_deliveries_waiting", { state: "held" })).toBe(0);
        expect(valueOf(families, "kontor_webhook_outbox_events")).toBe(0);
      });
    });
  },
  { KONTOR_METRICS_TOKEN: TOKEN },
);

/** An address of this machine that is not loopback: a request to it arrives from it. */
function nonLoopbackAddress(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    const found = list?.find((a) => a.family === "IPv4" && !a.internal);
    if (found) return found.address;
  }
  return undefined;
}

e2e("metrics without a token", (server) => {
  it("serves loopback clients, and answers the 404 of an unknown path through a proxy or from another address", async () => {
    const local = await scrape(server().url, {});
    expect(local.status).toBe(200);
    expect(() => parseExposition(local.text)).not.toThrow();

    const proxies: Record<string, string>[] = [
      { "x-forwarded-for": "203.0.113.9" },
      { forwarded: "for=203.0.113.9" },
      { "x-real-ip": "203.0.113.9" },
    ];
    for (const header of proxies) {
      const proxied = await scrape(server().url, header);
      expect(proxied.status, JSON.stringify(header)).toBe(404);
      expect(JSON.parse(proxied.text).error).toMatchObject({
        type: "invalid_request_error",
        code: "not_found",
        message: "No route GET /metrics.",
      });
    }

    const address = nonLoopbackAddress();
    expect(address, "this machine has a non-loopback IPv4 address to connect from").toBeDefined();
    const port = new URL(server().url).port;
    const remote = await fetch(`http://${address}:${port}/metrics`);
    expect(remote.status).toBe(404);
    expect((await remote.json()).error.code).toBe("not_found");
    // The API itself answers that address as usual.
    expect((await fetch(`http://${address}:${port}/health`)).status).toBe(200);
  });
});
