/**
 * docs/operations/configuration.md: the operator CLI (`server/cli.ts`) while a server runs, on both
 * stacks: the server is a real child process; on the embedded stack the CLI's commands go over the
 * server's control socket. Helpers: ./support.ts.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { controlSocketPath } from "../../../server/control/protocol.ts";
import { raw, rest } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import {
  cli,
  cliProcess,
  expectFailure,
  kept,
  killAll,
  killGroup,
  oneJson,
  type Scratch,
  type Server,
  startServer,
  waitFor,
} from "./support.ts";

for (const stack of stacks()) {
  describe(`cli and start-up: the CLI while the server runs [${stack}]`, () => {
    afterEach(() => {
      // a test that failed half-way must not leave a server holding the database
      killAll(false);
    });
    afterAll(() => {
      killAll();
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
          socket.on("error", (error: NodeJS.ErrnoException) =>
            error.code === "EPIPE" || error.code === "ECONNRESET" ? undefined : reject(error),
          );
          socket.on("connect", () => socket.write(payload));
          setTimeout(
            () => socket.destroy(new Error(`no answer on the control socket: ${answer}`)),
            15_000,
          ).unref();
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

      it("workspace create and keys create run while the server runs, and the new key works at once", {
        timeout: 90_000,
      }, async () => {
        const created = await cli(scratch, [
          "workspace",
          "create",
          "--name",
          "Live Co",
          "--plan",
          "plus",
          "--owner-email",
          "live@example.com",
          "--json",
        ]);
        expect(created.code, created.stderr).toBe(0);
        workspaceId = oneJson(created).workspace_id as string;
        expect(workspaceId).toMatch(/^ws_[0-9A-Z]{26}$/);

        const key = await cli(scratch, [
          "keys",
          "create",
          "--workspace",
          workspaceId,
          "--scopes",
          "leads.read,leads.write",
          "--name",
          "live key",
          "--json",
        ]);
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

      it("keys list shows the key's id, name, prefix, scopes and times, never its secret or hash", {
        timeout: 90_000,
      }, async () => {
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
        expect(Object.keys(listed[0]!).sort()).toEqual([
          "created_at",
          "id",
          "last_used_at",
          "name",
          "object",
          "prefix",
          "revoked_at",
          "scopes",
        ]);
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

      it("workspace list shows every workspace with its plan and key counts; migrate finds nothing to do", {
        timeout: 90_000,
      }, async () => {
        const list = await cli(scratch, ["workspace", "list", "--json"]);
        expect(list.code, list.stderr).toBe(0);
        const json = oneJson(list);
        expect(json).toMatchObject({ object: "list", has_more: false, next_cursor: null });
        const data = json.data as Record<string, unknown>[];
        // development seeded Demo first; newest first
        expect(data.map((w) => w.name)).toEqual(["Live Co", "Demo"]);
        expect(Object.keys(data[0]!).sort()).toEqual([
          "active_key_count",
          "created_at",
          "id",
          "key_count",
          "name",
          "object",
          "plan",
        ]);
        expect(data[0]).toMatchObject({
          object: "workspace",
          id: workspaceId,
          plan: "plus",
          key_count: 1,
          active_key_count: 1,
        });
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
        expectFailure(
          await cli(scratch, ["keys", "list", "--workspace", missing]),
          new RegExp(`No workspace ${missing}\\.`),
          1,
        );
        expectFailure(
          await cli(scratch, ["keys", "revoke", "key_01M7ZX1GA2MCV1NFM3S6NTSVN6", "--json"]),
          /No key key_01M7ZX1GA2MCV1NFM3S6NTSVN6\./,
          1,
        );
        // checked by createWorkspace, on the server's side of the socket
        const badEmail = await cli(scratch, [
          "workspace",
          "create",
          "--name",
          "X",
          "--plan",
          "free",
          "--owner-email",
          "nope",
          "--json",
        ]);
        expectFailure(badEmail, /'nope' is not an e-mail address/, 2);
        expect(JSON.parse(badEmail.stdout)).toEqual({ error: "'nope' is not an e-mail address." });
        const list = oneJson(await cli(scratch, ["workspace", "list", "--json"]));
        expect((list.data as unknown[]).length).toBe(2);
      });

      it("signing-keys rotate publishes a new key for agents' identity assertions, which the server serves", {
        timeout: 90_000,
      }, async () => {
        const before = (await raw(`${server.url}/.well-known/jwks.json`)).json.keys.map(
          (key: { kid: string }) => key.kid,
        );
        expect(before).toHaveLength(1);
        const rotated = await cli(scratch, ["signing-keys", "rotate", "--json"]);
        expect(rotated.code, rotated.stderr).toBe(0);
        const json = oneJson(rotated);
        expect(json.kid).toMatch(/^sk_[0-9A-Z]{26}$/);
        expect(Date.parse(json.signs_from as string)).toBeGreaterThan(Date.now());
        // Published within seconds on every process; the old key stays.
        let kids: string[] = [];
        await waitFor(
          async () =>
            (kids = (await raw(`${server.url}/.well-known/jwks.json`)).json.keys.map(
              (key: { kid: string }) => key.kid,
            )).length === 2,
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
        await waitFor(
          async () => (last = (await api.get("/workspace")).status) === 401,
          10_000,
          () => `revoked key still answers ${last}`,
        );
        const list = oneJson(await cli(scratch, ["workspace", "list", "--json"]));
        expect((list.data as Record<string, unknown>[])[0]).toMatchObject({
          id: workspaceId,
          key_count: 1,
          active_key_count: 0,
        });
      });

      if (stack === "embedded") {
        it("the socket answers nothing but the CLI's requests, bounds their size, and the server carries on", {
          timeout: 90_000,
        }, async () => {
          const http = await exchange("GET /v1/workspace HTTP/1.1\r\nHost: localhost\r\n\r\n");
          expect(http).not.toMatch(/HTTP\/1\.1/);
          expect(JSON.parse(http)).toEqual({ exit: 1, message: "control socket: not a Kontor CLI request." });
          expect(JSON.parse(await exchange('{"v":2,"argv":["workspace","list"]}\n'))).toEqual({
            exit: 1,
            message: "control socket: not a Kontor CLI request.",
          });
          expect(JSON.parse(await exchange('{"v":1,"argv":["workspace",7]}\n')).exit).toBe(1);
          expect(JSON.parse(await exchange(Buffer.alloc(200_000, "a")))).toEqual({
            exit: 1,
            message: "control socket: the request exceeds 65536 bytes.",
          });
          const unknown = JSON.parse(await exchange('{"v":1,"argv":["serve","--port","80"]}\n'));
          expect(unknown).toEqual({ exit: 2, message: "unknown command 'serve'." });
          const listed = JSON.parse(await exchange('{"v":1,"argv":["workspace","list","--json"]}\n'));
          expect(listed.exit).toBe(0);
          expect(listed.json.data).toHaveLength(2);
          // a client that hangs up mid-command does not hurt the server
          const socket = createConnection(socketPath, () =>
            socket.end('{"v":1,"argv":["workspace","list"]}\n', () => socket.destroy()),
          );
          socket.on("error", () => {});
          expect((await fetch(`${server.url}/v1/.well-known/oauth-protected-resource`)).status).toBe(200);
          expect((await cli(scratch, ["workspace", "list", "--json"])).code).toBe(0);
        });

        it("gives the same output as the CLI on its own; stopping removes the socket; a stale one is replaced", {
          timeout: 120_000,
        }, async () => {
          const commands = [
            ["workspace", "list", "--json"],
            ["workspace", "list"],
            ["keys", "list", "--workspace", workspaceId, "--json"],
          ];
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
          await waitFor(
            () => crashed.child.exitCode !== null || crashed.child.signalCode !== null,
            15_000,
            () => "server did not die",
          );
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
  });
}
