/**
 * docs/operations/configuration.md: the operator CLI (`server/cli.ts`) on both stacks. CLI commands run
 * through `runCli` in this process (a process of their own where the process is what is tested:
 * exit status, streams, a fresh database), a different process from the server's either way. Each
 * stack gets its own scratch database: the CLI (migrate, bad arguments, workspace and key creation,
 * revocation, the embedded lock). The CLI next to a running server: cli-live-server.test.ts; the
 * server's start-up: start-up.test.ts (helpers shared with them: ./support.ts).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verify } from "@node-rs/argon2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { controlSocketPath } from "../../../server/control/protocol.ts";
import { MIGRATIONS_DIR } from "../../../server/db/migrate.ts";
import { freePort } from "../../support/child-server.ts";
import { rest } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import {
  cli,
  cliProcess,
  counts,
  expectFailure,
  inspect,
  KEY,
  killAll,
  killGroup,
  oneJson,
  type Scratch,
  startServer,
  waitFor,
} from "./support.ts";

const MIGRATIONS = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

/** The arguments of `workspace create --name <name> --plan <plan>`, then `more`. */
const workspaceCreate = (name: string, plan: string, ...more: string[]) => [
  "workspace",
  "create",
  "--name",
  name,
  "--plan",
  plan,
  ...more,
];

for (const stack of stacks()) {
  describe(`cli and start-up: commands [${stack}]`, () => {
    afterEach(() => {
      // a test that failed half-way must not leave a server holding the database
      killAll(false);
    });
    afterAll(() => {
      killAll();
    });

    describe("CLI", () => {
      let scratch: Scratch;
      const workspaces: Record<
        string,
        { workspace_id: string; owner_id: string; email: string; password: string }
      > = {};
      let scopedKey: { id: string; key: string };
      let fullKey: { id: string; key: string };

      beforeAll(async () => {
        scratch = await provisionStack(stack, { empty: true });
      });
      afterAll(async () => {
        killAll();
        await scratch?.drop();
      });

      it("migrate applies every migration on a fresh database, and nothing the second time", {
        timeout: 90_000,
      }, async () => {
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
        [
          "a group without its sub-command",
          ["keys", "--json"],
          /keys needs a sub-command: create, list, revoke/,
          2,
        ],
        [
          "missing --name",
          ["workspace", "create", "--plan", "pro", "--owner-email", "a@example.com", "--json"],
          /--name/,
          2,
        ],
        [
          "missing --plan",
          ["workspace", "create", "--name", "Acme", "--owner-email", "a@example.com", "--json"],
          /--plan/,
          2,
        ],
        ["missing --owner-email", workspaceCreate("Acme", "pro", "--json"), /--owner-email/, 2],
        [
          "bad plan",
          workspaceCreate("Acme", "gold", "--owner-email", "a@example.com", "--json"),
          /--plan.*free/,
          2,
        ],
        [
          "bad e-mail",
          workspaceCreate("Acme", "pro", "--owner-email", "not-an-email", "--json"),
          /e-?mail/i,
          2,
        ],
        [
          "short password",
          workspaceCreate(
            "Acme",
            "pro",
            "--owner-email",
            "a@example.com",
            "--owner-password",
            "short",
            "--json",
          ),
          /password.*12/i,
          2,
        ],
        [
          "unknown option",
          workspaceCreate("Acme", "pro", "--owner-email", "a@example.com", "--colour", "red", "--json"),
          /colour/,
          2,
        ],
        ["workspace list with an argument", ["workspace", "list", "extra", "--json"], /extra/, 2],
        [
          "unknown scope",
          ["keys", "create", "--workspace", WS, "--scopes", "leads.read,leads.fly", "--json"],
          /leads\.fly/,
          2,
        ],
        ["missing --scopes", ["keys", "create", "--workspace", WS, "--json"], /--scopes/, 2],
        [
          "a --workspace that is no workspace id",
          ["keys", "create", "--workspace", "acme", "--scopes", "all", "--json"],
          /--workspace takes a workspace id.*'acme'/,
          2,
        ],
        ["keys list without --workspace", ["keys", "list", "--json"], /--workspace is required/, 2],
        [
          "a --scopes flag on keys list",
          ["keys", "list", "--workspace", WS, "--scopes", "all", "--json"],
          /scopes/,
          2,
        ],
        ["revoke with no id", ["keys", "revoke", "--json"], /key id/i, 2],
        [
          "revoke with something that is no key id",
          ["keys", "revoke", "ktr_live_abc", "--json"],
          /key id.*'ktr_live_abc'/,
          2,
        ],
        [
          "arguments over 64 KiB",
          workspaceCreate("x".repeat(70_000), "pro", "--owner-email", "a@example.com", "--json"),
          /too long/,
          2,
        ],
        [
          "unknown workspace (keys create)",
          ["keys", "create", "--workspace", WS, "--scopes", "all", "--json"],
          new RegExp(`No workspace ${WS}\\.`),
          1,
        ],
        [
          "unknown workspace (keys list)",
          ["keys", "list", "--workspace", WS, "--json"],
          new RegExp(`No workspace ${WS}\\.`),
          1,
        ],
        [
          "unknown key id",
          ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"],
          /No key key_01M7ZX1GA2MCV1NFM3S6NTSVN6\./,
          1,
        ],
      ];

      it.each(badCases)(
        "rejects %s with its message on stderr and its exit code",
        async (_name, args, message, exit) => {
          const result = await cli(scratch, args);
          expectFailure(result, message, exit);
          // --json: the same message as one JSON line on stdout
          expect(JSON.parse(result.stdout).error).toMatch(message);
        },
      );

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
        const args = workspaceCreate(`Acme ${plan}`, plan, "--owner-email", email, "--json");
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
          expect(ws!.memberships.map((m) => ({ userId: m.userId, role: m.role }))).toEqual([
            { userId: created.owner_id, role: "owner" },
          ]);
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
        const scoped = await cli(scratch, [
          "keys",
          "create",
          "--workspace",
          ws,
          "--scopes",
          "leads.read,clients.write",
          "--name",
          "CI key",
          "--json",
        ]);
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
        expect(keys[0]).toMatchObject({
          workspaceId: ws,
          name: "CI key",
          scopes: ["leads.read", "clients.write"],
          revokedAt: null,
        });
        expect(keys[1]).toMatchObject({ workspaceId: ws, scopes: [...SCOPES], revokedAt: null });
        for (const [row, created] of [
          [keys[0]!, scopedKey],
          [keys[1]!, fullKey],
        ] as const) {
          expect(JSON.stringify(row)).not.toContain(created.key); // only a hash is stored
        }
      });

      it("the created keys work against a running server, with exactly their scopes", {
        timeout: 90_000,
      }, async () => {
        const server = await startServer(scratch);
        try {
          const scoped = rest(server.api, scopedKey.key);
          const ws = await scoped.get("/workspace");
          expect(ws.status).toBe(200);
          expect(ws.body).toMatchObject({
            object: "workspace",
            id: workspaces.pro!.workspace_id,
            name: "Acme pro",
            plan: "pro",
            agent_auth_enabled: true,
          });
          expect((await scoped.get("/leads")).status).toBe(200);
          const denied = await scoped.post("/leads", { first_name: "Nope" });
          expect(denied.status).toBe(403);
          expect(denied.body.error).toMatchObject({
            code: "insufficient_scope",
            required_scope: "leads.write",
          });

          const full = rest(server.api, fullKey.key);
          const lead = await full.post("/leads", { full_name: "Ada Lovelace" });
          expect(lead.status).toBe(201);
          expect((await scoped.get(`/leads/${lead.body.id}`)).body).toMatchObject({
            id: lead.body.id,
            full_name: "Ada Lovelace",
          });
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
        it("after the server stops, the CLI opens the database itself: the revocation and the data stayed", {
          timeout: 90_000,
        }, async () => {
          expect(await counts(scratch)).toEqual({ workspaces: 4, users: 4, memberships: 4, api_keys: 2 });
          const keys = await cli(scratch, [
            "keys",
            "list",
            "--workspace",
            workspaces.pro!.workspace_id,
            "--json",
          ]);
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
        const rows = await inspect(scratch, (db) =>
          db.apiKey.findMany({ select: { id: true, revokedAt: true } }),
        );
        expect(rows.every((r) => r.revokedAt instanceof Date)).toBe(true);
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
    const result = await cliProcess(
      {
        env: {
          DATA_DIR: dataDir,
          DATABASE_URL: `postgres://postgres:hunter2secret@127.0.0.1:${port}/kontor_nowhere`,
        },
      },
      ["workspace", "list", "--json"],
    );
    expectFailure(
      result,
      new RegExp(`cannot open PostgreSQL at 127\\.0\\.0\\.1:${port}/kontor_nowhere: .*ECONNREFUSED`),
      1,
    );
    expect(result.stderr + result.stdout).not.toContain("hunter2secret");
  });

  it("a bad environment: exit 1 with the variable named", async () => {
    const result = await cli({ env: { DATA_DIR: dataDir, KONTOR_ENV: "staging" } }, ["workspace", "list"]);
    expectFailure(result, /KONTOR_ENV must be development or production, got 'staging'/, 1);
  });

  it("the database locked by a live process without a control socket: exit 1, saying both", async () => {
    holdLock();
    const absent = await cli(embedded(), ["workspace", "list", "--json"]);
    expectFailure(
      absent,
      new RegExp(`in use by process ${process.pid}.*control socket.*kontor\\.sock \\(ENOENT\\)`),
      1,
    );
    expect(JSON.parse(absent.stdout).error).toMatch(/in use by process/);
    // a socket file nobody listens on (a plain file here)
    writeFileSync(controlSocketPath(dataDir), "");
    const refused = await cli(embedded(), ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6"]);
    expectFailure(
      refused,
      new RegExp(`in use by process ${process.pid}.*kontor\\.sock \\(ECONNREFUSED\\)`),
      1,
    );
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
    expect(requests).toEqual([
      `${JSON.stringify({ v: 1, argv: ["keys", "list", "--workspace", "ws_01M7ZX1GA2MCV1NFM3S6NTSVN6"] })}\n`,
    ]);
  });

  it("a server answering nonsense, or hanging up without an answer: exit 1, no stack trace", async () => {
    holdLock();
    await fakeServer((_request, socket) => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"));
    expectFailure(
      await cli(embedded(), ["workspace", "list"]),
      /answer on .*kontor\.sock is not one the CLI understands/,
      1,
    );
    await new Promise((resolve) => fakes.pop()!.close(resolve));
    await fakeServer((_request, socket) => socket.destroy());
    expectFailure(
      await cli(embedded(), ["workspace", "list", "--json"]),
      /closed its control socket .*kontor\.sock without an answer/,
      1,
    );
  });
});
