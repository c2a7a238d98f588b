/** /metrics of real deployments: a server process (its access log), a cluster of workers, a Redis that lost the webhook queue's jobs. */
import { request } from "node:http";
import { afterAll, describe, expect, it } from "vitest";
import { redisNamespace } from "../../../server/runtime/redis.ts";
import { freePort, spawnMain, startChildServer } from "../../support/child-server.ts";
import { rest } from "../../support/http.ts";
import { eventually, type Receiver, startReceiver } from "../../support/receiver.ts";
import { provisionStack, startTestServer, type TestServer, tenantIn } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { http, parseExposition, scrape, scrapeUntil, TOKEN, valueOf } from "./support.ts";

for (const stack of stacks()) {
  describe(`metrics: the access log [${stack}]`, () => {
    it("writes no access-log line for a scrape, one for an API request", { timeout: 120_000 }, async () => {
      const scratch = await provisionStack(stack);
      try {
        const env = {
          ...scratch.env,
          KONTOR_ENV: "development",
          KONTOR_LOG: "info",
          KONTOR_METRICS_TOKEN: TOKEN,
        };
        const tenant = await tenantIn(env, "Metrics access log");
        const child = await startChildServer(env);
        try {
          for (let i = 0; i < 3; i++) expect((await scrape(child.url)).status).toBe(200);
          expect((await scrape(child.url, {})).status).toBe(401);
          const res = await fetch(`${child.api}/workspace`, {
            headers: { authorization: `Bearer ${tenant.key}` },
          });
          expect(res.status).toBe(200);
          const id = res.headers.get("x-request-id");
          const lines = await eventually(
            async () =>
              child
                .stderr()
                .split("\n")
                .filter((line) => line.includes('"msg":"request"'))
                .map((line) => JSON.parse(line)),
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
  it("answers every scrape with the sum over the workers, whichever worker takes it", {
    timeout: 180_000,
  }, async () => {
    const scratch = await provisionStack("postgres");
    const env = {
      ...scratch.env,
      KONTOR_ENV: "development",
      KONTOR_WORKERS: "2",
      KONTOR_METRICS_TOKEN: TOKEN,
    };
    const tenant = await tenantIn(env, "Metrics cluster");
    const port = await freePort();
    const { child, exited, stdout, stderr } = spawnMain({ KONTOR_LOG: "silent", ...env, PORT: String(port) });
    try {
      const started = await eventually(
        async () => stdout().includes("Kontor is running") || child.exitCode !== null,
        Boolean,
        120_000,
      );
      expect(started && child.exitCode === null, `the cluster started: ${stderr()}`).toBe(true);
      const url = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 20; i++)
        expect((await once(`${url}/v1/workspace`, { authorization: `Bearer ${tenant.key}` })).status).toBe(
          200,
        );
      for (let i = 0; i < 4; i++) {
        const res = await once(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` });
        expect(res.status).toBe(200);
        const families = parseExposition(res.body);
        // Summed over both workers: 20 requests wherever they went, and two pools of 10.
        expect(
          valueOf(families, "kontor_http_requests_total", http("GET", "/v1/workspace", "2xx")),
          `scrape ${i + 1}`,
        ).toBe(20);
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
describe.runIf(stacks().includes("postgres"))(
  "metrics: a webhook retry whose queue job was lost [postgres]",
  () => {
    let server: TestServer | undefined;
    let receiver: Receiver | undefined;
    afterAll(async () => {
      await server?.close();
      await receiver?.close();
    });

    it("is delivered after every BullMQ key of the deployment is deleted: the sweep re-enqueues it from the database", {
      timeout: 60_000,
    }, async () => {
      server = await startTestServer("postgres", {
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "3s",
        KONTOR_WEBHOOK_JITTER: "0",
        KONTOR_METRICS_TOKEN: TOKEN,
      });
      receiver = await startReceiver();
      let calls = 0;
      receiver.answer = () => ({ status: ++calls === 1 ? 500 : 200 });
      const tenant = await server.tenant();
      const api = rest(server.api, tenant.key);
      expect(
        (await api.post("/webhook-endpoints", { url: receiver.url("/lost"), events: ["lead.created"] }))
          .status,
      ).toBe(201);
      expect((await api.post("/leads", { first_name: "Lost" })).status).toBe(201);
      await receiver.waitFor("/lost", 1);
      await scrapeUntil(
        server.url,
        (f) => valueOf(f, "kontor_webhook_attempts_total", { outcome: "retrying" }) === 1,
      );

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
      const families = await scrapeUntil(
        server.url,
        (f) => valueOf(f, "kontor_webhook_attempts_total", { outcome: "succeeded" }) === 1,
      );
      expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "retrying" })).toBe(1);
      expect(valueOf(families, "kontor_webhook_attempts_total", { outcome: "succeeded" })).toBe(1);
    });
  },
);
