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
vi.mock("pglite-prisma-adapter", track("pglite-prisma-adapter"));

// docs/performance.md#memory: a module is imported when its feature is configured (the embedded
// stack's check is lazy-modules-embedded.test.ts, a file of its own so neither sees the other's).
describe("the PostgreSQL stack with Redis and local storage", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer("postgres");
  });
  afterAll(() => server?.close());

  it("loads PostgreSQL's adapter and BullMQ, but neither PGlite nor the AWS SDK", () => {
    expect([...loaded].sort()).toEqual(["@prisma/adapter-pg", "bullmq"]);
  });
});
