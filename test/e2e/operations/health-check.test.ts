import { expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { e2e } from "../../support/suite.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

/** `n` requests, `parallel` at a time: their statuses in the order sent. */
async function burst(n: number, send: () => Promise<{ status: number }>, parallel = 10): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i += parallel) {
    const batch = Array.from({ length: Math.min(parallel, n - i) }, send);
    statuses.push(...(await Promise.all(batch)).map((r) => r.status));
  }
  return statuses;
}

/** A plain GET (no OpenAPI check, whose document fetch would count against the same address). */
const get = (url: string) =>
  fetch(url).then(async (res) => ({ status: res.status, headers: res.headers, text: await res.text() }));
const health = (url: string) => get(`${url}/health`);

/**
 * The liveness check answers 200 while the process serves, however often it is probed: the
 * per-address limit that stops other requests without a credential never counts it, and it
 * costs the database nothing (no request log row).
 */
e2e("health check: never rate limited", (server) => {
  it("answers 250 rapid requests from one address with 200, while a credential-less route from that address is still limited", async () => {
    const url = server().url;
    const probes = await burst(250, () => health(url));
    expect(probes.filter((status) => status !== 200)).toEqual([]);
    const one = await health(url);
    expect(one).toMatchObject({ status: 200, text: "" });
    expect(one.headers.get("x-ratelimit-remaining")).toBeNull();
    // KONTOR_KEEP_ALIVE_TIMEOUT_MS reaches the server: the in-process test servers keep idle connections 65 s.
    expect(one.headers.get("keep-alive")).toBe("timeout=65");

    // The probes counted nothing: the address still has its whole minute.
    const first = await get(`${server().api}/workspace`);
    expect(first.status).toBe(401);
    expect(Number(first.headers.get("x-ratelimit-remaining"))).toBe(FREE - 1);

    const statuses = await burst(FREE + 4, () => get(`${server().api}/workspace`));
    expect(statuses.filter((s) => s === 401)).toHaveLength(FREE - 1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    const refused = await get(`${server().api}/workspace`);
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error.code).toBe("rate_limit_exceeded");

    // The address is over its limit, and the liveness check still answers.
    const after = await burst(30, () => health(url));
    expect(after.filter((status) => status !== 200)).toEqual([]);

    await flushRequestLogs(server().running.db);
    expect(await server().running.db.prisma.requestLog.count({ where: { route: "/health" } })).toBe(0);
    expect(
      await server().running.db.prisma.requestLog.count({ where: { route: "/v1/workspace", status: 429 } }),
    ).toBeGreaterThanOrEqual(6);
  });
});
