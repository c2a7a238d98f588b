import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PLAN_LIMITS } from "../../../schema/lib/plans.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import {
  completion,
  type FakeOpenAI,
  gate,
  startFakeOpenAI,
  stream,
  usageOf,
} from "../../support/fake-openai.ts";
import { raw } from "../../support/http.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

/**
 * Two server processes on one PostgreSQL and one Redis share a workspace's coding plan: its token
 * pools and its slots for requests running at once.
 */
describe.runIf(stacks().includes("postgres"))(
  "the coding plan across two server processes [postgres]",
  () => {
    let scratch: Awaited<ReturnType<typeof provisionStack>>;
    let fake: FakeOpenAI;
    const servers: RunningServer[] = [];

    beforeAll(async () => {
      fake = await startFakeOpenAI();
      scratch = await provisionStack("postgres");
      const env = { ...scratch.env, PORT: "0", AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-cluster" };
      servers.push(await startServer(loadConfig(env), { publicUrlFromPort: true }));
      servers.push(await startServer(loadConfig(env), { publicUrlFromPort: true }));
    });

    afterAll(async () => {
      for (const running of servers) await running.close();
      await scratch?.drop();
      await fake?.close();
    });

    async function freeWorkspaceKey(): Promise<string> {
      const [one] = servers as [RunningServer];
      const ws = await createWorkspace(one.db.prisma, {
        name: "Cluster",
        plan: "free",
        ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      return (await createApiKey(one.db.prisma, { workspaceId: ws.workspace_id, scopes: ["ai.coding"] })).key;
    }

    const chat = (server: RunningServer, key: string, body: Record<string, unknown> = {}) =>
      raw(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], ...body }),
      });

    it("spends one 5-hour pool: tokens counted on one process refuse the next request on the other", async () => {
      const [one, two] = servers as [RunningServer, RunningServer];
      const key = await freeWorkspaceKey();
      const pool = PLAN_LIMITS.free.coding_tokens_5h;
      fake.next(completion({ usage: usageOf(pool - 1000, 999) }));
      const first = await chat(one, key);
      expect(first.status, first.text).toBe(200);
      // Counted before the answer left: the other process sees 1 token left, then none.
      fake.next(completion({ usage: usageOf(1, 1) }));
      const second = await chat(two, key);
      expect(second.status, second.text).toBe(200);
      expect(second.headers.get("x-codingplan-5h-used-percent")).toBe("100");
      const before = fake.requests.length;
      const refused = await chat(one, key);
      expect(refused.status).toBe(429);
      expect(refused.json.error.code).toBe("rate_limit_exceeded");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(fake.requests.length).toBe(before);
    });

    it("shares the slots: a stream running on one process makes the other refuse a second request on the free plan", async () => {
      const [one, two] = servers as [RunningServer, RunningServer];
      const key = await freeWorkspaceKey();
      const held = gate();
      fake.next(stream({ deltas: ["Hel", "lo"], usage: usageOf(3, 2), holdAfter: 2, gate: held.promise }));
      const running = await fetch(`${one.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "hi" }],
          stream: true,
        }),
      });
      expect(running.status).toBe(200);
      const refused = await chat(two, key);
      expect(refused.status).toBe(429);
      expect(refused.json.error.code).toBe("concurrency_limit_exceeded");
      held.open();
      expect(await running.text()).toContain("data: [DONE]");
      // The slot is given back once the stream has ended, on either process.
      const again = await eventually(
        () => chat(two, key),
        (res) => res.status !== 429,
      );
      expect(again.status, again.text).toBe(200);
    });
  },
);
