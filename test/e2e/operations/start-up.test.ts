/**
 * docs/operations/configuration.md: the server's start-up (`server/main.ts`) on both stacks. Servers
 * are real child processes; the CLI (`runCli`, in this process) and direct reads check the database
 * between starts. Each stack gets its own scratch databases:
 *   B: the first start in development (demo seed), a second start and data surviving restarts;
 *   C: a start in production (no seed) and a start on a port in use.
 * Helpers: ./support.ts.
 */
import { createServer } from "node:net";
import { verify } from "@node-rs/argon2";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { rest } from "../../support/http.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import {
  cli,
  counts,
  inspect,
  KEY,
  killAll,
  killGroup,
  oneJson,
  type Scratch,
  STACK_TRACE,
  spawnChild,
  startServer,
  waitFor,
} from "./support.ts";

for (const stack of stacks()) {
  describe(`cli and start-up: server start-up [${stack}]`, () => {
    afterEach(() => {
      // a test that failed half-way must not leave a server holding the database
      killAll(false);
    });
    afterAll(() => {
      killAll();
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

      it("first start in development seeds the Demo workspace and prints its credentials once", {
        timeout: 90_000,
      }, async () => {
        const server = await startServer(scratch);
        try {
          await waitFor(
            () => /Try:.*\n/.test(server.stdout()),
            15_000,
            () => `no credentials on stdout: ${server.stdout()}`,
          );
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
          expect(out).toMatch(
            new RegExp(`password: \\S+\\n\\s*Dashboard: http://localhost:${server.port}/dashboard\\s`),
          );
          const pre = await fetch(`${server.url}/dashboard/api/session`);
          const { csrf_token } = (await pre.json()) as { csrf_token: string };
          const signIn = await fetch(`${server.url}/dashboard/api/sign-in`, {
            method: "POST",
            headers: {
              "Content-Type": "application/json",
              "X-CSRF-Token": csrf_token,
              Cookie: pre.headers.getSetCookie()[0]!.split(";")[0]!,
            },
            body: JSON.stringify({ email: "owner@example.com", password }),
          });
          expect(signIn.status).toBe(200);
          expect(
            ((await signIn.json()) as { workspaces: { name: string; role: string }[] }).workspaces,
          ).toMatchObject([{ name: "Demo", role: "owner" }]);

          const api = rest(server.api, key);
          const ws = await api.get("/workspace");
          expect(ws.status).toBe(200);
          expect(ws.body).toMatchObject({
            object: "workspace",
            name: "Demo",
            plan: "pro",
            agent_auth_enabled: true,
          });
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

      it("a second start prints no credentials, creates nothing, and the data survived the restart", {
        timeout: 90_000,
      }, async () => {
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

      it("data written over REST survives another stop (SIGTERM, exit 0) and start", {
        timeout: 90_000,
      }, async () => {
        let leadId: string;
        const first = await startServer(scratch);
        try {
          const res = await rest(first.api, demo.key).post("/leads", {
            full_name: "Katherine Johnson",
            priority: "urgent",
          });
          expect(res.status).toBe(201);
          leadId = res.body.id;
          expect(await first.stop()).toBe(0);
        } finally {
          killGroup(first.child);
        }
        const second = await startServer(scratch);
        try {
          const api = rest(second.api, demo.key);
          expect((await api.get(`/leads/${leadId}`)).body).toMatchObject({
            id: leadId,
            full_name: "Katherine Johnson",
            priority: "urgent",
          });
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
        const server = await startServer(scratch, {
          KONTOR_ENV: "production",
          KONTOR_SECRET_KEY: "cli-test-secret-key-0123456789abcdefghij",
        });
        let out: string;
        try {
          const refused = await rest(server.api).get("/workspace");
          expect(refused.status).toBe(401);
          // docs/operations/deploy.md#load-balancer: idle connections are closed after 5 s, and answers say so.
          expect(refused.headers.get("keep-alive")).toBe("timeout=5");
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

      it("production without KONTOR_SECRET_KEY refuses to start, saying what to set, exit 1", {
        timeout: 90_000,
      }, async () => {
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

      it("a port in use stops the start with a clear message, exit 1 and no stack trace", {
        timeout: 90_000,
      }, async () => {
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
