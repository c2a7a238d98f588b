import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../../server/db/open.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import {
  type ChildServer,
  childEnv,
  entryArgs,
  entryEnv,
  startChildServer,
} from "../../support/child-server.ts";
import { call, raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

type Line = Record<string, unknown>;

/** Every stderr line parsed: a line that is not JSON fails the test. */
function parse(stderr: string): Line[] {
  return stderr
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      try {
        return JSON.parse(line) as Line;
      } catch {
        throw new Error(`stderr line is not JSON: ${line}`);
      }
    });
}

const accessLines = (lines: Line[]) => lines.filter((line) => line.msg === "request");
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Waits (bounded) for the start-up line: the server may answer before it has written it. */
async function announced(child: ChildServer): Promise<void> {
  const text = await eventually(
    async () => child.stderr(),
    (stderr) => stderr.includes("Kontor listening"),
  );
  expect(text, "the start-up line").toContain("Kontor listening");
}

/** `server/main.ts` run to its exit: for settings it must refuse before opening anything. */
async function runMain(env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  try {
    await promisify(execFile)(process.execPath, entryArgs("server/main.ts"), {
      env: childEnv({ ...entryEnv("server/main.ts"), PORT: "0", ...env }),
      timeout: 60_000,
    });
    return { code: 0, stderr: "" };
  } catch (error) {
    const failure = error as { code?: number; stderr?: string };
    return { code: failure.code ?? -1, stderr: failure.stderr ?? "" };
  }
}

for (const stack of stacks()) {
  describe(`access log [${stack}]`, () => {
    let scratch: Awaited<ReturnType<typeof provisionStack>>;
    let tenant: Awaited<ReturnType<typeof tenantIn>>;

    beforeAll(async () => {
      scratch = await provisionStack(stack);
      tenant = await tenantIn({ ...scratch.env, KONTOR_ENV: "development" }, "Access log");
    });
    afterAll(async () => {
      await scratch?.drop();
    });

    it("writes one JSON line per request with the route template, status, duration and credential, and no secrets", {
      timeout: 120_000,
    }, async () => {
      const child = await startChildServer({ ...scratch.env, KONTOR_ENV: "development", KONTOR_LOG: "info" });
      const basic = Buffer.from("user:hunter2-password").toString("base64");
      const badKey = `ktr_live_${"Z".repeat(43)}`;
      const expected: {
        id: string;
        method: string;
        route: string | null;
        status: number;
        credential: string | null;
      }[] = [];
      let leadId = "";
      try {
        const record = (
          res: { status: number; headers: Headers },
          method: string,
          route: string | null,
          credential: string | null,
        ) => {
          const id = res.headers.get("x-request-id");
          expect(id, `${method} ${route}: X-Request-Id`).toMatch(/^req_/);
          expected.push({ id: id!, method, route, status: res.status, credential });
        };
        const created = await call("POST", `${child.api}/leads`, {
          key: tenant.key,
          body: { first_name: "Ada", email: "ada@example.com" },
        });
        expect(created.status).toBe(201);
        leadId = created.body.id;
        record(created, "POST", "/v1/leads", tenant.keyId);

        const read = await call("GET", `${child.api}/leads/${leadId}`, { key: tenant.key });
        expect(read.status).toBe(200);
        record(read, "GET", "/v1/leads/{id}", tenant.keyId);

        const searched = await call("GET", `${child.api}/leads?search=needle-in-query&limit=5`, {
          key: tenant.key,
        });
        expect(searched.status).toBe(200);
        record(searched, "GET", "/v1/leads", tenant.keyId);

        const anonymous = await call("GET", `${child.api}/leads/${leadId}`);
        expect(anonymous.status).toBe(401);
        record(anonymous, "GET", "/v1/leads/{id}", null);

        const wrongKey = await call("GET", `${child.api}/leads`, {
          headers: { authorization: `Bearer ${badKey}` },
        });
        expect(wrongKey.status).toBe(401);
        record(wrongKey, "GET", "/v1/leads", null);

        const wrongScheme = await call("GET", `${child.api}/workspace`, {
          headers: { authorization: `Basic ${basic}` },
        });
        expect(wrongScheme.status).toBe(401);
        record(wrongScheme, "GET", "/v1/workspace", null);

        const missing = await call("GET", `${child.api}/no-such-route/${leadId}`, { key: tenant.key });
        expect(missing.status).toBe(404);
        record(missing, "GET", null, tenant.keyId);

        const gql = await raw(`${child.url}/graphql`, {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
          body: JSON.stringify({ query: `{ lead(id: "${leadId}") { id } }` }),
        });
        expect(gql.status).toBe(200);
        expect(gql.json.data.lead.id).toBe(leadId);
        record(gql, "POST", "/graphql", tenant.keyId);

        const health = await raw(`${child.url}/health`);
        expect(health.status).toBe(200);
        record(health, "GET", "/health", null);
        await announced(child);
      } finally {
        // Stopping waits for stderr to close, so every line written is read.
        await child.stop();
      }

      const lines = parse(child.stderr());
      const access = accessLines(lines);
      for (const want of expected) {
        const mine = access.filter((line) => line.request_id === want.id);
        expect(mine, `${want.method} ${want.route} ${want.status}: one access line`).toHaveLength(1);
        expect(mine[0]).toEqual({
          level: "info",
          time: expect.stringMatching(ISO_TIME),
          msg: "request",
          request_id: want.id,
          method: want.method,
          route: want.route,
          status: want.status,
          duration_ms: expect.any(Number),
          credential_id: want.credential,
        });
        expect(mine[0]!.duration_ms as number).toBeGreaterThanOrEqual(0);
      }

      const text = child.stderr();
      for (const secret of [
        tenant.key,
        badKey,
        basic,
        "ktr_live_",
        "hunter2",
        "needle-in-query",
        leadId,
        "authorization",
        "Bearer",
      ]) {
        expect(text, `stderr must not contain ${secret}`).not.toContain(secret);
      }
      expect(lines.find((line) => line.msg === "Kontor listening")).toMatchObject({
        level: "info",
        time: expect.stringMatching(ISO_TIME),
        env: "development",
      });
    });

    it("announces 'Kontor listening' only once the first-start demo workspace is seeded", {
      timeout: 120_000,
      skip: stack !== "postgres",
    }, async () => {
      // A database of its own with no workspace in it, so the child seeds the demo one.
      const fresh = await provisionStack(stack);
      const env = { ...fresh.env, KONTOR_ENV: "development", KONTOR_LOG: "info" };
      const admin = new pg.Client({ connectionString: fresh.env.DATABASE_URL });
      let child: ChildServer | undefined;
      try {
        await (await openDatabase(loadConfig(env))).close(); // migrated before the lock is taken
        await admin.connect();
        await admin.query("begin");
        await admin.query("lock table workspaces in access exclusive mode");
        child = await startChildServer(env);
        // Seeding is now blocked on the lock: the server answers, but must not say it is ready.
        const waiting = await eventually(
          async () =>
            Number(
              (
                await admin.query(
                  `select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'workspaces' and not l.granted`,
                )
              ).rows[0].n,
            ),
          (n) => n > 0,
        );
        expect(waiting, "the demo seeding waits on the held lock").toBeGreaterThan(0);
        expect(child.stderr()).not.toContain("Kontor listening");

        await admin.query("rollback");
        const announced = await eventually(
          async () => child!.stderr(),
          (text) => text.includes("Kontor listening"),
        );
        expect(announced).toContain("Kontor listening");
        const demo = await admin.query(`select count(*)::int as n from workspaces where name = 'Demo'`);
        expect(demo.rows[0].n).toBe(1);
      } finally {
        await admin.query("rollback").catch(() => {});
        await admin.end().catch(() => {});
        await child?.stop();
        await fresh.drop();
      }
    });
  });
}

describe("log settings", () => {
  const stack = stacks()[0]!;
  let scratch: Awaited<ReturnType<typeof provisionStack>>;

  beforeAll(async () => {
    scratch = await provisionStack(stack);
    await tenantIn({ ...scratch.env, KONTOR_ENV: "development" }, "Access log"); // no demo seeding to wait for
  });
  afterAll(async () => {
    await scratch?.drop();
  });

  /** Starts a child with `env`, makes a request and a 401, stops it: its stderr lines. */
  async function linesOf(
    env: NodeJS.ProcessEnv,
    ready: (child: ChildServer) => Promise<void> = async () => {},
  ): Promise<Line[]> {
    const child = await startChildServer({ ...scratch.env, KONTOR_ENV: "development", ...env });
    try {
      expect((await raw(`${child.url}/health`)).status).toBe(200);
      expect((await call("GET", `${child.api}/leads`)).status).toBe(401);
      await ready(child);
    } finally {
      await child.stop();
    }
    return parse(child.stderr());
  }

  it("KONTOR_ACCESS_LOG=off drops only the access lines; other info lines stay", {
    timeout: 120_000,
  }, async () => {
    const lines = await linesOf({ KONTOR_LOG: "info", KONTOR_ACCESS_LOG: "off" }, announced);
    expect(accessLines(lines)).toEqual([]);
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining(["Kontor listening", "shutting down"]),
    );
  });

  it("KONTOR_LOG=warn hides info lines, the access log included", { timeout: 120_000 }, async () => {
    const lines = await linesOf({ KONTOR_LOG: "warn" });
    expect(lines.filter((line) => line.level === "info")).toEqual([]);
    expect(accessLines(lines)).toEqual([]);
  });

  it.each([
    ["KONTOR_LOG", "verbose", /KONTOR_LOG must be one of info, warn, error, silent; got 'verbose'/],
    ["KONTOR_ACCESS_LOG", "maybe", /KONTOR_ACCESS_LOG must be on or off; got 'maybe'/],
  ])(
    "%s=%s is refused at start with a message, exit 1",
    { timeout: 60_000 },
    async (name, value, message) => {
      const result = await runMain({ ...scratch.env, [name]: value });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
    },
  );
});
