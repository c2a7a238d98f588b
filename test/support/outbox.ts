import type { TestServer } from "./server.ts";

/** The outbox rows of one workspace, oldest first. */
export async function outbox(server: TestServer, workspaceId: string) {
  // Without dispatched_at: the webhook worker sets it whenever it runs.
  return server.running.db.prisma.event.findMany({
    where: { workspaceId },
    orderBy: { id: "asc" },
    omit: { dispatchedAt: true },
  });
}

/**
 * Makes every insert into the outbox fail (optionally only for one event type) until the
 * returned function is called: a real database failure inside the writing transaction.
 */
export async function breakOutbox(server: TestServer, onlyType?: string): Promise<() => Promise<void>> {
  const db = server.running.db.prisma;
  const condition = onlyType
    ? `if new.type = '${onlyType.replace(/'/g, "''")}' then raise exception 'outbox unavailable'; end if;`
    : "raise exception 'outbox unavailable';";
  await db.$executeRawUnsafe(
    `create or replace function kontor_test_break_outbox() returns trigger language plpgsql as $$ begin ${condition} return new; end $$`,
  );
  await db.$executeRawUnsafe(
    "create trigger kontor_test_break_outbox before insert on events for each row execute function kontor_test_break_outbox()",
  );
  return async () => {
    await db.$executeRawUnsafe("drop trigger if exists kontor_test_break_outbox on events");
    await db.$executeRawUnsafe("drop function if exists kontor_test_break_outbox()");
  };
}
