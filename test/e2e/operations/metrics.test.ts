import { request } from "node:http";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { redisNamespace } from "../../../server/runtime/redis.ts";
import { freePort, spawnMain, startChildServer } from "../../support/child-server.ts";
import { rest } from "../../support/http.ts";
import { eventually, startReceiver, type Receiver } from "../../support/receiver.ts";
import { provisionStack, startTestServer, tenantIn, type TestServer } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

const TOKEN = "metrics-token-0123456789abcdef0123456789abcdef";
const FREE = PLAN_LIMITS.free.requests_per_minute;

// ---------------------------------------------------------------------------------------------
// A small parser of the Prometheus text exposition format (version 0.0.4): it rejects what a
// Prometheus server would reject, so "it parses" means something.

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** A float as Go's ParseFloat reads it (which is what Prometheus uses): NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  if (/^[-+]?inf(inity)?$/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`not a sample value: '${text}' in: ${line}`);
  return Number(text);
}

/** `{a="x",b="y\"z"}` starting at `at`: the labels and the index after the closing brace. */
function parseLabels(line: string, at: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = at + 1;
  for (;;) {
    if (line[i] === "}") return [labels, i + 1];
    const eq = line.indexOf("=", i);
    if (eq < 0) throw new Error(`a label without '=': ${line}`);
    const name = line.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name '${name}': ${line}`);
    if (name in labels) throw new Error(`label '${name}' twice: ${line}`);
    if (line[eq + 1] !== '"') throw new Error(`label value not quoted: ${line}`);
    let value = "";
    let j = eq + 2;
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] === "\\") {
        const escaped = line[++j];
        if (escaped === "n") value += "\n";
        else if (escaped === "\\" || escaped === '"') value += escaped;
        else throw new Error(`bad escape in a label value: ${line}`);
      } else value += line[j];
    }
    if (line[j] !== '"') throw new Error(`unterminated label value: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (line[i] === ",") i++;
    else if (line[i] !== "}") throw new Error(`expected ',' or '}' after a label: ${line}`);
  }
}

function familyOf(families: Map<string, Family>, sample: string): Family | undefined {
  const exact = families.get(sample);
  if (exact && exact.type !== "histogram") return exact;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = sample.endsWith(suffix) ? families.get(sample.slice(0, -suffix.length)) : undefined;
    if (base?.type === "histogram" || (base?.type === "summary" && suffix !== "_bucket")) return base;
  }
  return exact?.type === "summary" ? exact : undefined;
}

/** Every line checked; every family has HELP and TYPE before its samples; no series twice; histograms consistent. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  const series = new Set<string>();
  expect(text.endsWith("\n"), "the exposition ends with a line feed").toBe(true);
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const [, keyword, name, ...rest] = line.split(" ");
      if (keyword === "HELP") {
        if (!METRIC_NAME.test(name ?? "")) throw new Error(`bad metric name in: ${line}`);
        helps.set(name!, rest.join(" "));
      } else if (keyword === "TYPE") {
        if (!METRIC_NAME.test(name ?? "") || !TYPES.has(rest[0] ?? "") || rest.length !== 1) throw new Error(`bad TYPE line: ${line}`);
        if (families.has(name!)) throw new Error(`TYPE twice for ${name}`);
        families.set(name!, { name: name!, type: rest[0]!, help: helps.get(name!) ?? "", samples: [] });
      }
      continue;
    }
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    const nameEnd = brace >= 0 && brace < space ? brace : space;
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`bad sample name: ${line}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (line[nameEnd] === "{") {
      const [parsed, after] = parseLabels(line, nameEnd);
      labels = parsed;
      rest = line.slice(after);
    }
    const parts = rest.trim().split(" ");
    if (!rest.startsWith(" ") || parts.length < 1 || parts.length > 2) throw new Error(`bad sample line: ${line}`);
    const value = parseValue(parts[0]!, line);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp: ${line}`);
    const family = familyOf(families, name);
    if (!family) throw new Error(`sample of an undeclared family (no TYPE before it): ${line}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`series twice: ${line}`);
    series.add(key);
    family.samples.push({ name, labels, value });
  }
  for (const family of families.values()) {
    expect(family.help, `HELP of ${family.name}`).not.toBe("");
    if (family.type === "counter") {
      expect(family.name, "a counter's name ends in _total").toMatch(/_total$/);
      for (const sample of family.samples) expect(sample.value, `${family.name} is not negative`).toBeGreaterThanOrEqual(0);
    }
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

/** Per label set: cumulative buckets, ending in le="+Inf", equal to _count. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (sample.name.endsWith("_bucket")) group.buckets.push([parseValue(le!, sample.name), sample.value]);
    else if (sample.name.endsWith("_count")) group.count = sample.value;
    else group.sum = sample.value;
  }
  for (const [key, group] of groups) {
    const where = `${family.name}${key}`;
    expect(group.buckets.length, `${where}: buckets`).toBeGreaterThan(0);
    for (let i = 1; i < group.buckets.length; i++) {
      expect(group.buckets[i]![0], `${where}: le ascending`).toBeGreaterThan(group.buckets[i - 1]![0]);
      expect(group.buckets[i]![1], `${where}: cumulative`).toBeGreaterThanOrEqual(group.buckets[i - 1]![1]);
    }
    expect(group.buckets.at(-1)![0], `${where}: ends at +Inf`).toBe(Infinity);
    expect(group.buckets.at(-1)![1], `${where}: +Inf bucket = _count`).toBe(group.count);
    expect(group.sum, `${where}: _sum`).toBeTypeOf("number");
  }
}

/** The value of one series (labels matched exactly), or undefined. */
function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = familyOf(families, name);
  const want = JSON.stringify(Object.entries(labels).sort());
  return family?.samples.find((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want)?.value;
}

const sumOf = (families: Map<string, Family>, name: string) =>
  (families.get(name)?.samples ?? []).filter((s) => s.name === name).reduce((total, s) => total + s.value, 0);

// ---------------------------------------------------------------------------------------------

async function scrape(url: string, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }, method = "GET") {
  const res = await fetch(`${url}/metrics`, { method, headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function metricsOf(url: string): Promise<Map<string, Family>> {
  const res = await scrape(url);
  expect(res.status).toBe(200);
  return parseExposition(res.text);
}

/** Scrapes until `done` holds (requests are counted once their response has been sent in full). */
const scrapeUntil = (url: string, done: (families: Map<string, Family>) => boolean) => eventually(() => metricsOf(url), done, 15_000);

const http = (method: string, route: string, statusClass: string) => ({ method, route, status_class: statusClass });

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
      expect((await fetch(`${server().api}/no-such-route/lead_0123`, { headers: { authorization: `Bearer ${tenant.key}` } })).status).toBe(404);

      const post = (body: unknown) =>
        fetch(`${server().api}/leads`, {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", "idempotency-key": "metrics-1" },
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
          fetch(`${server().api}/workspace`, { headers: { authorization: `Bearer ${free.key}` } }).then(async (res) => (await res.arrayBuffer(), res.status)),
        );
        statuses.push(...(await Promise.all(batch)));
      }
      expect(statuses.filter((s) => s === 429)).toHaveLength(1);

      const families = await scrapeUntil(server().url, (f) => valueOf(f, "kontor_http_requests_total", http("GET", "/v1/workspace", "4xx")) === 1);
      const count = (labels: Record<string, string>) => valueOf(families, "kontor_http_requests_total", labels);
      expect(count(http("GET", "/v1/leads/{id}", "2xx"))).toBe(2);
      expect(count(http("GET", "/v1/leads/{id}", "4xx"))).toBe(1);
      expect(count(http("GET", "unmatched", "4xx"))).toBe(1);
      // The first lead, Grace and her replay; the conflict is a 4xx.
      expect(count(http("POST", "/v1/leads", "2xx"))).toBe(3);
      expect(count(http("POST", "/v1/leads", "4xx"))).toBe(1);
      expect(count(http("GET", "/v1/workspace", "2xx"))).toBe(FREE);
      expect(count(http("GET", "/v1/workspace", "4xx"))).toBe(1);
      // The latency histogram counts the same requests.
      expect(valueOf(families, "kontor_http_request_duration_seconds_count", http("GET", "/v1/leads/{id}", "2xx"))).toBe(2);
      expect(valueOf(families, "kontor_http_request_duration_seconds_count", http("GET", "/v1/workspace", "2xx"))).toBe(FREE);

      expect(valueOf(families, "kontor_rate_limit_refusals_total", { code: "rate_limit_exceeded", plan: "free" })).toBe(1);
      expect(valueOf(families, "kontor_rate_limit_refusals_total", { code: "rate_limit_exceeded", plan: "pro" })).toBe(0);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "replayed" })).toBe(1);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "conflict" })).toBe(1);
      expect(valueOf(families, "kontor_idempotency_requests_total", { outcome: "in_progress" })).toBe(0);
      const inFlight = await scrapeUntil(server().url, (f) => valueOf(f, "kontor_http_requests_in_flight") === 0);
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
        error: { type: "authentication_error", code: "unauthenticated", message: expect.any(String), request_id: expect.stringMatching(/^req_/) },
      });
      expect(missing.headers.get("x-request-id")).toBe(body.error.request_id);
      expect(missing.text).not.toContain("kontor_");

      const wrong = await scrape(server().url, { authorization: `Bearer ${TOKEN}x` });
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("www-authenticate")).toBe('Bearer realm="kontor-metrics", error="invalid_token"');
      expect(JSON.parse(wrong.text).error.code).toBe("invalid_token");

      const basic = await scrape(server().url, { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` });
      expect([basic.status, JSON.parse(basic.text).error.code]).toEqual([401, "invalid_token"]);

      const post = await scrape(server().url, { authorization: `Bearer ${TOKEN}` }, "POST");
      expect([post.status, post.headers.get("allow"), JSON.parse(post.text).error.code]).toEqual([405, "GET, HEAD", "method_not_allowed"]);

      const head = await scrape(server().url, { authorization: `Bearer ${TOKEN}` }, "HEAD");
      expect([head.status, head.text]).toEqual([200, ""]);
      expect(head.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");

      // The setting itself: too short a token stops the server at start.
      expect(() => loadConfig({ KONTOR_METRICS_TOKEN: "short" })).toThrow(/KONTOR_METRICS_TOKEN must be at least 32 characters/);
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
      expect(await prisma.requestLog.count(), "request-log rows: the two OpenAPI requests only").toBe(rowsBefore + 2);
      expect(await prisma.requestLog.count({ where: { route: { contains: "metrics" } } })).toBe(0);

      const after = await scrapeUntil(server().url, (f) => sumOf(f, "kontor_http_requests_total") >= sumOf(before, "kontor_http_requests_total") + 2);
      expect(sumOf(after, "kontor_http_requests_total") - sumOf(before, "kontor_http_requests_total"), "counted: the two OpenAPI requests only").toBe(2);
      expect(after.get("kontor_http_requests_total")!.samples.some((s) => s.labels.route?.includes("metrics"))).toBe(false);
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
        for (const name of ["kontor_db_pool_connections", "kontor_redis_up"]) expect(families.has(name), name).toBe(false);
      } else {
        expect(valueOf(families, "kontor_redis_up")).toBe(1);
        expect(valueOf(families, "kontor_db_pool_max_connections")).toBe(10);
        expect(valueOf(families, "kontor_db_pool_connections", { state: "in_use" })).toBeGreaterThanOrEqual(0);
      }
      expect(valueOf(families, "kontor_database_up")).toBe(1);
      expect(valueOf(families, "process_resident_memory_bytes")).toBeGreaterThan(10_000_000);
      // The parser is strict enough to fail: a sample without a TYPE, a bad value, an unquoted label.
      expect(() => parseExposition("kontor_x 1\n")).toThrow(/undeclared/);
      expect(() => parseExposition("# HELP a b\n# TYPE a gauge\na one\n")).toThrow(/not a sample value/);
      expect(() => parseExposition('# HELP a b\n# TYPE a gauge\na{x=1} 1\n')).toThrow(/not quoted/);
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
          expect((await api.post("/webhook-endpoints", { url: receiver.url(path), events: ["lead.created"] })).status).toBe(201);
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

    const proxies: Record<string, string>[] = [{ "x-forwarded-for": "203.0.113.9" }, { forwarded: "for=203.0.113.9" }, { "x-real-ip": "203.0.113.9" }];
    for (const header of proxies) {
      const proxied = await scrape(server().url, header);
      expect(proxied.status, JSON.stringify(header)).toBe(404);
      expect(JSON.parse(proxied.text).error).toMatchObject({ type: "invalid_request_error", code: "not_found", message: "No route GET /metrics." });
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

for (const stack of stacks()) {
  describe(`metrics: the access log [${stack}]`, () => {
    it("writes no access-log line for a scrape, one for an API request", { timeout: 120_000 }, async () => {
      const scratch = await provisionStack(stack);
      try {
        const env = { ...scratch.env, KONTOR_ENV: "development", KONTOR_LOG: "info", KONTOR_METRICS_TOKEN: TOKEN };
        const tenant = await tenantIn(env, "Metrics access log");
        const child = await startChildServer(env);
        try {
          for (let i = 0; i < 3; i++) expect((await scrape(child.url)).status).toBe(200);
          expect((await scrape(child.url, {})).status).toBe(401);
          const res = await fetch(`${child.api}/workspace`, { headers: { authorization: `Bearer ${tenant.key}` } });
          expect(res.status).toBe(200);
          const id = res.headers.get("x-request-id");
          const lines = await eventually(
            async () => child.stderr().split("\n").filter((line) => line.includes('"msg":"request"')).map((line) => JSON.parse(line)),
            (found) => found.some((line) => line.request_id === id),
          );
          // The start-up probe of the harness, then our request: never /metrics.
          expect(lines.map((line) => line.route)).not.toContain("/metrics");
          expect(lines.filter((line) => line.route === "/v1/workspace")).toHaveLength(1);
          const metrics = parseExposition((await scrape(child.url)).text);
          expect(valueOf(metrics, "kontor_http_requests_total", http("GET", "/v1/workspace", "2xx"))).toBe(1);
        } finally {
          await child.stop();
        }
      } finally {
        await scratch.drop();
      }
    });
  });
}

/** A request on a connection of its own: node:cluster hands each new connection to the next worker. */
function once(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe.runIf(stacks().includes("postgres"))("metrics in cluster mode [postgres]", () => {
  it("answers every scrape with the sum over the workers, whichever worker takes it", { timeout: 180_000 }, async () => {
    const scratch = await provisionStack("postgres");
    const env = { ...scratch.env, KONTOR_ENV: "development", KONTOR_WORKERS: "2", KONTOR_METRICS_TOKEN: TOKEN };
    const tenant = await tenantIn(env, "Metrics cluster");
    const port = await freePort();
    const { child, exited, stdout, stderr } = spawnMain({ KONTOR_LOG: "silent", ...env, PORT: String(port) });
    try {
      const started = await eventually(async () => stdout().includes("Kontor is running") || child.exitCode !== null, Boolean, 120_000);
      expect(started && child.exitCode === null, `the cluster started: ${stderr()}`).toBe(true);
      const url = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 20; i++) expect((await once(`${url}/v1/workspace`, { authorization: `Bearer ${tenant.key}` })).status).toBe(200);
      for (let i = 0; i < 4; i++) {
        const res = await once(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` });
        expect(res.status).toBe(200);
        const families = parseExposition(res.body);
        // Summed over both workers: 20 requests wherever they went, and two pools of 10.
        expect(valueOf(families, "kontor_http_requests_total", http("GET", "/v1/workspace", "2xx")), `scrape ${i + 1}`).toBe(20);
        expect(valueOf(families, "kontor_db_pool_max_connections")).toBe(20);
        expect(valueOf(families, "kontor_redis_up")).toBe(1);
      }
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
      await scratch.drop();
    }
  });
});

/**
 * For docs/operations/backups.md ("what Redis holds"): the webhook queue in Redis is a schedule, not the record.
 * A retry whose BullMQ job is lost (Redis flushed, or a failover to an empty replica) is found again
 * by the database sweep and delivered; the metrics count both attempts.
 */
describe.runIf(stacks().includes("postgres"))("metrics: a webhook retry whose queue job was lost [postgres]", () => {
  let server: TestServer | undefined;
  let receiver: Receiver | undefined;
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it("is delivered after every BullMQ key of the deployment is deleted: the sweep re-enqueues it from the database", { timeout: 60_000 }, async () => {
    server = await startTestServer("postgres", { KONTOR_WEBHOOK_RETRY_SCHEDULE: "3s", KONTOR_WEBHOOK_JITTER: "0", KONTOR_METRICS_TOKEN: TOKEN });
    receiver = await startReceiver();
    let calls = 0;
    receiver.answer = () => ({ status: ++calls === 1 ? 500 : 200 });
    const tenant = await server.tenant();
    const api = rest(server.api, tenant.key);
    expect((await api.post("/webhook-endpoints", { url: receiver.url("/lost"), events: ["lead.created"] })).status).toBe(201);
    expect((await api.post("/leads", { first_name: "Lost" })).status).toBe(201);
    await receiver.waitFor("/lost", 1);
    await scrapeUntil(server.url, (f) => valueOf(f, "kontor_webhook_attempts_total", { outcome: "retrying" }) === 1);

    // The retry waits in BullMQ's delayed set: delete every key of the deployment's queue.
    const redis = server.running.redis!;
    const prefix = `${redisNamespace(server.running.db.deploymentId)}bull:`;
    let deleted = 0;
    for (let cursor = "0"; ; ) {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      if (keys.length > 0) deleted += await redis.del(...keys);
      cursor = next;
      if (cursor === "0") break;
    }
    expect(deleted, "queue keys deleted").toBeGreaterThan(0);

    const started = Date.now();
    const received = await receiver.waitFor("/lost", 2, 30_000);
    expect(received).toHaveLength(2);
    // Due 3 s after the first attempt; the sweep takes deliveries due for 5 s that no job holds.
    expect(Date.now() - started).toBeLessThan(20_000);
    const families = await scrapeUntil(server.url, (f) => valueOf(f, "kontor_webhook_attempts_total", { outcome: "succeeded" }) === 1);
    expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "retrying" })).toBe(1);
    expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "succeeded" })).toBe(1);
  });
});
