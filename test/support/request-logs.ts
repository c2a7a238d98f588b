import { expect } from "vitest";
import { flushRequestLogs } from "../../server/observability/request-log.ts";
import type { TestServer } from "./server.ts";

/**
 * The request-log rows of `ids`, by id. Writes are batched after the response: this flushes the
 * buffer, then polls (bounded: 10 s) until every id is stored; with the flush that is one round.
 */
export async function logged(server: TestServer, ids: string[]) {
  const prisma = server.running.db.prisma;
  const deadline = Date.now() + 10_000;
  for (;;) {
    await flushRequestLogs(server.running.db);
    const rows = await prisma.requestLog.findMany({ where: { id: { in: ids } } });
    if (rows.length === ids.length || Date.now() > deadline) {
      expect(rows.map((r) => r.id).sort(), "logged request ids").toEqual([...ids].sort());
      return new Map(rows.map((row) => [row.id, row]));
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
