import { randomBytes, randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { openDatabase } from "../../../server/db/open.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { redisNamespace } from "../../../server/runtime/redis.ts";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { call } from "../../support/http.ts";
import { mb, rssOf } from "../../support/rss.ts";
import { provisionStack } from "../../support/server.ts";
import { REDIS_URL, stacks } from "../../support/stacks.ts";

/** What one hammering request's response weighs: 20 tasks of 10 000 incompressible characters, about 200 kB. */
const TASKS = 20;
const BOUND = PLAN_LIMITS.free.idempotency_bytes;
/** Fresh keys sent: about 1.7 times what the free plan's records may hold, within its 120 requests a minute. */
const HAMMER = 100;

interface Setup {
  workspaceId: string;
  key: string;
  projectId: string;
  deploymentId: string;
}

/** A free workspace with a project of big tasks, written before the server opens the database. */
async function seed(env: NodeJS.ProcessEnv): Promise<Setup> {
  const db = await openDatabase(loadConfig(env));
  try {
    const ws = await createWorkspace(db.prisma, {
      name: "Hammer",
      plan: "free",
      ownerEmail: `owner-${randomUUID()}@example.com`,
      ownerPassword: "correct horse battery staple",
    });
    const key = await createApiKey(db.prisma, {
      workspaceId: ws.workspace_id,
      scopes: ["projects.read", "projects.write", "leads.read", "leads.write"],
    });
    const project = await db.prisma.project.create({
      data: { id: newId("project"), workspaceId: ws.workspace_id, name: "Big" },
    });
    await db.prisma.task.createMany({
      data: Array.from({ length: TASKS }, (_, i) => ({
        id: newId("task"),
        workspaceId: ws.workspace_id,
        projectId: project.id,
        title: `Task ${i}`,
        description: randomBytes(7_500).toString("base64").slice(0, 10_000),
      })),
    });
    return {
      workspaceId: ws.workspace_id,
      key: key.key,
      projectId: project.id,
      deploymentId: db.deploymentId,
    };
  } finally {
    await db.close();
  }
}

for (const stack of stacks()) {
  describe(`idempotency records of a workspace hammering fresh keys [${stack}]`, () => {
    let scratch: Awaited<ReturnType<typeof provisionStack>>;
    let setup: Setup;
    let server: ChildServer;

    beforeAll(async () => {
      scratch = await provisionStack(stack);
      setup = await seed(scratch.env);
      server = await startChildServer({ ...scratch.env, KONTOR_ENV: "development" });
    });
    afterAll(async () => {
      await server?.stop();
      await scratch?.drop();
    });

    const update = (idempotencyKey: string) =>
      call("POST", `${server.url}/graphql`, {
        key: setup.key,
        body: {
          query: `mutation { updateProject(id: "${setup.projectId}", name: "Big") { id tasks { description } } }`,
        },
        headers: { "Idempotency-Key": idempotencyKey },
      });

    it("stays within the plan's bound in memory and in Redis, and replays still work", async () => {
      for (let i = 0; i < 5; i++) expect((await update(randomUUID())).status).toBe(200);
      const rssBefore = rssOf(server.child.pid!);
      const responses: number[] = [];
      for (let i = 0; i < HAMMER; i++) {
        const res = await update(randomUUID());
        expect(res.status).toBe(200);
        responses.push(JSON.stringify(res.body).length);
      }
      const offered = responses.reduce((sum, bytes) => sum + bytes, 0);
      // Far more was offered than the bound: without it the records would hold all of it.
      expect(offered).toBeGreaterThan(1.2 * BOUND);

      const usage = (await call("GET", `${server.api}/workspace`, { key: setup.key })).body.usage;
      expect(usage.idempotency_bytes).toBeLessThanOrEqual(BOUND);
      expect(usage.idempotency_bytes).toBeGreaterThan(BOUND / 2);
      const grown = rssOf(server.child.pid!) - rssBefore;
      console.info(
        `[${stack}] RSS grew ${mb(grown)} for ${mb(offered)} offered; the records hold ${mb(usage.idempotency_bytes)}`,
      );
      // RSS is a coarse witness: uncollected garbage of 100 big responses alone moved it by up to
      // 70 MB on a loaded machine (with the records in Redis). The bound itself is proven by the
      // records' own accounting above and by Redis's memory below; this catches only growth of
      // another order (a process that kept far more than any plan's bound).
      expect(grown, `RSS grew ${mb(grown)} for ${mb(offered)} offered`).toBeLessThan(10 * BOUND);

      if (stack === "postgres") {
        const redis = new Redis(REDIS_URL);
        try {
          const pattern = `${redisNamespace(setup.deploymentId)}idem:${setup.workspaceId}:*`;
          const keys: string[] = [];
          for (let cursor = "0"; ; ) {
            const [next, found] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
            keys.push(...found);
            cursor = next;
            if (cursor === "0") break;
          }
          let held = 0;
          for (const key of keys) held += (await redis.memory("USAGE", key)) ?? 0;
          expect(keys.length).toBeLessThan(HAMMER);
          expect(held, `Redis holds ${mb(held)}`).toBeLessThan(1.25 * BOUND);
          for (const key of keys) expect(await redis.pttl(key)).toBeGreaterThan(0);
        } finally {
          redis.disconnect();
        }
      }

      // A create with a key still replays.
      const key = randomUUID();
      const create = () =>
        call("POST", `${server.api}/leads`, {
          key: setup.key,
          body: { full_name: "After the storm" },
          headers: { "Idempotency-Key": key },
        });
      const first = await create();
      expect(first.status).toBe(201);
      const again = await create();
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.body).toEqual(first.body);
    });
  });
}
