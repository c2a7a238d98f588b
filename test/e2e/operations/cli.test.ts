/**
 * docs/operations/configuration.md: the operator CLI (`server/cli.ts`) and the server's start-up (`server/main.ts`) on
 * both stacks. Servers are real child processes; CLI commands run through `runCli` in this process
 * (a process of their own where the process is what is tested: exit status, streams, a fresh
 * database), a different process from the server's either way. Each stack gets its own scratch databases:
 *   A: the CLI (migrate, bad arguments, workspace and key creation, revocation, the embedded lock);
 *   B: the first start in development (demo seed), a second start and data surviving restarts;
 *   C: a start in production (no seed) and a start on a port in use.
 */
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verify } from "@node-rs/argon2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { openDatabase, type Database } from "../../../server/db/open.ts";
import { MIGRATIONS_DIR } from "../../../server/db/migrate.ts";
import { childEnv, freePort, spawnEntry } from "../../support/child-server.ts";
import { raw, rest } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { controlSocketPath } from "../../../server/control/protocol.ts";
import { runCli, type CliIO } from "../../../server/control/run.ts";

const MIGRATIONS = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const STACK_TRACE = /^\s+at .+[(:]/m;
const KEY = /ktr_live_[0-9A-Za-z]{43}/;

type Scratch = Awaited<ReturnType<typeof provisionStack>>;


/** Every child runs in its own process group (so a stuck child and anything it started die together): kill the group. */
const children = new Set<ChildProcess>();
function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL") {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
/** Servers a whole describe shares: killed by its afterAll, not after each test. */
const kept = new Set<ChildProcess>();
function killAll(includingKept = true) {
  for (const child of children) {
    if (!includingKept && kept.has(child)) continue;
    killGroup(child);
    children.delete(child);
  }
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command the way `npm run kontor` does, in this process: `runCli` with the child's
 * environment, its lines collected as the process would print them. A hang fails the test.
 */
async function cli(scratch: Pick<Scratch, "env">, args: string[], timeoutMs = 45_000): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  // the scratch database only, nothing inherited that could point elsewhere: a child's environment
  const io: CliIO = { env: childEnv(scratch.env), out: (line) => (stdout += `${line}\n`), err: (line) => (stderr += `${line}\n`) };
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`kontor ${args.join(" ")} did not finish in ${timeoutMs} ms (hang).\nstdout: ${stdout}\nstderr: ${stderr}`)), timeoutMs);
  });
  try {
    const code = await Promise.race([runCli(args, io), hang]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** An entry point in a process of its own (spawnEntry), tracked so that a failed test's leftovers die. */
function spawnChild(entry: "server/main.ts" | "server/cli.ts", scratch: Pick<Scratch, "env">, extra: NodeJS.ProcessEnv = {}, args: string[] = []) {
  const spawned = spawnEntry(entry, { ...scratch.env, ...extra }, args);
  children.add(spawned.child);
  const exited = spawned.exited.then(({ code }) => {
    children.delete(spawned.child);
    return code;
  });
  return { ...spawned, exited };
}

/**
 * Runs `node --import tsx server/cli.ts …args` (package.json's `kontor` script) as its own process, for
 * what only a process shows: its exit status and its streams. Killed after `timeoutMs`.
 */
async function cliProcess(scratch: Pick<Scratch, "env">, args: string[], timeoutMs = 45_000): Promise<CliResult> {
  const run = spawnChild("server/cli.ts", scratch, {}, args);
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      killGroup(run.child);
      reject(new Error(`kontor ${args.join(" ")} did not finish in ${timeoutMs} ms (hang).\nstdout: ${run.stdout()}\nstderr: ${run.stderr()}`));
    }, timeoutMs);
  });
  try {
    const code = await Promise.race([run.exited, hang]);
    return { code, stdout: run.stdout(), stderr: run.stderr() };
  } finally {
    clearTimeout(timer);
  }
}

/** `--json` output: exactly one line holding one JSON object. */
function oneJson(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!);
  expect(parsed).toBeTypeOf("object");
  expect(Array.isArray(parsed)).toBe(false);
  return parsed;
}

/**
 * A failed command: exit 1 with one line on stderr (a failure it explains), or exit 2 with the
 * message and the usage (bad arguments); no stack trace, nothing on stdout that looks like success.
 */
function expectFailure(result: CliResult, message: RegExp, exit: 1 | 2) {
  const detail = `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  expect(result.code, detail).toBe(exit);
  expect(result.stderr, detail).toMatch(message);
  expect(result.stderr, detail).toMatch(/^kontor: /);
  expect(result.stderr, detail).not.toMatch(STACK_TRACE);
  if (exit === 1) expect(result.stderr.trimEnd().split("\n"), detail).toHaveLength(1);
  else expect(result.stderr, detail).toContain("Usage: npm run --silent kontor");
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines.length, detail).toBeLessThanOrEqual(1);
  if (lines.length === 1) {
    const parsed = JSON.parse(lines[0]!);
    expect(Object.keys(parsed), detail).toEqual(["error"]);
    expect(parsed.error).toBeTypeOf("string");
  }
}

interface Server {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:PORT` */
  url: string;
  api: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit status (the whole stdout is complete afterwards). */
  stop(): Promise<number | null>;
}

/** Starts `tsx server/main.ts` and waits until the public discovery document answers. */
async function startServer(scratch: Scratch, extra: NodeJS.ProcessEnv = {}): Promise<Server> {
  const port = await freePort();
  const { child, exited, stdout, stderr } = spawnChild("server/main.ts", scratch, { PORT: String(port), ...extra });
  let done = false;
  void exited.then(() => (done = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (done) throw new Error(`server exited with ${child.exitCode} before it was ready.\nstdout: ${stdout()}\nstderr: ${stderr()}`);
    if (Date.now() > deadline) {
      killGroup(child);
      throw new Error(`server not ready in 60 s.\nstdout: ${stdout()}\nstderr: ${stderr()}`);
    }
    try {
      const res = await fetch(`${url}/v1/.well-known/oauth-protected-resource`, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(150);
  }
  // main.ts prints its banner once listening; give it the moment it needs.
  await waitFor(() => stdout().includes("GraphQL:"), 15_000, () => `no banner on stdout: ${stdout()}\nstderr: ${stderr()}`);
  return {
    child,
    port,
    url,
    api: `${url}/v1`,
    stdout,
    stderr,
    stop: async () => {
      // as a supervisor does (docker stop, kill PID): the signal goes to the process it started
      child.kill("SIGTERM");
      const timer = setTimeout(() => killGroup(child), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs: number, describe: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${describe()}`);
    await sleep(100);
  }
}

/** Reads the database directly (taking the embedded lock like any other process: no server may run). */
async function inspect<T>(scratch: Scratch, read: (db: Database["prisma"]) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl: scratch.env.DATABASE_URL, dataDir: scratch.env.DATA_DIR! });
  try {
    return await read(db.prisma);
  } finally {
    await db.close();
  }
}

const counts = (scratch: Scratch) =>
  inspect(scratch, async (db) => ({
    workspaces: await db.workspace.count(),
    users: await db.user.count(),
    memberships: await db.membership.count(),
    api_keys: await db.apiKey.count(),
  }));

for (const stack of stacks()) {
  describe(`cli and start-up [${stack}]`, () => {
    afterEach(() => {
      // a test that failed half-way must not leave a server holding the database
      killAll(false);
    });
    afterAll(() => {
      killAll();
    });

    describe("CLI", () => {
      let scratch: Scratch;
      const workspaces: Record<string, { workspace_id: string; owner_id: string; email: string; password: string }> = {};
      let scopedKey: { id: string; key: string };
      let fullKey: { id: string; key: string };

      beforeAll(async () => {
        scratch = await provisionStack(stack, { empty: true });
      });
      afterAll(async () => {
        killAll();
        await scratch?.drop();
      });

      it("migrate applies every migration on a fresh database, and nothing the second time", { timeout: 90_000 }, async () => {
        const first = await cliProcess(scratch, ["migrate", "--json"]);
        expect(first.code, first.stderr).toBe(0);
        expect(oneJson(first)).toEqual({ applied: MIGRATIONS });
        expect(MIGRATIONS.length).toBeGreaterThan(0);

        const second = await cli(scratch, ["migrate", "--json"]);
        expect(second.code, second.stderr).toBe(0);
        expect(oneJson(second)).toEqual({ applied: [] });

        const text = await cli(scratch, ["migrate"]);
        expect(text.code, text.stderr).toBe(0);
        expect(text.stdout).toMatch(/up to date/i);
      });

      const WS = "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6";
      const badCases: [string, string[], RegExp, 1 | 2][] = [
        ["unknown command", ["frobnicate", "--json"], /unknown command 'frobnicate'/i, 2],
        ["unknown sub-command", ["workspace", "delete", "--json"], /unknown command 'workspace delete'/i, 2],
        ["a group without its sub-command", ["keys", "--json"], /keys needs a sub-command: create, list, revoke/, 2],
        ["missing --name", ["workspace", "create", "--plan", "pro", "--owner-email", "a@example.com", "--json"], /--name/, 2],
        ["missing --plan", ["workspace", "create", "--name", "Acme", "--owner-email", "a@example.com", "--json"], /--plan/, 2],
        ["missing --owner-email", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--json"], /--owner-email/, 2],
        ["bad plan", ["workspace", "create", "--name", "Acme", "--plan", "gold", "--owner-email", "a@example.com", "--json"], /--plan.*free/, 2],
        ["bad e-mail", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "not-an-email", "--json"], /e-?mail/i, 2],
        ["short password", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "a@example.com", "--owner-password", "short", "--json"], /password.*12/i, 2],
        ["unknown option", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "a@example.com", "--colour", "red", "--json"], /colour/, 2],
        ["workspace list with an argument", ["workspace", "list", "extra", "--json"], /extra/, 2],
        ["unknown scope", ["keys", "create", "--workspace", WS, "--scopes", "leads.read,leads.fly", "--json"], /leads\.fly/, 2],
        ["missing --scopes", ["keys", "create", "--workspace", WS, "--json"], /--scopes/, 2],
        ["a --workspace that is no workspace id", ["keys", "create", "--workspace", "acme", "--scopes", "all", "--json"], /--workspace takes a workspace id.*'acme'/, 2],
        ["keys list without --workspace", ["keys", "list", "--json"], /--workspace is required/, 2],
        ["a --scopes flag on keys list", ["keys", "list", "--workspace", WS, "--scopes", "all", "--json"], /scopes/, 2],
        ["revoke with no id", ["keys", "revoke", "--json"], /key id/i, 2],
        ["revoke with something that is no key id", ["keys", "revoke", "ktr_live_abc", "--json"], /key id.*'ktr_live_abc'/, 2],
        ["arguments over 64 KiB", ["workspace", "create", "--name", "x".repeat(70_000), "--plan", "pro", "--owner-email", "a@example.com", "--json"], /too long/, 2],
        ["unknown workspace (keys create)", ["keys", "create", "--workspace", WS, "--scopes", "all", "--json"], new RegExp(`No workspace ${WS}\\.`), 1],
        ["unknown workspace (keys list)", ["keys", "list", "--workspace", WS, "--json"], new RegExp(`No workspace ${WS}\\.`), 1],
        ["unknown key id", ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"], /No key key_01M7ZX1GA2MCV1NFM3S6NTSVN6\./, 1],
      ];

      it.each(badCases)("rejects %s with its message on stderr and its exit code", async (_name, args, message, exit) => {
        const result = await cli(scratch, args);
        expectFailure(result, message, exit);
        // --json: the same message as one JSON line on stdout
        expect(JSON.parse(result.stdout).error).toMatch(message);
      });

      it("prints the usage: on stdout with exit 0 when asked, on stderr with exit 2 when nothing is asked", async () => {
        const help = await cliProcess(scratch, ["help"]);
        expect(help.code).toBe(0);
        expect(help.stdout).toContain("keys list --workspace ws_…");
        expect(help.stdout).toContain("workspace list [--json]");
        expect(help.stderr).toBe("");
        const none = await cliProcess(scratch, []);
        expectFailure(none, /no command given/, 2);
        expect(none.stdout).toBe("");
      });

      it("wrote nothing for any of the bad commands", async () => {
        expect(await counts(scratch)).toEqual({ workspaces: 0, users: 0, memberships: 0, api_keys: 0 });
      });

      it.each([
        ["free", false, undefined],
        ["plus", true, "plus-password-123"],
        ["pro", true, "pro-password-1234"],
        ["max", true, "max password 12345"],
      ] as const)("workspace create --plan %s", async (plan, _agentAuth, password) => {
        const email = `Owner-${plan}@Example.com`;
        const args = ["workspace", "create", "--name", `Acme ${plan}`, "--plan", plan, "--owner-email", email, "--json"];
        if (password) args.push("--owner-password", password);
        const result = await cli(scratch, args);
        expect(result.code, result.stderr).toBe(0);
        const json = oneJson(result);
        if (password) {
          expect(Object.keys(json).sort()).toEqual(["owner_id", "workspace_id"]);
        } else {
          // generated: shown once, only then
          expect(Object.keys(json).sort()).toEqual(["owner_id", "owner_password", "workspace_id"]);
          expect(json.owner_password).toBeTypeOf("string");
          expect((json.owner_password as string).length).toBeGreaterThanOrEqual(12);
        }
        expect(json.workspace_id).toMatch(/^ws_[0-9A-Z]{26}$/);
        expect(json.owner_id).toMatch(/^usr_[0-9A-Z]{26}$/);
        workspaces[plan] = {
          workspace_id: json.workspace_id as string,
          owner_id: json.owner_id as string,
          email,
          password: password ?? (json.owner_password as string),
        };
      });

      it("stored the workspaces with their plans and owners, with argon2id password hashes", async () => {
        expect(Object.keys(workspaces).sort()).toEqual(["free", "max", "plus", "pro"]);
        const rows = await inspect(scratch, async (db) => ({
          workspaces: await db.workspace.findMany({ include: { memberships: true } }),
          users: await db.user.findMany(),
        }));
        expect(rows.workspaces).toHaveLength(4);
        expect(rows.users).toHaveLength(4);
        for (const [plan, created] of Object.entries(workspaces)) {
          const ws = rows.workspaces.find((w) => w.id === created.workspace_id);
          expect(ws, plan).toBeDefined();
          expect(ws).toMatchObject({ name: `Acme ${plan}`, plan, agentAuthEnabled: plan !== "free" });
          expect(ws!.memberships.map((m) => ({ userId: m.userId, role: m.role }))).toEqual([{ userId: created.owner_id, role: "owner" }]);
          const user = rows.users.find((u) => u.id === created.owner_id)!;
          expect(user.email).toBe(created.email.toLowerCase());
          expect(user.passwordHash).toMatch(/^\$argon2id\$/);
          expect(user.passwordHash).not.toContain(created.password);
          expect(await verify(user.passwordHash, created.password)).toBe(true);
          expect(await verify(user.passwordHash, `${created.password}x`)).toBe(false);
        }
      });

      it("keys create with a list of scopes, and with all", { timeout: 60_000 }, async () => {
        const ws = workspaces.pro!.workspace_id;
        const scoped = await cli(scratch, ["keys", "create", "--workspace", ws, "--scopes", "leads.read,clients.write", "--name", "CI key", "--json"]);
        expect(scoped.code, scoped.stderr).toBe(0);
        const scopedJson = oneJson(scoped);
        expect(Object.keys(scopedJson).sort()).toEqual(["id", "key", "scopes"]);
        expect(scopedJson.id).toMatch(/^key_[0-9A-Z]{26}$/);
        expect(scopedJson.key).toMatch(new RegExp(`^${KEY.source}$`));
        expect(scopedJson.scopes).toEqual(["leads.read", "clients.write"]);
        scopedKey = { id: scopedJson.id as string, key: scopedJson.key as string };

        const all = await cli(scratch, ["keys", "create", "--workspace", ws, "--scopes", "all", "--json"]);
        expect(all.code, all.stderr).toBe(0);
        const allJson = oneJson(all);
        expect(allJson.id).toMatch(/^key_[0-9A-Z]{26}$/);
        expect(allJson.key).toMatch(new RegExp(`^${KEY.source}$`));
        expect(allJson.scopes).toEqual([...SCOPES]);
        fullKey = { id: allJson.id as string, key: allJson.key as string };

        const keys = await inspect(scratch, (db) => db.apiKey.findMany({ orderBy: { id: "asc" } }));
        expect(keys.map((k) => k.id)).toEqual([scopedKey.id, fullKey.id]);
        expect(keys[0]).toMatchObject({ workspaceId: ws, name: "CI key", scopes: ["leads.read", "clients.write"], revokedAt: null });
        expect(keys[1]).toMatchObject({ workspaceId: ws, scopes: [...SCOPES], revokedAt: null });
        for (const [row, created] of [[keys[0]!, scopedKey], [keys[1]!, fullKey]] as const) {
          expect(JSON.stringify(row)).not.toContain(created.key); // only a hash is stored
        }
      });

      it("the created keys work against a running server, with exactly their scopes", { timeout: 90_000 }, async () => {
        const server = await startServer(scratch);
        try {
          const scoped = rest(server.api, scopedKey.key);
          const ws = await scoped.get("/workspace");
          expect(ws.status).toBe(200);
          expect(ws.body).toMatchObject({ object: "workspace", id: workspaces.pro!.workspace_id, name: "Acme pro", plan: "pro", agent_auth_enabled: true });
          expect((await scoped.get("/leads")).status).toBe(200);
          const denied = await scoped.post("/leads", { first_name: "Nope" });
          expect(denied.status).toBe(403);
          expect(denied.body.error).toMatchObject({ code: "insufficient_scope", required_scope: "leads.write" });

          const full = rest(server.api, fullKey.key);
          const lead = await full.post("/leads", { full_name: "Ada Lovelace" });
          expect(lead.status).toBe(201);
          expect((await scoped.get(`/leads/${lead.body.id}`)).body).toMatchObject({ id: lead.body.id, full_name: "Ada Lovelace" });
          // the database was not empty: no demo seed
          expect(server.stdout()).not.toMatch(KEY);

          // Revoke while the server runs: PostgreSQL lets the CLI connect on its own; the embedded
          // database belongs to the server, which runs the command sent over its control socket.
          const revoked = await cli(scratch, ["keys", "revoke", scopedKey.id, "--json"]);
          expect(revoked.code, revoked.stderr).toBe(0);
          expect(oneJson(revoked)).toEqual({ id: scopedKey.id, revoked: true });
          let last = 0;
          // the server caches a resolved key for a few seconds
          await waitFor(
            async () => (last = (await scoped.get("/workspace")).status) === 401,
            10_000,
            () => `revoked key still answers ${last}`,
          );
          const after = await scoped.get("/leads");
          expect(after.status).toBe(401);
          expect(after.body.error).toMatchObject({ type: "authentication_error", code: "invalid_token" });
          expect((await full.get(`/leads/${lead.body.id}`)).status).toBe(200);
          expect(await server.stop()).toBe(0);
        } finally {
          killGroup(server.child);
        }
      });

      if (stack === "embedded") {
        it("after the server stops, the CLI opens the database itself: the revocation and the data stayed", { timeout: 90_000 }, async () => {
          expect(await counts(scratch)).toEqual({ workspaces: 4, users: 4, memberships: 4, api_keys: 2 });
          const keys = await cli(scratch, ["keys", "list", "--workspace", workspaces.pro!.workspace_id, "--json"]);
          expect(keys.code, keys.stderr).toBe(0);
          const listed = oneJson(keys).data as { id: string; revoked_at: string | null }[];
          expect(listed.map((k) => k.id)).toEqual([fullKey.id, scopedKey.id]);
          expect(listed[1]!.revoked_at).toMatch(/^\d{4}-\d\d-\d\dT/);
          expect(listed[0]!.revoked_at).toBeNull();

          const server = await startServer(scratch);
          try {
            const scoped = rest(server.api, scopedKey.key);
            const res = await scoped.get("/workspace");
            expect(res.status).toBe(401);
            expect(res.body.error).toMatchObject({ type: "authentication_error", code: "invalid_token" });
            const full = rest(server.api, fullKey.key);
            const leads = await full.get("/leads");
            expect(leads.status).toBe(200);
            expect(leads.body.data.map((l: { full_name: string }) => l.full_name)).toEqual(["Ada Lovelace"]);
            expect(await server.stop()).toBe(0);
          } finally {
            killGroup(server.child);
          }
        });
      }

      it("keys revoke without --json says so in words", async () => {
        const result = await cli(scratch, ["keys", "revoke", fullKey.id]);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(fullKey.id);
        expect(result.stdout).toMatch(/revoked/);
        const rows = await inspect(scratch, (db) => db.apiKey.findMany({ select: { id: true, revokedAt: true } }));
        expect(rows.every((r) => r.revokedAt instanceof Date)).toBe(true);
      });
    });

    describe("CLI while the server runs", () => {
      let scratch: Scratch;
      let server: Server;
      let socketPath: string;
      let workspaceId: string;
      let liveKey: { id: string; key: string };

      beforeAll(async () => {
        scratch = await provisionStack(stack);
        socketPath = controlSocketPath(scratch.env.DATA_DIR!);
        server = await startServer(scratch);
        kept.add(server.child);
      }, 120_000);
      afterAll(async () => {
        if (server) await server.stop();
        kept.clear();
        killAll();
        await scratch?.drop();
      });

      /** One raw exchange on the control socket, as any local process could attempt it. */
      function exchange(payload: string | Buffer): Promise<string> {
        return new Promise((resolve, reject) => {
          const socket = createConnection(socketPath);
          let answer = "";
          socket.on("data", (chunk) => (answer += chunk.toString()));
          socket.on("close", () => resolve(answer));
          // the server may close while a large payload is still being written
          socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "EPIPE" || error.code === "ECONNRESET" ? undefined : reject(error)));
          socket.on("connect", () => socket.write(payload));
          setTimeout(() => socket.destroy(new Error(`no answer on the control socket: ${answer}`)), 15_000).unref();
        });
      }

      if (stack === "embedded") {
        it("listens on $DATA_DIR/kontor.sock, a socket only its owner may use (0600)", () => {
          const stat = lstatSync(socketPath);
          expect(stat.isSocket()).toBe(true);
          expect(stat.mode & 0o777).toBe(0o600);
          expect(stat.uid).toBe(process.getuid!());
        });
      } else {
        it("on PostgreSQL opens no control socket (the CLI connects on its own)", () => {
          expect(existsSync(socketPath)).toBe(false);
        });
      }

      it("workspace create and keys create run while the server runs, and the new key works at once", { timeout: 90_000 }, async () => {
        const created = await cli(scratch, ["workspace", "create", "--name", "Live Co", "--plan", "plus", "--owner-email", "live@example.com", "--json"]);
        expect(created.code, created.stderr).toBe(0);
        workspaceId = oneJson(created).workspace_id as string;
        expect(workspaceId).toMatch(/^ws_[0-9A-Z]{26}$/);

        const key = await cli(scratch, ["keys", "create", "--workspace", workspaceId, "--scopes", "leads.read,leads.write", "--name", "live key", "--json"]);
        expect(key.code, key.stderr).toBe(0);
        const json = oneJson(key);
        expect(json).toMatchObject({ scopes: ["leads.read", "leads.write"] });
        liveKey = { id: json.id as string, key: json.key as string };

        // no wait: a key is looked up on first use
        const api = rest(server.api, liveKey.key);
        const ws = await api.get("/workspace");
        expect(ws.status).toBe(200);
        expect(ws.body).toMatchObject({ id: workspaceId, name: "Live Co", plan: "plus" });
        expect((await api.post("/leads", { full_name: "Mary Somerville" })).status).toBe(201);

        // on the embedded stack the server ran them: the CLI could not have opened the database
        const ran = server.stderr().match(/CLI command over the control socket/g) ?? [];
        expect(ran.length).toBe(stack === "embedded" ? 2 : 0);
      });

      it("keys list shows the key's id, name, prefix, scopes and times, never its secret or hash", { timeout: 90_000 }, async () => {
        expect(liveKey).toBeDefined();
        let listed: Record<string, unknown>[] = [];
        // the use above reaches the request log in batches
        await waitFor(
          async () => {
            const result = await cli(scratch, ["keys", "list", "--workspace", workspaceId, "--json"]);
            expect(result.code, result.stderr).toBe(0);
            expect(result.stdout).not.toContain(liveKey.key);
            expect(result.stdout).not.toContain(createHash("sha256").update(liveKey.key).digest("hex"));
            const json = oneJson(result);
            expect(json).toMatchObject({ object: "list", has_more: false, next_cursor: null });
            listed = json.data as Record<string, unknown>[];
            return listed.length === 1 && listed[0]!.last_used_at !== null;
          },
          20_000,
          () => `last_used_at never set: ${JSON.stringify(listed)}`,
        );
        expect(Object.keys(listed[0]!).sort()).toEqual(["created_at", "id", "last_used_at", "name", "object", "prefix", "revoked_at", "scopes"]);
        expect(listed[0]).toMatchObject({
          object: "api_key",
          id: liveKey.id,
          name: "live key",
          prefix: liveKey.key.slice(0, 13),
          scopes: ["leads.read", "leads.write"],
          revoked_at: null,
        });
        const created = Date.parse(listed[0]!.created_at as string);
        expect(Date.parse(listed[0]!.last_used_at as string)).toBeGreaterThanOrEqual(created);

        const text = await cli(scratch, ["keys", "list", "--workspace", workspaceId]);
        expect(text.code, text.stderr).toBe(0);
        const [header, row, ...rest] = text.stdout.trimEnd().split("\n");
        expect(rest).toEqual([]);
        expect(header).toMatch(/^ID\s+NAME\s+PREFIX\s+CREATED\s+LAST USED\s+REVOKED\s+SCOPES$/);
        expect(row).toContain(liveKey.id);
        expect(row).toContain("live key");
        expect(row).toContain(liveKey.key.slice(0, 13));
        expect(row).toMatch(/leads\.read,leads\.write$/);
        expect(text.stdout).not.toContain(liveKey.key);
      });

      it("workspace list shows every workspace with its plan and key counts; migrate finds nothing to do", { timeout: 90_000 }, async () => {
        const list = await cli(scratch, ["workspace", "list", "--json"]);
        expect(list.code, list.stderr).toBe(0);
        const json = oneJson(list);
        expect(json).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        const data = json.data as Record<string, unknown>[];
        // development seeded Demo first; newest first
        expect(data.map((w) => w.name)).toEqual(["Live Co", "Demo"]);
        expect(Object.keys(data[0]!).sort()).toEqual(["active_key_count", "created_at", "id", "key_count", "name", "object", "plan"]);
        expect(data[0]).toMatchObject({ object: "workspace", id: workspaceId, plan: "plus", key_count: 1, active_key_count: 1 });
        expect(data[1]).toMatchObject({ plan: "pro", key_count: 1, active_key_count: 1 });

        const text = await cli(scratch, ["workspace", "list"]);
        expect(text.code, text.stderr).toBe(0);
        const lines = text.stdout.trimEnd().split("\n");
        expect(lines[0]).toMatch(/^ID\s+PLAN\s+CREATED\s+KEYS\s+ACTIVE\s+NAME$/);
        expect(lines[1]).toMatch(new RegExp(`^${workspaceId}\\s+plus\\s+\\S+Z\\s+1\\s+1\\s+Live Co$`));
        expect(lines).toHaveLength(3);

        const migrate = await cli(scratch, ["migrate", "--json"]);
        expect(migrate.code, migrate.stderr).toBe(0);
        expect(oneJson(migrate)).toEqual({ applied: [] });
      });

      it("failures come back with the CLI's messages and exit codes", { timeout: 90_000 }, async () => {
        const missing = "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6";
        expectFailure(await cli(scratch, ["keys", "list", "--workspace", missing]), new RegExp(`No workspace ${missing}\\.`), 1);
        expectFailure(await cli(scratch, ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"]), /No key key_01M7ZX1GA2MCV1NFM3S6NTSVN6\./, 1);
        // checked by createWorkspace, on the server's side of the socket
        const badEmail = await cli(scratch, ["workspace", "create", "--name", "X", "--plan", "free", "--owner-email", "nope", "--json"]);
        expectFailure(badEmail, /'nope' is not an e-mail address/, 2);
        expect(JSON.parse(badEmail.stdout)).toEqual({ error: "'nope' is not an e-mail address." });
        const list = oneJson(await cli(scratch, ["workspace", "list", "--json"]));
        expect((list.data as unknown[]).length).toBe(2);
      });

      it("signing-keys rotate publishes a new key for agents' identity assertions, which the server serves", { timeout: 90_000 }, async () => {
        const before = (await raw(`${server.url}/.well-known/jwks.json`)).json.keys.map((key: { kid: string }) => key.kid);
        expect(before).toHaveLength(1);
        const rotated = await cli(scratch, ["signing-keys", "rotate", "--json"]);
        expect(rotated.code, rotated.stderr).toBe(0);
        const json = oneJson(rotated);
        expect(json.kid).toMatch(/^sk_[0-9A-Z]{26}$/);
        expect(Date.parse(json.signs_from as string)).toBeGreaterThan(Date.now());
        // Published within seconds on every process; the old key stays.
        let kids: string[] = [];
        await waitFor(
          async () => (kids = (await raw(`${server.url}/.well-known/jwks.json`)).json.keys.map((key: { kid: string }) => key.kid)).length === 2,
          15_000,
          () => `published: ${kids.join(", ")}`,
        );
        expect(kids.sort()).toEqual([...before, json.kid].sort());
      });

      it("keys revoke while the server runs: the key stops working", { timeout: 90_000 }, async () => {
        // a process of its own, as an operator's shell runs it
        const revoked = await cliProcess(scratch, ["keys", "revoke", liveKey.id]);
        expect(revoked.code, revoked.stderr).toBe(0);
        expect(revoked.stdout.trim()).toBe(`key ${liveKey.id} revoked`);
        const api = rest(server.api, liveKey.key);
        let last = 0;
        // the server caches a resolved key for a few seconds
        await waitFor(async () => (last = (await api.get("/workspace")).status) === 401, 10_000, () => `revoked key still answers ${last}`);
        const list = oneJson(await cli(scratch, ["workspace", "list", "--json"]));
        expect((list.data as Record<string, unknown>[])[0]).toMatchObject({ id: workspaceId, key_count: 1, active_key_count: 0 });
      });

      if (stack === "embedded") {
        it("the socket answers nothing but the CLI's requests, bounds their size, and the server carries on", { timeout: 90_000 }, async () => {
          const http = await exchange("GET /v1/workspace HTTP/1.1\r\nHost: localhost\r\n\r\n");
          expect(http).not.toMatch(/HTTP\/1\.1/);
          expect(JSON.parse(http)).toEqual({ exit: 1, message: "control socket: not a Kontor CLI request." });
          expect(JSON.parse(await exchange('{"v":2,"argv":["workspace","list"]}\n'))).toEqual({ exit: 1, message: "control socket: not a Kontor CLI request." });
          expect(JSON.parse(await exchange('{"v":1,"argv":["workspace",7]}\n')).exit).toBe(1);
          expect(JSON.parse(await exchange(Buffer.alloc(200_000, "a")))).toEqual({ exit: 1, message: "control socket: the request exceeds 65536 bytes." });
          const unknown = JSON.parse(await exchange('{"v":1,"argv":["serve","--port","80"]}\n'));
          expect(unknown).toEqual({ exit: 2, message: "unknown command 'serve'." });
          const listed = JSON.parse(await exchange('{"v":1,"argv":["workspace","list","--json"]}\n'));
          expect(listed.exit).toBe(0);
          expect(listed.json.data).toHaveLength(2);
          // a client that hangs up mid-command does not hurt the server
          const socket = createConnection(socketPath, () => socket.end('{"v":1,"argv":["workspace","list"]}\n', () => socket.destroy()));
          socket.on("error", () => {});
          expect((await fetch(`${server.url}/v1/.well-known/oauth-protected-resource`)).status).toBe(200);
          expect((await cli(scratch, ["workspace", "list", "--json"])).code).toBe(0);
        });

        it("gives the same output as the CLI on its own; stopping removes the socket; a stale one is replaced", { timeout: 120_000 }, async () => {
          const commands = [["workspace", "list", "--json"], ["workspace", "list"], ["keys", "list", "--workspace", workspaceId, "--json"]];
          // the server serves several at once
          const overSocket = await Promise.all(commands.map((args) => cli(scratch, args)));
          for (const result of overSocket) expect(result.code, result.stderr).toBe(0);
          // a connection that never sends its request does not hold up the shutdown
          const idle = createConnection(socketPath);
          idle.on("error", () => {});
          await new Promise((resolve) => idle.once("connect", resolve));
          expect(await server.stop()).toBe(0);
          idle.destroy();
          kept.clear();
          expect(existsSync(socketPath)).toBe(false);
          expect(existsSync(join(scratch.env.DATA_DIR!, "db.lock"))).toBe(false);
          // one at a time: each opens the embedded database itself
          for (const [i, args] of commands.entries()) {
            const result = await cli(scratch, args);
            expect(result.code, result.stderr).toBe(0);
            expect(result.stdout, args.join(" ")).toBe(overSocket[i]!.stdout);
          }

          // a server that dies leaves its socket behind; the next start replaces it
          const crashed = await startServer(scratch);
          killGroup(crashed.child);
          await waitFor(() => crashed.child.exitCode !== null || crashed.child.signalCode !== null, 15_000, () => "server did not die");
          expect(lstatSync(socketPath).isSocket()).toBe(true);
          // the lock's process is dead: the CLI takes the database over
          expect((await cli(scratch, ["workspace", "list", "--json"])).code).toBe(0);
          server = await startServer(scratch);
          kept.add(server.child);
          expect(lstatSync(socketPath).mode & 0o777).toBe(0o600);
          const after = await cli(scratch, ["workspace", "list", "--json"]);
          expect(after.stdout).toBe(overSocket[0]!.stdout);
          expect(server.stderr()).toMatch(/CLI command over the control socket/);
        });
      }
    });

    describe("server start-up", () => {
      let scratch: Scratch;
      let demo: { email: string; password: string; key: string; leadId: string };

      beforeAll(async () => {
        scratch = await provisionStack(stack);
      });
      afterAll(async () => {
        killAll();
        await scratch?.drop();
      });

      it("first start in development seeds the Demo workspace and prints its credentials once", { timeout: 90_000 }, async () => {
        const server = await startServer(scratch);
        try {
          await waitFor(() => /Try:.*\n/.test(server.stdout()), 15_000, () => `no credentials on stdout: ${server.stdout()}`);
          const out = server.stdout();
          expect(out).toContain("owner@example.com");
          const password = /password:\s*(\S+)/.exec(out)?.[1];
          expect(password, out).toBeDefined();
          expect(password!.length).toBeGreaterThanOrEqual(12);
          const key = KEY.exec(out)?.[0];
          expect(key, out).toBeDefined();
          expect(out).toMatch(/every scope/i);
          expect(out).toContain(`http://localhost:${server.port}/v1`);
          expect(out).toContain(`http://localhost:${server.port}/graphql`);
          // The dashboard's address on the line after the owner's password, which signs in there.
          expect(out).toMatch(new RegExp(`password: \\S+\\n\\s*Dashboard: http://localhost:${server.port}/dashboard\\s`));
          const pre = await fetch(`${server.url}/dashboard/api/session`);
          const { csrf_token } = (await pre.json()) as { csrf_token: string };
          const signIn = await fetch(`${server.url}/dashboard/api/sign-in`, {
            method: "POST",
            headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf_token, Cookie: pre.headers.getSetCookie()[0]!.split(";")[0]! },
            body: JSON.stringify({ email: "owner@example.com", password }),
          });
          expect(signIn.status).toBe(200);
          expect(((await signIn.json()) as { workspaces: { name: string; role: string }[] }).workspaces).toMatchObject([{ name: "Demo", role: "owner" }]);

          const api = rest(server.api, key);
          const ws = await api.get("/workspace");
          expect(ws.status).toBe(200);
          expect(ws.body).toMatchObject({ object: "workspace", name: "Demo", plan: "pro", agent_auth_enabled: true });
          expect(ws.body.id).toMatch(/^ws_/);
          const lead = await api.post("/leads", { full_name: "Grace Hopper", stage: "qualified" });
          expect(lead.status).toBe(201);
          demo = { email: "owner@example.com", password: password!, key: key!, leadId: lead.body.id };

          expect(await server.stop()).toBe(0);
          expect(server.stderr()).not.toMatch(STACK_TRACE);
        } finally {
          killGroup(server.child);
        }

        const rows = await inspect(scratch, async (db) => ({
          workspaces: await db.workspace.findMany(),
          users: await db.user.findMany(),
          keys: await db.apiKey.findMany(),
        }));
        expect(rows.workspaces).toHaveLength(1);
        expect(rows.users).toHaveLength(1);
        expect(rows.users[0]!.email).toBe("owner@example.com");
        expect(rows.users[0]!.passwordHash).toMatch(/^\$argon2id\$/);
        expect(await verify(rows.users[0]!.passwordHash, demo.password)).toBe(true);
        expect(rows.keys).toHaveLength(1);
        expect([...rows.keys[0]!.scopes].sort()).toEqual([...SCOPES].sort());
      });

      it("a second start prints no credentials, creates nothing, and the data survived the restart", { timeout: 90_000 }, async () => {
        expect(demo).toBeDefined();
        const server = await startServer(scratch);
        let out: string;
        try {
          const api = rest(server.api, demo.key);
          const lead = await api.get(`/leads/${demo.leadId}`);
          expect(lead.status).toBe(200);
          expect(lead.body).toMatchObject({ id: demo.leadId, full_name: "Grace Hopper", stage: "qualified" });
          expect((await api.get("/workspace")).body).toMatchObject({ name: "Demo", plan: "pro" });
          expect(await server.stop()).toBe(0);
          out = server.stdout();
        } finally {
          killGroup(server.child);
        }
        expect(out).toContain("Kontor is running");
        expect(out).not.toMatch(/ktr_live_/);
        expect(out).not.toMatch(/password/i);
        expect(out).not.toContain("owner@example.com");
        expect(out).not.toContain(demo.password);
        expect(await counts(scratch)).toEqual({ workspaces: 1, users: 1, memberships: 1, api_keys: 1 });
      });

      it("data written over REST survives another stop (SIGTERM, exit 0) and start", { timeout: 90_000 }, async () => {
        let leadId: string;
        const first = await startServer(scratch);
        try {
          const res = await rest(first.api, demo.key).post("/leads", { full_name: "Katherine Johnson", priority: "urgent" });
          expect(res.status).toBe(201);
          leadId = res.body.id;
          expect(await first.stop()).toBe(0);
        } finally {
          killGroup(first.child);
        }
        const second = await startServer(scratch);
        try {
          const api = rest(second.api, demo.key);
          expect((await api.get(`/leads/${leadId}`)).body).toMatchObject({ id: leadId, full_name: "Katherine Johnson", priority: "urgent" });
          const list = await api.get("/leads");
          expect(list.status).toBe(200);
          expect(list.body.data.map((l: { id: string }) => l.id)).toEqual([leadId, demo.leadId]);
          expect(await second.stop()).toBe(0);
        } finally {
          killGroup(second.child);
        }
      });
    });

    describe("production and failures to start", () => {
      let scratch: Scratch;

      beforeAll(async () => {
        scratch = await provisionStack(stack);
      });
      afterAll(async () => {
        killAll();
        await scratch?.drop();
      });

      it("KONTOR_ENV=production seeds nothing on an empty database", { timeout: 90_000 }, async () => {
        const server = await startServer(scratch, { KONTOR_ENV: "production", KONTOR_SECRET_KEY: "cli-test-secret-key-0123456789abcdefghij" });
        let out: string;
        try {
          expect((await rest(server.api).get("/workspace")).status).toBe(401);
          expect(await server.stop()).toBe(0);
          out = server.stdout();
        } finally {
          killGroup(server.child);
        }
        expect(out).toContain("production");
        expect(out).not.toMatch(/ktr_live_/);
        expect(out).not.toMatch(/password/i);
        expect(out).not.toContain("owner@example.com");
        expect(await counts(scratch)).toEqual({ workspaces: 0, users: 0, memberships: 0, api_keys: 0 });
      });

      it("production without KONTOR_SECRET_KEY refuses to start, saying what to set, exit 1", { timeout: 90_000 }, async () => {
        const run = spawnChild("server/main.ts", scratch, { PORT: "0", KONTOR_ENV: "production" });
        const code = await run.exited;
        const stderr = run.stderr();
        expect(code, stderr).toBe(1);
        expect(stderr).toMatch(/KONTOR_SECRET_KEY must be set in production/);
        expect(stderr, "stack trace shown to the operator").not.toMatch(STACK_TRACE);
        // Nothing was opened: the database is free for the CLI.
        const migrate = await cli(scratch, ["migrate", "--json"]);
        expect(migrate.code, migrate.stderr).toBe(0);
      });

      it("a port in use stops the start with a clear message, exit 1 and no stack trace", { timeout: 90_000 }, async () => {
        const blocker = createServer();
        await new Promise<void>((resolve) => blocker.listen(0, "0.0.0.0", () => resolve()));
        const port = (blocker.address() as { port: number }).port;
        try {
          const run = spawnChild("server/main.ts", scratch, { PORT: String(port) });
          const timer = setTimeout(() => killGroup(run.child), 60_000);
          const code = await run.exited;
          clearTimeout(timer);
          const stderr = run.stderr();
          expect(code, stderr).toBe(1);
          expect(stderr).toMatch(new RegExp(`${port}`));
          expect(stderr).toMatch(/in use/i);
          expect(stderr, "stack trace shown to the operator").not.toMatch(STACK_TRACE);
        } finally {
          await new Promise((resolve) => blocker.close(resolve));
        }
        // and it released the database: the CLI can open it
        const migrate = await cli(scratch, ["migrate", "--json"]);
        expect(migrate.code, migrate.stderr).toBe(0);
        expect(oneJson(migrate)).toEqual({ applied: [] });
      });
    });
  });
}

/** The failures the CLI explains in one line whatever the stack: no database or server is needed. */
describe("CLI failures it explains", () => {
  let dataDir: string;
  const fakes: NetServer[] = [];

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "kontor-cli-"));
  });
  afterEach(async () => {
    killAll();
    await Promise.all(fakes.splice(0).map((fake) => new Promise((resolve) => fake.close(resolve))));
    rmSync(controlSocketPath(dataDir), { force: true });
    rmSync(join(dataDir, "db.lock"), { force: true });
  });
  afterAll(() => {
    killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const embedded = () => ({ env: { DATA_DIR: dataDir } });
  /** This (live) test process holds the embedded lock, as a server does. */
  const holdLock = () => writeFileSync(join(dataDir, "db.lock"), String(process.pid));

  /** A process that listens on the control socket and answers as `answer` says. */
  async function fakeServer(answer: (request: string, socket: Socket) => void): Promise<string[]> {
    const requests: string[] = [];
    const fake = createServer((socket) => {
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk.toString();
        if (received.includes("\n")) {
          requests.push(received);
          answer(received, socket);
        }
      });
      socket.on("error", () => {});
    });
    fakes.push(fake);
    await new Promise<void>((resolve) => fake.listen(controlSocketPath(dataDir), resolve));
    return requests;
  }

  it("PostgreSQL unreachable: exit 1, where it looked (without the password) and why", async () => {
    const port = await freePort();
    const result = await cliProcess({ env: { DATA_DIR: dataDir, DATABASE_URL: `postgres://postgres:hunter2secret@127.0.0.1:${port}/kontor_nowhere` } }, ["workspace", "list", "--json"]);
    expectFailure(result, new RegExp(`cannot open PostgreSQL at 127\\.0\\.0\\.1:${port}/kontor_nowhere: .*ECONNREFUSED`), 1);
    expect(result.stderr + result.stdout).not.toContain("hunter2secret");
  });

  it("a bad environment: exit 1 with the variable named", async () => {
    const result = await cli({ env: { DATA_DIR: dataDir, KONTOR_ENV: "staging" } }, ["workspace", "list"]);
    expectFailure(result, /KONTOR_ENV must be development or production, got 'staging'/, 1);
  });

  it("the database locked by a live process without a control socket: exit 1, saying both", async () => {
    holdLock();
    const absent = await cli(embedded(), ["workspace", "list", "--json"]);
    expectFailure(absent, new RegExp(`in use by process ${process.pid}.*control socket.*kontor\\.sock \\(ENOENT\\)`), 1);
    expect(JSON.parse(absent.stdout).error).toMatch(/in use by process/);
    // a socket file nobody listens on (a plain file here)
    writeFileSync(controlSocketPath(dataDir), "");
    const refused = await cli(embedded(), ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6"]);
    expectFailure(refused, new RegExp(`in use by process ${process.pid}.*kontor\\.sock \\(ECONNREFUSED\\)`), 1);
  });

  it("bad arguments are refused before the database or the socket is touched: exit 2", async () => {
    holdLock();
    const requests = await fakeServer((_request, socket) => socket.end('{"exit":0,"json":{},"text":""}\n'));
    expectFailure(await cli(embedded(), ["keys", "list"]), /--workspace is required/, 2);
    expect(requests).toEqual([]);
  });

  it("sends one JSON line {v, argv} and prints the server's answer as its own", async () => {
    holdLock();
    const requests = await fakeServer((_request, socket) =>
      socket.end(`${JSON.stringify({ exit: 1, message: "No workspace ws_01M7ZX1GA2MCV1NFM3S6NTSVN6." })}\n`),
    );
    const result = await cli(embedded(), ["keys", "list", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6"]);
    expectFailure(result, /^kontor: No workspace ws_01M7ZX1GA2MCV1NFM3S6NTSVN6\.\n$/, 1);
    expect(requests).toEqual([`${JSON.stringify({ v: 1, argv: ["keys", "list", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6"] })}\n`]);
  });

  it("a server answering nonsense, or hanging up without an answer: exit 1, no stack trace", async () => {
    holdLock();
    await fakeServer((_request, socket) => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
    expectFailure(await cli(embedded(), ["workspace", "list"]), /answer on .*kontor\.sock is not one the CLI understands/, 1);
    await new Promise((resolve) => fakes.pop()!.close(resolve));
    await fakeServer((_request, socket) => socket.destroy());
    expectFailure(await cli(embedded(), ["workspace", "list", "--json"]), /closed its control socket .*kontor\.sock without an answer/, 1);
  });
});
