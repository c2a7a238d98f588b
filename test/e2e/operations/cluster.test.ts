/**
 * Cluster mode: `server/main.ts` with KONTOR_WORKERS=2, a primary and two workers on one port,
 * one PostgreSQL database and one Redis. Requests are sent over keep-alive connections pinned to
 * a worker: which worker holds a connection is read from /proc (the socket's inode among each
 * worker's file descriptors), so the server exposes nothing for the test.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS, type PlanName } from "../../../schema/lib/plans.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { type Database, openDatabase } from "../../../server/db/open.ts";
import { ConfigError, loadConfig } from "../../../server/runtime/config.ts";
import { freePort, spawnMain } from "../../support/child-server.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { provisionStack } from "../../support/server.ts";
import { databaseUrl, REDIS_URL, stacks } from "../../support/stacks.ts";

const STACK_TRACE = /^\s+at .+[(:]/m;
const KEY = /ktr_live_[0-9A-Za-z]{43}/g;

type Scratch = Awaited<ReturnType<typeof provisionStack>>;

const spawnServer = (env: NodeJS.ProcessEnv) =>
  spawnMain({ KONTOR_LOG: "info", KONTOR_ACCESS_LOG: "off", ...env });

function killGroup(child: ChildProcess) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/** `promise`, or a failure naming `what` after `timeoutMs`. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out: ${what()}`)), timeoutMs)),
  );
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `read` until it returns a value, or fails naming `what` after `timeoutMs`. */
async function until<T>(read: () => T | undefined, timeoutMs: number, what: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The JSON lines of a server's stderr. */
function logLines(stderr: string): Record<string, any>[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .flatMap((line) => {
      try {
        return [JSON.parse(line)];
      } catch {
        return [];
      }
    });
}

const parentOf = (pid: number) =>
  Number(
    readFileSync(`/proc/${pid}/stat`, "utf8")
      .replace(/^.*\) /s, "")
      .split(" ")[1],
  );

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The process among `pids` holding the server's end of the TCP connection from `clientPort` to `serverPort`. */
function holder(serverPort: number, clientPort: number, pids: number[]): number | undefined {
  let inode: string | undefined;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const port = (address: string) => parseInt(address.split(":").at(-1)!, 16);
      if (port(fields[1]!) === serverPort && port(fields[2]!) === clientPort) inode = fields[9];
    }
  }
  if (!inode) return undefined;
  const socket = `socket:[${inode}]`;
  return pids.find((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`) === socket;
        } catch {
          return false; // closed meanwhile
        }
      });
    } catch {
      return false; // the process is gone
    }
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
  clientPort: number;
}

function send(
  port: number,
  agent: http.Agent | false,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] = "application/json";
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, agent, headers }, (res) => {
      const clientPort = res.socket.localPort!;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown = null;
        try {
          json = JSON.parse(text);
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode!, headers: res.headers, json, clientPort });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${path}: no answer in 20 s`)));
    req.end(body);
  });
}

/** A keep-alive connection held by one worker: every request on it is served by `pid`. */
interface Pinned {
  pid: number;
  request(
    method: string,
    path: string,
    options?: { key?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<Answer>;
  close(): void;
}

/**
 * One connection to each of `pids` (the primary hands new connections to the workers in turn).
 * Probed with `key`'s requests: unauthenticated ones (a 401, a public document) count per client address.
 */
async function pinTo(port: number, pids: number[], key: string): Promise<Pinned[]> {
  const pinned = new Map<number, Pinned>();
  for (let attempt = 0; attempt < 20 && pinned.size < pids.length; attempt++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const { status, clientPort } = await send(port, agent, "GET", "/v1/workspace", { key });
    expect(status).toBe(200);
    const pid = holder(port, clientPort, pids);
    if (pid === undefined || pinned.has(pid)) {
      agent.destroy();
      continue;
    }
    pinned.set(pid, {
      pid,
      async request(method, path, options) {
        const answer = await send(port, agent, method, path, options);
        // The server closes a connection idle for 5 s: a new one could go to the other worker.
        expect(answer.clientPort, "the pinned connection was replaced").toBe(clientPort);
        return answer;
      },
      close: () => agent.destroy(),
    });
  }
  expect([...pinned.keys()].sort(), "a connection held by each worker").toEqual([...pids].sort());
  return pids.map((pid) => pinned.get(pid)!);
}

describe.runIf(stacks().includes("postgres"))("cluster mode: KONTOR_WORKERS=2 on one port [postgres]", () => {
  let scratch: Scratch;
  let receiver: Receiver;
  let db: Database;
  let port: number;
  let server: ReturnType<typeof spawnServer>;
  /** A max-plan key (1200 requests a minute) for the requests that only find out who answers. */
  let probe: string;
  const logs = () => logLines(server.stderr());
  /** Worker number → pid of its latest worker that reported ready. */
  const workers = () =>
    new Map(
      logs()
        .filter((l) => l.msg === "worker ready")
        .map((l) => [l.worker as number, l.pid as number]),
    );
  const detail = () => `stdout: ${server.stdout()}\nstderr: ${server.stderr()}`;

  async function tenant(plan: PlanName, scopes: string[] = [...SCOPES]) {
    const ws = await createWorkspace(db.prisma, {
      name: `Cluster ${randomBytes(3).toString("hex")}`,
      plan,
      ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    return (await createApiKey(db.prisma, { workspaceId: ws.workspace_id, scopes })).key;
  }

  beforeAll(async () => {
    scratch = await provisionStack("postgres");
    receiver = await startReceiver();
    port = await freePort();
    server = spawnServer({
      ...scratch.env,
      PORT: String(port),
      KONTOR_WORKERS: "2",
      KONTOR_ENV: "development",
    });
    await until(
      () => {
        if (server.child.exitCode !== null)
          throw new Error(`the cluster exited with ${server.child.exitCode}: ${detail()}`);
        return logs().some((l) => l.msg === "Kontor listening") && server.stdout().includes("GraphQL:")
          ? true
          : undefined;
      },
      90_000,
      detail,
    );
    db = await openDatabase({ databaseUrl: scratch.env.DATABASE_URL, dataDir: scratch.env.DATA_DIR! });
    probe = await tenant("max");
  });

  afterAll(async () => {
    if (server) killGroup(server.child);
    await db?.close();
    await receiver?.close();
    await scratch?.drop();
  });

  it("starts two workers on the port, and the first start's Demo workspace and banner once", async () => {
    const pids = [...workers().values()];
    expect(pids, detail()).toHaveLength(2);
    expect(new Set(pids).size).toBe(2);
    for (const pid of pids) expect(parentOf(pid)).toBe(server.child.pid);
    expect(logs().filter((l) => l.msg === "Kontor listening")).toMatchObject([
      { port, workers: 2, database: "PostgreSQL" },
    ]);

    const out = server.stdout();
    expect(out.match(/Kontor is running \(development, PostgreSQL, 2 workers\)/g)).toHaveLength(1);
    expect(out.match(/First start/g)).toHaveLength(1);
    const keys = out.match(KEY) ?? [];
    expect(new Set(keys).size, out).toBe(1);
    expect(await db.prisma.workspace.count({ where: { name: "Demo" } })).toBe(1);

    // The printed key works on both workers: each answers on a connection it holds.
    for (const worker of await pinTo(port, pids, probe)) {
      const res = await worker.request("GET", "/v1/workspace", { key: keys[0] });
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ object: "workspace", name: "Demo" });
      worker.close();
    }
  });

  it("shares a rate limit: a free-plan key gets exactly its per-minute limit in sum over both workers, then 429", async () => {
    const key = await tenant("free");
    const limit = PLAN_LIMITS.free.requests_per_minute;
    const [a, b] = await pinTo(port, [...workers().values()], probe);
    const statuses: number[][] = [[], []];
    for (let i = 0; i < (limit + 10) / 2; i++) {
      const [ra, rb] = await Promise.all([
        a!.request("GET", "/v1/workspace", { key }),
        b!.request("GET", "/v1/workspace", { key }),
      ]);
      statuses[0]!.push(ra.status);
      statuses[1]!.push(rb.status);
    }
    const count = (list: number[], status: number) => list.filter((s) => s === status).length;
    const all = statuses.flat();
    expect({ ok: count(all, 200), limited: count(all, 429) }).toEqual({ ok: limit, limited: 10 });
    // Each worker alone saw fewer than the limit succeed, and refused the rest.
    for (const list of statuses) {
      expect(count(list, 200)).toBeLessThan(limit);
      expect(count(list, 429)).toBeGreaterThan(0);
    }
    a!.close();
    b!.close();
  });

  it("shares idempotency: one Idempotency-Key sent to both workers at once creates one lead, and the other worker replays it", async () => {
    const key = await tenant("pro");
    const [a, b] = await pinTo(port, [...workers().values()], probe);
    const name = `Idem ${randomBytes(4).toString("hex")}`;
    const create = (worker: Pinned) =>
      worker.request("POST", "/v1/leads", {
        key,
        body: { full_name: name },
        headers: { "Idempotency-Key": `cluster-${name}` },
      });
    const answers = await Promise.all([create(a!), create(b!)]);
    const originals = answers.filter(
      (res) => res.status === 201 && res.headers["idempotent-replay"] !== "true",
    );
    expect(originals, JSON.stringify(answers.map((r) => [r.status, r.json]))).toHaveLength(1);
    for (const res of answers.filter((r) => r !== originals[0])) {
      // The other came while the first ran (409), or after it (a replay of it).
      if (res.status === 409) expect(res.json.error.code).toBe("idempotency_in_progress");
      else
        expect(res).toMatchObject({
          status: 201,
          headers: { "idempotent-replay": "true" },
          json: originals[0]!.json,
        });
    }
    const creator = answers.indexOf(originals[0]!);
    const other = [a!, b!][1 - creator]!;
    const replay = await create(other);
    expect(replay.status).toBe(201);
    expect(replay.headers["idempotent-replay"]).toBe("true");
    expect(replay.json).toEqual(originals[0]!.json);
    const list = await other.request("GET", "/v1/leads", { key });
    expect(list.json.data.map((lead: { id: string }) => lead.id)).toEqual([originals[0]!.json.id]);
    a!.close();
    b!.close();
  });

  it("delivers each webhook event exactly once: leads created over both workers reach the receiver once each", async () => {
    const key = await tenant("pro");
    const [a, b] = await pinTo(port, [...workers().values()], probe);
    const endpoint = await a!.request("POST", "/v1/webhook-endpoints", {
      key,
      body: { url: receiver.url("/cluster"), events: ["lead.created"] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.json)).toBe(201);
    const n = 12;
    const created = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 ? a! : b!).request("POST", "/v1/leads", { key, body: { full_name: `Hook ${i}` } }),
      ),
    );
    expect(created.map((res) => res.status)).toEqual(Array(n).fill(201));
    const ids = created.map((res) => res.json.id as string).sort();

    await receiver.waitFor("/cluster", n, 30_000);
    // Every delivery succeeded at its first attempt: each claim counts one, so nothing was sent twice.
    let deliveries: { status: string; attempts: number }[] = [];
    for (
      const deadline = Date.now() + 30_000;
      Date.now() < deadline;
      await new Promise((r) => setTimeout(r, 100))
    ) {
      deliveries = (
        await a!.request("GET", `/v1/webhook-deliveries?endpoint_id=${endpoint.json.id}&limit=100`, { key })
      ).json.data;
      if (deliveries.length === n && deliveries.every((d) => d.status === "succeeded")) break;
    }
    expect(deliveries.map((d) => [d.status, d.attempts])).toEqual(Array(n).fill(["succeeded", 1]));
    const received = receiver.on("/cluster");
    expect(received).toHaveLength(n);
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(n);
    expect(received.map((r) => r.json.data.object.id).sort()).toEqual(ids);
    a!.close();
    b!.close();
  });

  it("starts another worker when one is killed (logged, with a back-off), and the port answers throughout", async () => {
    const before = workers();
    const victim = before.get(1)!;
    const survivor = before.get(2)!;
    process.kill(victim, "SIGKILL");
    const died = await until(
      () => logs().find((l) => l.msg === "worker died: starting another" && l.pid === victim),
      15_000,
      detail,
    );
    expect(died).toMatchObject({
      level: "error",
      worker: 1,
      signal: "SIGKILL",
      restart_in_ms: expect.any(Number),
    });
    expect(died.restart_in_ms).toBeGreaterThan(0);

    // From the moment the primary knows, every new connection goes to a live worker until the new one serves.
    let answered = 0;
    let replacement: number | undefined;
    const deadline = Date.now() + 60_000;
    while (replacement === undefined) {
      expect(Date.now(), detail()).toBeLessThan(deadline);
      const res = await send(port, false, "GET", "/v1/workspace", { key: probe });
      expect(res.status).toBe(200);
      answered++;
      const now = workers().get(1);
      if (now !== undefined && now !== victim) replacement = now;
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered).toBeGreaterThan(0);
    expect(alive(victim)).toBe(false);
    expect(parentOf(replacement)).toBe(server.child.pid);
    const key = await tenant("pro");
    for (const worker of await pinTo(port, [replacement, survivor], probe)) {
      expect((await worker.request("GET", "/v1/workspace", { key })).status).toBe(200);
      worker.close();
    }
  });

  it("SIGTERM to the primary stops both workers gracefully and exits 0", async () => {
    const pids = [...workers().values()];
    server.child.kill("SIGTERM");
    const exit = await within(server.exited, 40_000, detail);
    expect(exit, detail()).toEqual({ code: 0, signal: null });
    const stopped = logs().filter((l) => l.msg === "worker stopped");
    expect(stopped.map((l) => [l.pid, l.code]).sort()).toEqual(pids.map((pid) => [pid, 0]).sort());
    // Each worker closed its server and its database itself.
    expect(
      logs()
        .filter((l) => l.msg === "shutting down" && l.worker !== undefined)
        .map((l) => l.worker)
        .sort(),
    ).toEqual([1, 2]);
    for (const pid of pids) expect(alive(pid)).toBe(false);
    await expect(send(port, false, "GET", "/health")).rejects.toThrow(/ECONNREFUSED/);
    expect(server.stderr()).not.toMatch(STACK_TRACE);
    expect(logs().filter((l) => l.level === "error" && l.msg !== "worker died: starting another")).toEqual(
      [],
    );
  });
});

describe.runIf(stacks().includes("postgres"))("cluster mode refuses what it cannot run [postgres]", () => {
  it("KONTOR_WORKERS must be 1–64 or auto, and 2 or more need DATABASE_URL and REDIS_URL", () => {
    const both = { DATABASE_URL: databaseUrl("kontor"), REDIS_URL };
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ KONTOR_WORKERS: "1" }).workers).toBe(1);
    expect(loadConfig({ ...both, KONTOR_WORKERS: "64" }).workers).toBe(64);
    expect(loadConfig({ ...both, KONTOR_WORKERS: "auto" }).workers).toBeGreaterThanOrEqual(1);
    for (const bad of ["0", "65", "1.5", "-2", "two", "2x"]) {
      expect(() => loadConfig({ ...both, KONTOR_WORKERS: bad }), bad).toThrow(
        new ConfigError(`KONTOR_WORKERS must be a whole number from 1 to 64, or auto; got '${bad}'.`),
      );
    }
    expect(() => loadConfig({ KONTOR_WORKERS: "2", REDIS_URL })).toThrow(
      /KONTOR_WORKERS=2 needs DATABASE_URL/,
    );
    expect(() => loadConfig({ KONTOR_WORKERS: "2", DATABASE_URL: both.DATABASE_URL })).toThrow(
      /KONTOR_WORKERS=2 needs REDIS_URL/,
    );
  });

  it("KONTOR_WORKERS=2 without DATABASE_URL stops at start: exit 1, one line saying why, nothing forked", async () => {
    const server = spawnServer({
      KONTOR_WORKERS: "2",
      REDIS_URL,
      DATA_DIR: "/nonexistent/kontor-cluster-test",
      PORT: "0",
    });
    try {
      const exit = await within(server.exited, 30_000, () => server.stderr());
      expect(exit.code, server.stderr()).toBe(1);
      expect(server.stderr()).toBe(
        "kontor: KONTOR_WORKERS=2 needs DATABASE_URL: the embedded database belongs to one process, so the workers must share a PostgreSQL server. Set DATABASE_URL, or KONTOR_WORKERS=1.\n",
      );
      expect(server.stdout()).toBe("");
    } finally {
      killGroup(server.child);
    }
  });

  it("gives up when the workers cannot start: exit 1 with the worker's reason", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "kontor-cluster-"));
    const server = spawnServer({
      KONTOR_WORKERS: "2",
      REDIS_URL,
      DATABASE_URL: databaseUrl(`kontor_missing_${randomBytes(4).toString("hex")}`),
      DATA_DIR: dataDir,
      PORT: String(await freePort()),
    });
    try {
      const exit = await within(server.exited, 60_000, () => server.stderr());
      expect(exit.code, server.stderr()).toBe(1);
      expect(server.stderr()).toMatch(
        /^kontor: worker [12]: could not start: database "kontor_missing_\w+" does not exist$/m,
      );
      expect(server.stderr()).not.toMatch(STACK_TRACE);
      expect(server.stdout()).toBe("");
    } finally {
      killGroup(server.child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
