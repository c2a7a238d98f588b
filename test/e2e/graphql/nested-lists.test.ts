import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { ENDPOINT_DELIVERIES_SHOWN, PROJECT_TASKS_SHOWN } from "../../../schema/lib/limits.ts";
import { graphql } from "../../support/graphql.ts";
import type { Tenant, TestServer } from "../../support/server.ts";
import { explainPlan, recordSql, type Statement } from "../../support/sql.ts";
import { e2e } from "../../support/suite.ts";

/**
 * Project.tasks and WebhookEndpoint.deliveries show a parent's newest N children. The database
 * must be asked for those N per parent (a LATERAL subquery with a LIMIT), never for every child
 * of the page's parents to be trimmed in memory: checked on the SQL the server sends while it
 * answers, EXPLAIN ANALYZEd with the same parameters to count the rows it reads. The busiest
 * parent also has OLDER children, never shown, so that reading them all would show in the count;
 * the tables are then ANALYZEd, as a database in use is, for the planner to see them as they are.
 */

const OLDER = 20_000;
/** An id older than every id newId makes (their time part starts with 01…). */
const olderId = (prefix: string) => `'${prefix}_' || lpad(g::text, 26, '0')`;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

const explainAnalyze = (server: TestServer, statement: Statement) =>
  explainPlan<PlanNode>(server, statement, "ANALYZE");

/**
 * The one statement that read `table` while `during` ran: a LATERAL subquery per parent (joined on
 * `parentKey`) with a LIMIT of `limit`, reading from the table no more rows than the answer
 * shows (`shown`).
 */
async function expectBoundedRead(
  server: TestServer,
  table: string,
  parentKey: string,
  limit: number,
  shown: number,
  during: () => Promise<unknown>,
) {
  const statements = await recordSql(during);
  const reads = statements.filter((s) => s.sql.includes(`FROM "public"."${table}"`));
  expect(
    reads.map((s) => s.sql),
    `statements reading ${table}`,
  ).toHaveLength(1);
  const read = reads[0]!;
  const lateral = new RegExp(
    `LEFT JOIN LATERAL \\([\\s\\S]*?FROM "public"\\."${table}" AS "(t\\d+)"([\\s\\S]*?)LIMIT \\$(\\d+)`,
  ).exec(read.sql);
  expect(lateral, read.sql).not.toBeNull();
  const [, alias, subquery, param] = lateral!;
  expect(subquery, read.sql).toContain(`"t0"."id" = "${alias}"."${parentKey}"`);
  expect(Number(read.values[Number(param) - 1])).toBe(limit);

  const plan = await explainAnalyze(server, read);
  const scans = nodesOf(plan).filter((node) => node["Relation Name"] === table);
  expect(scans.length, JSON.stringify(plan)).toBeGreaterThan(0);
  for (const scan of scans) {
    expect(scan["Rows Removed by Filter"] ?? 0, JSON.stringify(scan)).toBe(0);
    // PostgreSQL before 18 rounds the rows of a loop to an integer.
    expect(scan["Actual Rows"] * scan["Actual Loops"], JSON.stringify(scan)).toBeLessThanOrEqual(
      shown + scan["Actual Loops"] / 2,
    );
  }
}

/** Children made round-robin across the parents, so each parent's newest N are interleaved with the others'. */
function interleaved(
  counts: Record<string, number>,
  make: (parent: string) => string,
): Map<string, string[]> {
  const made = new Map(Object.keys(counts).map((parent) => [parent, [] as string[]]));
  const most = Math.max(...Object.values(counts));
  for (let i = 0; i < most; i++) {
    for (const [parent, count] of Object.entries(counts)) if (i < count) made.get(parent)!.push(make(parent));
  }
  return made;
}

const newestFirst = (ids: string[], shown: number) => [...ids].reverse().slice(0, shown);

/**
 * Another workspace's key (`gql`) lists only its own parent, with its newest `limit` children and no
 * id of A's, and A's first parent is not_found to it. `list`, `one` and `children` name the fields.
 */
async function expectOnlyOwn(
  gql: ReturnType<typeof graphql>,
  fields: { list: string; one: string; children: string },
  own: { id: string; children: string[] },
  others: { parents: string[]; children: string[] },
  limit: number,
) {
  const { list, one, children } = fields;
  const listed = await gql(`{ ${list}(limit: 100) { data { id ${children} { id } } } }`);
  expect(listed.errors).toBeUndefined();
  expect(listed.data[list].data).toEqual([
    { id: own.id, [children]: newestFirst(own.children, limit).map((id) => ({ id })) },
  ]);
  const serialized = JSON.stringify(listed.data);
  for (const id of [...others.parents, ...others.children]) expect(serialized).not.toContain(id);

  const res = await gql(`query ($id: ID!) { ${one}(id: $id) { ${children} { id } } }`, {
    id: others.parents[0],
  });
  expect(res.data).toEqual({ [one]: null });
  expect(res.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
}

e2e("nested lists", (server) => {
  const prisma = () => server().running.db.prisma;

  describe("Project.tasks", () => {
    const N = PROJECT_TASKS_SHOWN;
    let a: Tenant;
    let b: Tenant;
    /** A's projects, oldest first, and their tasks, oldest first. */
    const projects: string[] = [];
    let tasks: Map<string, string[]>;
    let bProject: string;
    let bTasks: string[];

    async function seed(workspaceId: string, counts: number[], older = 0) {
      const ids = counts.map(() => newId("project"));
      for (const id of ids)
        await prisma().project.create({ data: { id, workspaceId, name: `Nested ${id}` } });
      await prisma().$executeRawUnsafe(
        `insert into tasks (id, workspace_id, project_id, title, updated_at) select ${olderId("task")}, $1, $2, 'Older', now() from generate_series(1, $3::int) g`,
        workspaceId,
        ids[0],
        older,
      );
      const made = interleaved(Object.fromEntries(ids.map((id, i) => [id, counts[i]!])), () => newId("task"));
      const rows = [...made].flatMap(([projectId, taskIds]) =>
        taskIds.map((id) => ({ id, workspaceId, projectId, title: `Task ${id}` })),
      );
      await prisma().task.createMany({ data: rows.sort((x, y) => x.id.localeCompare(y.id)) });
      return { ids, made };
    }

    beforeAll(async () => {
      a = await server().tenant();
      b = await server().tenant();
      const seeded = await seed(a.workspaceId, [N + 37, N + 1, 3, 0], OLDER);
      projects.push(...seeded.ids);
      tasks = seeded.made;
      // B's tasks are the newest of all: were anything shared, they would be what A sees first.
      const other = await seed(b.workspaceId, [N + 20]);
      bProject = other.ids[0]!;
      bTasks = other.made.get(bProject)!;
      await prisma().$executeRawUnsafe("analyze tasks");
    });

    it(`lists each project's ${N} newest tasks, newest first`, async () => {
      const res = await graphql(server().url, a.key)(`{ projects(limit: 100) { data { id tasks { id } } } }`);
      expect(res.errors).toBeUndefined();
      expect(res.data.projects.data).toEqual(
        [...projects]
          .reverse()
          .map((id) => ({ id, tasks: newestFirst(tasks.get(id)!, N).map((task) => ({ id: task })) })),
      );
      expect(res.data.projects.data.map((p: { tasks: unknown[] }) => p.tasks.length)).toEqual([0, 3, N, N]);
    });

    it("shows the same tasks for one project, and under a task's project", async () => {
      const gql = graphql(server().url, a.key);
      const busiest = projects[0]!;
      const expected = newestFirst(tasks.get(busiest)!, N).map((id) => ({ id }));
      const one = await gql(`query ($id: ID!) { project(id: $id) { tasks { id } } }`, { id: busiest });
      expect(one.errors).toBeUndefined();
      expect(one.data.project.tasks).toEqual(expected);
      const nested = await gql(
        `query ($id: ID!) { tasks(project_id: $id, limit: 2) { data { project { id tasks { id } } } } }`,
        { id: busiest },
      );
      expect(nested.errors).toBeUndefined();
      expect(nested.data.tasks.data).toEqual(
        [1, 2].map(() => ({ project: { id: busiest, tasks: expected } })),
      );
    });

    it(`asks the database for at most ${N} tasks per project and reads no more`, async () => {
      const gql = graphql(server().url, a.key);
      const shown = [N + 37, N + 1, 3, 0].reduce((sum, count) => sum + Math.min(count, N), 0);
      await expectBoundedRead(server(), "tasks", "project_id", N, shown, async () => {
        expect((await gql(`{ projects(limit: 100) { data { id tasks { id } } } }`)).errors).toBeUndefined();
      });
      await expectBoundedRead(server(), "tasks", "project_id", N, N, async () => {
        expect(
          (await gql(`query ($id: ID!) { project(id: $id) { tasks { id } } }`, { id: projects[0] })).errors,
        ).toBeUndefined();
      });
    });

    it("never shows another workspace's tasks: B sees its own, and A's project is not_found to B", async () => {
      const own = { id: bProject, children: bTasks };
      const others = { parents: projects, children: [...tasks.values()].flat() };
      await expectOnlyOwn(
        graphql(server().url, b.key),
        { list: "projects", one: "project", children: "tasks" },
        own,
        others,
        N,
      );
    });

    it("needs projects.read for the tasks, as for the project", async () => {
      const { key } = await server().key(a.workspaceId, ["projects.write"]);
      const res = await graphql(server().url, key)(`{ projects { data { id tasks { id } } } }`);
      expect(res.data).toBeNull();
      expect(res.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "projects.read",
      });
    });
  });

  describe("WebhookEndpoint.deliveries", () => {
    const N = ENDPOINT_DELIVERIES_SHOWN;
    const COUNTS = [N + 15, N, 2, 0];
    let a: Tenant;
    let b: Tenant;
    const endpoints: string[] = [];
    let deliveries: Map<string, string[]>;
    let bEndpoint: string;
    let bDeliveries: string[];

    /** Finished deliveries of one dispatched event: nothing is ever sent to the endpoints. */
    async function seed(workspaceId: string, counts: number[], older = 0) {
      const ids = counts.map(() => newId("webhookEndpoint"));
      for (const id of ids) {
        await prisma().webhookEndpoint.create({
          data: { id, workspaceId, url: "http://127.0.0.1:9/nested", events: ["*"], secretSealed: "unused" },
        });
      }
      const event = await prisma().event.create({
        data: { id: newId("event"), workspaceId, type: "lead.created", data: {}, dispatchedAt: new Date() },
      });
      const made = interleaved(Object.fromEntries(ids.map((id, i) => [id, counts[i]!])), () =>
        newId("webhookDelivery"),
      );
      const rows = [...made].flatMap(([endpointId, deliveryIds]) =>
        deliveryIds.map((id) => ({
          id,
          workspaceId,
          endpointId,
          eventId: event.id,
          eventType: event.type,
          status: "succeeded" as const,
          attempts: 1,
        })),
      );
      await prisma().webhookDelivery.createMany({ data: rows });
      await prisma().$executeRawUnsafe(
        `insert into webhook_deliveries (id, workspace_id, endpoint_id, event_id, event_type, status, attempts, updated_at)
         select ${olderId("whd")}, $1, $2, $3, $4, 'succeeded', 1, now() from generate_series(1, $5::int) g`,
        workspaceId,
        ids[0],
        event.id,
        event.type,
        older,
      );
      return { ids, made };
    }

    beforeAll(async () => {
      a = await server().tenant();
      b = await server().tenant();
      const seeded = await seed(a.workspaceId, COUNTS, OLDER);
      endpoints.push(...seeded.ids);
      deliveries = seeded.made;
      const other = await seed(b.workspaceId, [N + 5]);
      bEndpoint = other.ids[0]!;
      bDeliveries = other.made.get(bEndpoint)!;
      await prisma().$executeRawUnsafe("analyze webhook_deliveries");
    });

    it(`lists each endpoint's ${N} latest deliveries, newest first`, async () => {
      const res = await graphql(
        server().url,
        a.key,
      )(`{ webhookEndpoints(limit: 100) { data { id deliveries { id endpoint_id } } } }`);
      expect(res.errors).toBeUndefined();
      expect(res.data.webhookEndpoints.data).toEqual(
        [...endpoints].reverse().map((id) => ({
          id,
          deliveries: newestFirst(deliveries.get(id)!, N).map((delivery) => ({
            id: delivery,
            endpoint_id: id,
          })),
        })),
      );
      const one = await graphql(server().url, a.key)(
        `query ($id: ID!) { webhookEndpoint(id: $id) { deliveries { id } } }`,
        { id: endpoints[0] },
      );
      expect(one.data.webhookEndpoint.deliveries).toEqual(
        newestFirst(deliveries.get(endpoints[0]!)!, N).map((id) => ({ id })),
      );
    });

    it(`asks the database for at most ${N} deliveries per endpoint and reads no more`, async () => {
      const shown = COUNTS.reduce((sum, count) => sum + Math.min(count, N), 0);
      await expectBoundedRead(server(), "webhook_deliveries", "endpoint_id", N, shown, async () => {
        expect(
          (
            await graphql(
              server().url,
              a.key,
            )(`{ webhookEndpoints(limit: 100) { data { deliveries { id } } } }`)
          ).errors,
        ).toBeUndefined();
      });
    });

    it("never shows another workspace's deliveries, and needs webhooks.read", async () => {
      const own = { id: bEndpoint, children: bDeliveries };
      const others = { parents: endpoints, children: [...deliveries.values()].flat() };
      await expectOnlyOwn(
        graphql(server().url, b.key),
        { list: "webhookEndpoints", one: "webhookEndpoint", children: "deliveries" },
        own,
        others,
        N,
      );

      const { key } = await server().key(a.workspaceId, ["projects.read"]);
      const refused = await graphql(server().url, key)(`{ webhookEndpoints { data { deliveries { id } } } }`);
      expect(refused.data).toBeNull();
      expect(refused.errors?.[0]?.extensions).toMatchObject({
        code: "insufficient_scope",
        required_scope: "webhooks.read",
      });
    });
  });
});
