/**
 * decisions.md §1: the operator CLI (`server/cli.ts`) and the server's start-up (`server/main.ts`),
 * run as real child processes on both stacks. Each stack gets its own scratch databases:
 *   A: the CLI (migrate, bad arguments, workspace and key creation, revocation, the embedded lock);
 *   B: the first start in development (demo seed), a second start and data surviving restarts;
 *   C: a start in production (no seed) and a start on a port in use.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { verify } from "@node-rs/argon2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { openDatabase, type Database } from "../../server/db/open.ts";
import { MIGRATIONS_DIR } from "../../server/db/migrate.ts";
import { childEnv as cleanEnv, freePort } from "../support/child-server.ts";
import { rest } from "../support/http.ts";
import { provisionStack } from "../support/server.ts";
import { stacks } from "../support/stacks.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** How package.json's `start` and `kontor` scripts run the TypeScript entry points. */
const NODE = process.execPath;
const TSX_IMPORT = ["--import", "tsx"];
const MIGRATIONS = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const STACK_TRACE = /^\s+at .+[(:]/m;
const KEY = /ktr_live_[0-9A-Za-z]{43}/;

type Scratch = Awaited<ReturnType<typeof provisionStack>>;

/** The child's environment: the scratch database only, nothing inherited that could point elsewhere. */
const childEnv = (scratch: Scratch, extra: NodeJS.ProcessEnv = {}) => cleanEnv({ ...scratch.env, ...extra });

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
function killAll() {
  for (const child of children) killGroup(child);
  children.clear();
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs `tsx server/cli.ts …args` to completion (killed after `timeoutMs`: a hang fails the test). */
function cli(scratch: Scratch, args: string[], timeoutMs = 45_000): Promise<CliResult> {
  const started = Date.now();
  const child = spawn(NODE, [...TSX_IMPORT, "server/cli.ts", ...args], {
    cwd: ROOT,
    env: childEnv(scratch),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(child);
      reject(new Error(`kontor ${args.join(" ")} did not finish in ${timeoutMs} ms (hang).\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
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

/** A failed command: non-zero, a message on stderr, no stack trace, nothing on stdout that looks like success. */
function expectFailure(result: CliResult, message: RegExp) {
  const detail = `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  expect(result.code, detail).not.toBe(0);
  expect(result.code, detail).not.toBeNull();
  expect(result.stderr, detail).toMatch(message);
  expect(result.stderr, detail).not.toMatch(STACK_TRACE);
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
  const child = spawn(NODE, [...TSX_IMPORT, "server/main.ts"], {
    cwd: ROOT,
    env: childEnv(scratch, { PORT: String(port), ...extra }),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once("close", (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  let done = false;
  void exited.then(() => (done = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (done) throw new Error(`server exited with ${child.exitCode} before it was ready.\nstdout: ${stdout}\nstderr: ${stderr}`);
    if (Date.now() > deadline) {
      killGroup(child);
      throw new Error(`server not ready in 60 s.\nstdout: ${stdout}\nstderr: ${stderr}`);
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
  await waitFor(() => stdout.includes("GraphQL:"), 15_000, () => `no banner on stdout: ${stdout}\nstderr: ${stderr}`);
  return {
    child,
    port,
    url,
    api: `${url}/v1`,
    stdout: () => stdout,
    stderr: () => stderr,
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
      killAll();
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
        scratch = await provisionStack(stack);
      });
      afterAll(async () => {
        killAll();
        await scratch?.drop();
      });

      it("migrate applies every migration on a fresh database, and nothing the second time", { timeout: 90_000 }, async () => {
        const first = await cli(scratch, ["migrate", "--json"]);
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

      const badCases: [string, string[], RegExp][] = [
        ["unknown command", ["frobnicate", "--json"], /unknown command/i],
        ["unknown sub-command", ["workspace", "delete", "--json"], /unknown command/i],
        ["missing --name", ["workspace", "create", "--plan", "pro", "--owner-email", "a@example.com", "--json"], /--name/],
        ["missing --plan", ["workspace", "create", "--name", "Acme", "--owner-email", "a@example.com", "--json"], /--plan/],
        ["missing --owner-email", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--json"], /--owner-email/],
        ["bad plan", ["workspace", "create", "--name", "Acme", "--plan", "gold", "--owner-email", "a@example.com", "--json"], /--plan.*free/],
        ["bad e-mail", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "not-an-email", "--json"], /e-?mail/i],
        ["short password", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "a@example.com", "--owner-password", "short", "--json"], /password.*12/i],
        ["unknown option", ["workspace", "create", "--name", "Acme", "--plan", "pro", "--owner-email", "a@example.com", "--colour", "red", "--json"], /colour/],
        ["unknown scope", ["keys", "create", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--scopes", "leads.read,leads.fly", "--json"], /leads\.fly/],
        ["missing --scopes", ["keys", "create", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"], /--scopes/],
        ["unknown workspace", ["keys", "create", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--scopes", "all", "--json"], /ws_01M7ZX1GA2MCV1NFM3S6NTSVN6/],
        ["unknown key id", ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"], /key_01M7ZX1GA2MCV1NFM3S6NTSVN6/],
        ["revoke with no id", ["keys", "revoke", "--json"], /key id/i],
      ];

      it.each(badCases)("rejects %s with a message on stderr and a non-zero exit", { timeout: 45_000 }, async (_name, args, message) => {
        expectFailure(await cli(scratch, args), message);
      });

      it("wrote nothing for any of the bad commands", { timeout: 30_000 }, async () => {
        expect(await counts(scratch)).toEqual({ workspaces: 0, users: 0, memberships: 0, api_keys: 0 });
      });

      it.each([
        ["free", false, undefined],
        ["plus", true, "plus-password-123"],
        ["pro", true, "pro-password-1234"],
        ["max", true, "max password 12345"],
      ] as const)("workspace create --plan %s", { timeout: 45_000 }, async (plan, _agentAuth, password) => {
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

      it("stored the workspaces with their plans and owners, with argon2id password hashes", { timeout: 30_000 }, async () => {
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

          if (stack === "embedded") {
            // One process at a time: the CLI refuses fast and clearly, and changes nothing.
            const locked = await cli(scratch, ["keys", "revoke", scopedKey.id, "--json"], 30_000);
            expectFailure(locked, /in use/i);
            expect(locked.stderr).toMatch(/embedded database/i);
            expect(locked.ms).toBeLessThan(20_000);
            const lockedCreate = await cli(scratch, ["workspace", "create", "--name", "Late", "--plan", "free", "--owner-email", "late@example.com", "--json"], 30_000);
            expectFailure(lockedCreate, /in use/i);
            // the server is unharmed
            expect((await full.get(`/leads/${lead.body.id}`)).status).toBe(200);
            expect((await scoped.get("/workspace")).status).toBe(200);
          } else {
            // PostgreSQL allows many processes: revoke while the server runs.
            const revoked = await cli(scratch, ["keys", "revoke", scopedKey.id, "--json"]);
            expect(revoked.code, revoked.stderr).toBe(0);
            expect(oneJson(revoked)).toEqual({ id: scopedKey.id, revoked: true });
            let last = 0;
            await waitFor(
              async () => (last = (await scoped.get("/workspace")).status) === 401,
              10_000,
              () => `revoked key still answers ${last}`,
            );
            const after = await scoped.get("/leads");
            expect(after.status).toBe(401);
            expect(after.body.error).toMatchObject({ type: "authentication_error", code: "invalid_token" });
            expect((await full.get(`/leads/${lead.body.id}`)).status).toBe(200);
          }
          expect(await server.stop()).toBe(0);
        } finally {
          killGroup(server.child);
        }
      });

      if (stack === "embedded") {
        it("after the server stops, the CLI works, revocation takes effect and the data is intact", { timeout: 90_000 }, async () => {
          // nothing was written while locked
          const before = await counts(scratch);
          expect(before).toEqual({ workspaces: 4, users: 4, memberships: 4, api_keys: 2 });

          const revoked = await cli(scratch, ["keys", "revoke", scopedKey.id, "--json"]);
          expect(revoked.code, revoked.stderr).toBe(0);
          expect(oneJson(revoked)).toEqual({ id: scopedKey.id, revoked: true });

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

      it("keys revoke without --json says so in words", { timeout: 45_000 }, async () => {
        const result = await cli(scratch, ["keys", "revoke", fullKey.id]);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stdout).toContain(fullKey.id);
        expect(result.stdout).toMatch(/revoked/);
        const rows = await inspect(scratch, (db) => db.apiKey.findMany({ select: { id: true, revokedAt: true } }));
        expect(rows.every((r) => r.revokedAt instanceof Date)).toBe(true);
      });
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
        const child = spawn(NODE, [...TSX_IMPORT, "server/main.ts"], {
          cwd: ROOT,
          env: childEnv(scratch, { PORT: "0", KONTOR_ENV: "production" }),
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.add(child);
        let stderr = "";
        child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
        children.delete(child);
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
          const child = spawn(NODE, [...TSX_IMPORT, "server/main.ts"], {
            cwd: ROOT,
            env: childEnv(scratch, { PORT: String(port) }),
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
          });
          children.add(child);
          let stderr = "";
          child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
          const code = await new Promise<number | null>((resolve, reject) => {
            const timer = setTimeout(() => {
              killGroup(child);
              reject(new Error(`server on a busy port did not exit in 60 s: ${stderr}`));
            }, 60_000);
            child.once("close", (c) => {
              clearTimeout(timer);
              children.delete(child);
              resolve(c);
            });
          });
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
