import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import { startChildServer } from "../../support/child-server.ts";
import { type ApiResponse, rest } from "../../support/http.ts";
import { eventually, type Receiver, startReceiver } from "../../support/receiver.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

type Api = ReturnType<typeof rest>;

/** Every page of a list, 20 a page: /events caps its pages lower than other lists (large items). */
async function all(api: Api, path: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const res: ApiResponse = await api.get(`${path}${sep}limit=20${cursor ? `&cursor=${cursor}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    items.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

async function createLeads(api: Api, count: number) {
  for (let i = 0; i < count; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, count - i) }, (_, j) =>
        api.post("/leads", { first_name: `Lead ${i + j}` }),
      ),
    );
    for (const res of batch) expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
}

for (const stack of stacks()) {
  describe(`webhook delivery survives SIGKILL [${stack}]`, () => {
    let scratch: Awaited<ReturnType<typeof provisionStack>>;
    let receiver: Receiver;

    beforeAll(async () => {
      scratch = await provisionStack(stack);
      receiver = await startReceiver();
    });
    afterAll(async () => {
      await receiver?.close();
      await scratch?.drop();
    });

    it("delivers every event at least once after the server is killed with deliveries pending and in flight", {
      timeout: 150_000,
    }, async () => {
      const EVENTS = 100;
      const path = `/${stack}/durable`;
      const env = {
        ...scratch.env,
        KONTOR_ENV: "development",
        KONTOR_WEBHOOK_TIMEOUT_MS: "1500",
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms,200ms,200ms,200ms,200ms,200ms",
        KONTOR_WEBHOOK_JITTER: "0",
      };
      const tenant = await tenantIn(env, "Durability");
      // Each delivery is held open for a second: the kill finds many in flight.
      receiver.answer = () => ({ status: 200, delayMs: 1_000 });

      const first = await startChildServer(env);
      let api = rest(first.api, tenant.key);
      try {
        const endpoint = await api.post("/webhook-endpoints", {
          url: receiver.url(path),
          events: ["lead.created"],
        });
        expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
        await createLeads(api, EVENTS);
        await receiver.waitFor(path, 5);
        const waiting = await all(api, "/webhook-deliveries?status=pending");
        expect(waiting.length, "deliveries still pending when the process dies").toBeGreaterThan(0);
      } finally {
        await first.kill();
      }
      const answeredBeforeKill = receiver.on(path).length;
      expect(answeredBeforeKill, "requests in flight when the process died").toBeGreaterThan(0);

      receiver.answer = () => ({ status: 200 });
      const second = await startChildServer(env);
      api = rest(second.api, tenant.key);
      try {
        const events = await all(api, "/events?type=lead.created");
        expect(events).toHaveLength(EVENTS);
        const ids = new Set(events.map((event) => event.id as string));
        const received = await eventually(
          async () => new Set(receiver.on(path).map((request) => request.headers["webhook-id"] as string)),
          (seen) => [...ids].every((id) => seen.has(id)),
          90_000,
        );
        expect(
          [...ids].filter((id) => !received.has(id)),
          "events never delivered",
        ).toEqual([]);

        const deliveries = await eventually(
          () => all(api, "/webhook-deliveries"),
          (list) => list.length === EVENTS && list.every((d) => d.status === "succeeded"),
          30_000,
        );
        expect(deliveries).toHaveLength(EVENTS);
        expect(deliveries.filter((d) => d.status !== "succeeded")).toEqual([]);
        // At least once: a delivery cut off by the kill is sent again, never lost.
        expect(receiver.on(path).length).toBeGreaterThanOrEqual(EVENTS);
      } finally {
        await second.stop();
      }
    });
  });
}

/** A receiver that notices when one delivery is being sent twice at the same moment. */
async function overlapReceiver() {
  const active = new Set<string>();
  const overlaps: string[] = [];
  const counts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const delivery = String(req.headers["kontor-delivery"]);
    if (active.has(delivery)) overlaps.push(delivery);
    active.add(delivery);
    counts.set(delivery, (counts.get(delivery) ?? 0) + 1);
    req.resume();
    setTimeout(() => {
      active.delete(delivery);
      res.end("ok");
    }, 30);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    overlaps,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe.runIf(stacks().includes("postgres"))(
  "two server processes share deliveries without sending one twice at once [postgres]",
  () => {
    for (const queue of ["BullMQ (Redis)", "database polling (no Redis)"] as const) {
      it(`each delivery is sent once, never concurrently: ${queue}`, { timeout: 120_000 }, async () => {
        const EVENTS = 150;
        const scratch = await provisionStack("postgres");
        const receiver = await overlapReceiver();
        const servers: RunningServer[] = [];
        try {
          const env = {
            ...scratch.env,
            ...(queue.startsWith("database") && { REDIS_URL: "" }),
            PORT: "0",
            KONTOR_ENV: "development",
            KONTOR_LOG: "silent",
          };
          for (let i = 0; i < 2; i++)
            servers.push(await startServer(loadConfig(env), { publicUrlFromPort: true }));
          expect(servers.every((s) => (s.redis !== undefined) === queue.startsWith("BullMQ"))).toBe(true);
          const prisma = servers[0]!.db.prisma;
          const ws = await createWorkspace(prisma, {
            name: "Two",
            plan: "max",
            ownerEmail: `two-${Date.now()}@example.com`,
            ownerPassword: "correct horse battery staple",
          });
          const { key } = await createApiKey(prisma, { workspaceId: ws.workspace_id, scopes: [...SCOPES] });
          const apis = servers.map((s) => rest(`${s.url}/v1`, key));
          expect(
            (await apis[0]!.post("/webhook-endpoints", { url: receiver.url, events: ["*"] })).status,
          ).toBe(201);
          // Events are written through both processes, so both fan out and send.
          for (let i = 0; i < EVENTS; i += 10) {
            const batch = await Promise.all(
              Array.from({ length: 10 }, (_, j) =>
                apis[(i + j) % 2]!.post("/leads", { first_name: `L${i + j}` }),
              ),
            );
            for (const res of batch) expect(res.status).toBe(201);
          }
          const done = await eventually(
            () =>
              prisma.webhookDelivery.groupBy({
                by: ["status"],
                _count: true,
                where: { workspaceId: ws.workspace_id },
              }),
            (groups) =>
              groups.length === 1 && groups[0]!.status === "succeeded" && groups[0]!._count === EVENTS,
            60_000,
          );
          expect(done).toEqual([{ status: "succeeded", _count: EVENTS }]);
          expect(receiver.overlaps, "deliveries sent by two senders at the same time").toEqual([]);
          expect(receiver.counts.size).toBe(EVENTS);
          expect(
            [...receiver.counts.values()].filter((n) => n !== 1),
            "deliveries sent more than once",
          ).toEqual([]);
        } finally {
          await Promise.all(servers.map((s) => s.close()));
          await receiver.close();
          await scratch.drop();
        }
      });
    }
  },
);
