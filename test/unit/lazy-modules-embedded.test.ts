import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestServer, type TestServer } from "../support/server.ts";

// Each factory runs when its module is first imported, and records it.
const { loaded, track } = vi.hoisted(() => {
  const loaded = new Set<string>();
  const track = (name: string) => async (original: () => Promise<unknown>) => {
    loaded.add(name);
    return original();
  };
  return { loaded, track };
});
vi.mock("bullmq", track("bullmq"));
vi.mock("@aws-sdk/client-s3", track("@aws-sdk/client-s3"));
vi.mock("@prisma/adapter-pg", track("@prisma/adapter-pg"));
vi.mock("@electric-sql/pglite", track("@electric-sql/pglite"));
vi.mock("@modelcontextprotocol/server", track("@modelcontextprotocol/server"));

// docs/performance.md#memory: a module is imported when its feature is configured. Its own file,
// so the modules the PostgreSQL stack loads (lazy-modules-postgres.test.ts) are not loaded here.
describe("the embedded stack with local storage", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer("embedded");
  });
  afterAll(() => server?.close());

  it("loads PGlite but neither PostgreSQL's adapter, BullMQ nor the AWS SDK", () => {
    expect([...loaded].sort()).toEqual(["@electric-sql/pglite"]);
  });

  it("loads the MCP SDK with the first request to /mcp, and answers it", async () => {
    const { key } = await server.tenant();
    const response = await fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(loaded.has("@modelcontextprotocol/server")).toBe(true);
    expect(response.status).toBe(200);
  });

  it("runs PGlite with a 16 MB buffer cache", async () => {
    const rows =
      await server.running.db.prisma.$queryRawUnsafe<{ shared_buffers: string }[]>("show shared_buffers");
    expect(rows).toEqual([{ shared_buffers: "16MB" }]);
  });
});
