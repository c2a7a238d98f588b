import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { SIGN_UPS_PER_IP } from "../../../server/auth/sessions.ts";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { spawnMain } from "../../support/child-server.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { raw } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const FREE = PLAN_LIMITS.free.requests_per_minute;

/** The server's address as 127.0.0.1 (never a name): the test itself is the "proxy" on loopback. */
const base = (server: TestServer) => server.url.replace("//localhost:", "//127.0.0.1:");

/**
 * A documentation address (RFC 5737) no other test uses, so no two share a bucket (each suite's
 * server has a database, and so a Redis namespace, of its own).
 */
let last = 0;
const client = (net: "192.0.2" | "198.51.100" | "203.0.113") => `${net}.${++last}`;

/** An unauthenticated request (401): counted per client address at the free rate. */
async function anonymous(server: TestServer, forwardedFor?: string) {
  const res = await raw(`${base(server)}/v1/workspace`, {
    headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
  });
  expect([401, 429]).toContain(res.status);
  return {
    status: res.status,
    remaining: Number(res.headers.get("x-ratelimit-remaining")),
    requestId: res.headers.get("x-request-id")!,
  };
}

async function loggedAddress(server: TestServer, requestId: string): Promise<string | null | undefined> {
  await flushRequestLogs(server.running.db);
  return (await server.running.db.prisma.requestLog.findUnique({ where: { id: requestId } }))?.clientIp;
}

const scrape = (server: TestServer, headers: Record<string, string>) =>
  raw(`${base(server)}/metrics`, { headers });

e2e(
  "KONTOR_TRUST_PROXY=loopback,10.0.0.0/8",
  (server) => {
    it("gives two forwarded clients separate per-address limits", async () => {
      const one = client("203.0.113");
      let two = client("198.51.100");
      const first = await anonymous(server(), one);
      expect(first.remaining).toBe(FREE - 1);
      expect((await anonymous(server(), one)).remaining).toBe(FREE - 2);
      expect((await anonymous(server(), two)).remaining).toBe(FREE - 1);

      // The first client spends its bucket; the second, and the proxy itself, still get in.
      const statuses: number[] = [];
      const total = FREE - 2 + 3;
      for (let i = 0; i < total; i += 10) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(10, total - i) }, () => anonymous(server(), one)),
        );
        statuses.push(...batch.map((r) => r.status));
      }
      expect(statuses.filter((s) => s === 401)).toHaveLength(FREE - 2);
      expect(statuses.filter((s) => s === 429)).toHaveLength(3);
      const other = await anonymous(server(), two);
      expect(other).toMatchObject({ status: 401, remaining: FREE - 2 });
      expect((await anonymous(server())).status).toBe(401);
      // IPv6 clients too, in any spelling of one address.
      two = "2001:db8::abcd";
      expect((await anonymous(server(), two)).remaining).toBe(FREE - 1);
      expect((await anonymous(server(), "2001:DB8:0:0:0:0:0:ABCD")).remaining).toBe(FREE - 2);
    });

    it("records the forwarded address in the request log, with a key and without", async () => {
      const tenant = await server().tenant();
      const address = client("192.0.2");
      const keyed = await raw(`${base(server())}/v1/workspace`, {
        headers: { authorization: `Bearer ${tenant.key}`, "x-forwarded-for": address },
      });
      expect(keyed.status).toBe(200);
      expect(await loggedAddress(server(), keyed.headers.get("x-request-id")!)).toBe(address);
      const unkeyed = await anonymous(server(), `::ffff:${address}`);
      expect(await loggedAddress(server(), unkeyed.requestId)).toBe(address);
      const direct = await anonymous(server());
      expect(await loggedAddress(server(), direct.requestId)).toBe("127.0.0.1");
    });

    it("takes the rightmost untrusted hop of a chain, not what the client wrote before it", async () => {
      const hop = client("198.51.100");
      // The client wrote the first entry; the untrusted hop forwarded it to a trusted 10.x proxy, then to us.
      const first = await anonymous(server(), `${client("203.0.113")}, ${hop}, 10.1.2.3`);
      expect(first.remaining).toBe(FREE - 1);
      expect(await loggedAddress(server(), first.requestId)).toBe(hop);
      // Another made-up client entry through the same hop is the same bucket.
      const second = await anonymous(server(), `127.0.0.1, ${hop}, 10.9.8.7`);
      expect(second.remaining).toBe(FREE - 2);
      // When every hop is trusted, the leftmost is the client.
      const inner = "10.20.30.40";
      const third = await anonymous(server(), `${inner}, 10.1.2.3`);
      expect(await loggedAddress(server(), third.requestId)).toBe(inner);
      // An entry that is no address names nobody: the trusted proxy that sent it is the client.
      const garbage = await anonymous(server(), "not-an-address");
      expect(await loggedAddress(server(), garbage.requestId)).toBe("127.0.0.1");
    });

    it("counts anonymous agent registrations per forwarded client", async () => {
      const register = (address: string) =>
        raw(`${base(server())}/agent/identity`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": address },
          body: JSON.stringify({ type: "anonymous", agent_name: "Proxied agent" }),
        });
      const one = client("203.0.113");
      for (let i = 0; i < 2; i++) expect((await register(one)).status).toBe(200);
      const refused = await register(one);
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ error: "rate_limit_exceeded" });
      expect((await register(client("198.51.100"))).status).toBe(200);
    });

    it("counts dashboard sign-ups per forwarded client", async () => {
      const signUp = async (address: string) => {
        const visitor = new DashboardClient(base(server()));
        const headers = { "x-forwarded-for": address };
        await visitor.api("GET", "/session", undefined, { headers });
        return visitor.api(
          "POST",
          "/sign-up",
          { email: `proxied-${randomBytes(5).toString("hex")}@example.com`, password: PASSWORD },
          { headers },
        );
      };
      const one = client("192.0.2");
      for (let i = 0; i < SIGN_UPS_PER_IP; i++) expect((await signUp(one)).status).toBe(201);
      const limited = await signUp(one);
      expect(limited.status).toBe(429);
      expect(limited.json.error.code).toBe("rate_limit_exceeded");
      expect((await signUp(client("203.0.113"))).status).toBe(201);
    });

    it("serves /metrics to a forwarded client only when trusted proxies vouch that every hop was on this machine", async () => {
      expect((await scrape(server(), {})).status).toBe(200);
      expect((await scrape(server(), { "x-forwarded-for": "127.0.0.1" })).status).toBe(200);
      expect((await scrape(server(), { "x-forwarded-for": client("203.0.113") })).status).toBe(404);
      expect((await scrape(server(), { "x-forwarded-for": "127.0.0.1, 10.0.0.2" })).status).toBe(404);
      expect(
        (await scrape(server(), { "x-forwarded-for": "127.0.0.1", "x-real-ip": "203.0.113.9" })).status,
      ).toBe(404);
      expect((await scrape(server(), { forwarded: "for=127.0.0.1" })).status).toBe(404);
    });
  },
  { KONTOR_TRUST_PROXY: "loopback,10.0.0.0/8", KONTOR_ANONYMOUS_AGENTS_PER_HOUR: "2" },
);

e2e("KONTOR_TRUST_PROXY unset (the default)", (server) => {
  it("ignores a spoofed X-Forwarded-For: one bucket and the socket's address in the log", async () => {
    expect(server().config.trustProxy).toEqual([]);
    // The first answer checked against the OpenAPI document fetches it (one more request from here).
    await anonymous(server());
    const first = await anonymous(server(), client("203.0.113"));
    const second = await anonymous(server(), client("198.51.100"));
    const third = await anonymous(server());
    expect(second.remaining).toBe(first.remaining - 1);
    expect(third.remaining).toBe(first.remaining - 2);
    for (const { requestId } of [first, second, third])
      expect(await loggedAddress(server(), requestId)).toBe("127.0.0.1");
  });

  it("keeps /metrics from forwarded requests", async () => {
    expect((await scrape(server(), {})).status).toBe(200);
    expect((await scrape(server(), { "x-forwarded-for": "127.0.0.1" })).status).toBe(404);
  });
});

describe("a bad KONTOR_TRUST_PROXY", () => {
  /** `server/main.ts` with the setting: its exit code and stderr (it stops before opening anything). */
  async function start(setting: string): Promise<{ code: number | null; stderr: string }> {
    const dataDir = mkdtempSync(join(tmpdir(), "kontor-trust-proxy-"));
    try {
      const { child, exited, stderr } = spawnMain({
        KONTOR_LOG: "silent",
        DATA_DIR: dataDir,
        PORT: "0",
        KONTOR_TRUST_PROXY: setting,
      });
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      const { code } = await exited;
      clearTimeout(timer);
      return { code, stderr: stderr() };
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  it.each([
    ["1", "KONTOR_TRUST_PROXY does not take a hop count ('1')"],
    ["10.0.0.0/0", "KONTOR_TRUST_PROXY entry '10.0.0.0/0' holds every address"],
    [
      "proxy.internal",
      "KONTOR_TRUST_PROXY entry 'proxy.internal' is neither loopback, an IP address nor a CIDR range",
    ],
  ])("stops the server at start: %j", async (setting, message) => {
    const { code, stderr } = await start(setting);
    expect(code).toBe(1);
    expect(stderr).toContain(`kontor: ${message}`);
    expect(stderr).toContain(
      "use off, loopback, or a comma-separated list of the proxies' IP addresses and CIDR ranges",
    );
  });
});
