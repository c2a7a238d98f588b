/**
 * Revocation across the processes of one deployment (PostgreSQL + Redis; the embedded database
 * belongs to one process). The test process runs server A; server B and the CLI are processes of
 * their own, started as `npm start` and `npm run kontor` start them. B's cache is warmed, the
 * credential is revoked through A (or the CLI), and B must refuse it within 1 s of the answer.
 * With B's Redis stopped, B stops serving cached credentials, so a revocation it cannot hear of
 * still holds at once; once Redis is back, B hears again.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { registerAnonymous } from "../../support/agent-flow.ts";
import { type ChildServer, freePort, spawnEntry, startChildServer } from "../../support/child-server.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { raw } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

/** How soon another process must refuse a revoked credential. */
const BOUND_MS = 1_000;
const unique = (label: string) => `${label}-${randomBytes(4).toString("hex")}@example.com`;

/** Polls `url` with `headers` until it answers 401, and says how long that took. */
async function msUntilRefused(
  url: string,
  headers: Record<string, string>,
  boundMs = BOUND_MS * 5,
): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    if (res.status === 401) return Date.now() - started;
    expect(res.status).toBe(200);
    if (Date.now() - started > boundMs) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A redis-server of the test's own, on a free loopback port, that a test may stop and start again. */
async function privateRedis() {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      { stdio: "ignore" },
    );
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const probe = spawn("redis-cli", ["-p", String(port), "ping"], {
          stdio: ["ignore", "pipe", "ignore"],
        });
        let out = "";
        probe.stdout!.on("data", (d: Buffer) => (out += d));
        probe.once("close", () => resolve(out.includes("PONG")));
      });
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error("redis-server did not start");
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child!.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, start, stop };
}

const postgres = stacks().includes("postgres");

describe.runIf(postgres)("revocation across processes [postgres]", () => {
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  let a: RunningServer;
  let b: ChildServer;
  let workspaceId: string;
  let ownerEmail: string;

  beforeAll(async () => {
    scratch = await provisionStack("postgres");
    a = await startServer(
      loadConfig({ PORT: "0", KONTOR_ENV: "development", KONTOR_LOG: "silent", ...scratch.env }),
      { publicUrlFromPort: true },
    );
    b = await startChildServer({ ...scratch.env, KONTOR_ENV: "development" });
    ownerEmail = unique("owner");
    workspaceId = (
      await createWorkspace(a.db.prisma, {
        name: "Two processes",
        plan: "pro",
        ownerEmail,
        ownerPassword: PASSWORD,
      })
    ).workspace_id;
  }, 120_000);

  afterAll(async () => {
    await b?.stop();
    await a?.close();
    await scratch?.drop();
  });

  /** A key warm in B's cache. */
  async function keyWarmOnB() {
    const key = await createApiKey(a.db.prisma, { workspaceId, scopes: ["leads.read"] });
    for (let i = 0; i < 2; i++)
      expect(
        (await raw(`${b.api}/workspace`, { headers: { authorization: `Bearer ${key.key}` } })).status,
      ).toBe(200);
    return key;
  }

  /** An anonymous agent's access token, from A, warm in B's cache. */
  async function agentWarmOnB() {
    const agent = await registerAnonymous({ url: a.url } as never);
    const exchanged = await raw(`${a.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
        assertion: agent.identity_assertion,
      }).toString(),
    });
    expect(exchanged.status, exchanged.text).toBe(200);
    const token = exchanged.json.access_token as string;
    for (let i = 0; i < 2; i++)
      expect(
        (await raw(`${b.api}/workspace`, { headers: { authorization: `Bearer ${token}` } })).status,
      ).toBe(200);
    return { agent, token };
  }

  it("an API key revoked in A's dashboard is refused by B within 1 s", async () => {
    const key = await keyWarmOnB();
    const owner = new DashboardClient(a.url);
    expect((await owner.signIn(ownerEmail)).status).toBe(200);
    const revoked = await owner.graphql(`mutation ($id: ID!) { revokeApiKey(id: $id) { id } }`, {
      id: key.id,
    });
    expect(revoked.json.errors).toBeUndefined();
    expect(
      await msUntilRefused(`${b.api}/workspace`, { authorization: `Bearer ${key.key}` }),
    ).toBeLessThanOrEqual(BOUND_MS);
    // And A, which answered, never accepts it again.
    expect(
      (await raw(`${a.url}/v1/workspace`, { headers: { authorization: `Bearer ${key.key}` } })).status,
    ).toBe(401);
  });

  it("an API key revoked by the CLI, a process of its own, is refused by B within 1 s", async () => {
    const key = await keyWarmOnB();
    const cli = spawnEntry("server/cli.ts", { ...scratch.env, KONTOR_LOG: "silent" }, [
      "keys",
      "revoke",
      key.id,
      "--json",
    ]);
    const exit = await cli.exited;
    expect(exit.code, cli.stderr()).toBe(0);
    expect(JSON.parse(cli.stdout())).toEqual({ id: key.id, revoked: true });
    expect(
      await msUntilRefused(`${b.api}/workspace`, { authorization: `Bearer ${key.key}` }),
    ).toBeLessThanOrEqual(BOUND_MS);
  });

  it("an agent token revoked at A's /oauth2/revoke is refused by B within 1 s", async () => {
    const { token } = await agentWarmOnB();
    const revoked = await raw(`${a.url}/oauth2/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${token}`,
    });
    expect(revoked.status).toBe(200);
    expect(
      await msUntilRefused(`${b.api}/workspace`, { authorization: `Bearer ${token}` }),
    ).toBeLessThanOrEqual(BOUND_MS);
  });

  it("a registration revoked at A with its identity assertion: B refuses its tokens within 1 s", async () => {
    const { agent, token } = await agentWarmOnB();
    const revoked = await raw(`${a.url}/oauth2/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${agent.identity_assertion}`,
    });
    expect(revoked.status).toBe(200);
    expect(
      await msUntilRefused(`${b.api}/workspace`, { authorization: `Bearer ${token}` }),
    ).toBeLessThanOrEqual(BOUND_MS);
  });

  it("a session signed out on A is refused by B at once", async () => {
    const owner = new DashboardClient(a.url);
    expect((await owner.signIn(ownerEmail)).status).toBe(200);
    const headers = { cookie: owner.cookieHeader(), "x-csrf-token": owner.csrf };
    expect((await raw(`${b.api}/workspace`, { headers })).status).toBe(200);
    expect((await owner.api("POST", "/sign-out")).status).toBe(204);
    expect((await raw(`${b.api}/workspace`, { headers })).status).toBe(401);
  });

  describe("with Redis stopped for a moment", () => {
    let redis: Awaited<ReturnType<typeof privateRedis>>;
    let c: ChildServer;

    beforeAll(async () => {
      redis = await privateRedis();
      c = await startChildServer({ ...scratch.env, REDIS_URL: redis.url, KONTOR_ENV: "development" });
    }, 120_000);

    afterAll(async () => {
      await c?.stop();
      await redis?.stop();
    });

    const onC = (key: string) => raw(`${c.api}/workspace`, { headers: { authorization: `Bearer ${key}` } });

    it("a process that cannot hear of revocations serves no cached credential; once Redis is back it hears again", async () => {
      const key = await createApiKey(a.db.prisma, { workspaceId, scopes: ["leads.read"] });
      expect((await onC(key.key)).status).toBe(200);
      await redis.stop();
      // C's subscription is gone: a revocation written now reaches no process's channel.
      await a.db.prisma.apiKey.update({ where: { id: key.id }, data: { revokedAt: new Date() } });
      expect(
        await msUntilRefused(`${c.api}/workspace`, { authorization: `Bearer ${key.key}` }),
      ).toBeLessThanOrEqual(BOUND_MS);

      await redis.start();
      const next = await createApiKey(a.db.prisma, { workspaceId, scopes: ["leads.read"] });
      // C subscribes again (ioredis reconnects on its own); a revocation published then reaches it.
      const publisher = new (await import("ioredis")).Redis(redis.url);
      try {
        const deadline = Date.now() + 10_000;
        while (
          (
            await publisher.pubsub(
              "NUMSUB",
              `kontor:{${(await a.db.prisma.deployment.findFirstOrThrow()).id}}:revocations`,
            )
          )[1] === 0
        ) {
          expect(Date.now()).toBeLessThan(deadline);
          await new Promise((r) => setTimeout(r, 50));
        }
        expect((await onC(next.key)).status).toBe(200);
        await a.db.prisma.apiKey.update({ where: { id: next.id }, data: { revokedAt: new Date() } });
        // Written behind the bus's back: C, hearing again, serves its cached copy (this is what the bus is for).
        expect((await onC(next.key)).status).toBe(200);
        const namespace = `kontor:{${(await a.db.prisma.deployment.findFirstOrThrow()).id}}:`;
        await publisher.publish(
          `${namespace}revocations`,
          JSON.stringify({ from: "test", kind: "api_key", ids: [next.id] }),
        );
        expect(
          await msUntilRefused(`${c.api}/workspace`, { authorization: `Bearer ${next.key}` }),
        ).toBeLessThanOrEqual(BOUND_MS);
      } finally {
        publisher.disconnect();
      }
    });
  });
});
