import { beforeAll, expect, it } from "vitest";
import { rest } from "../../support/http.ts";
import { expectError, stored } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * A transaction that runs past KONTOR_TRANSACTION_TIMEOUT_MS is rolled back whole: nothing it wrote
 * stays, nothing it started keeps running afterwards, and the caller gets a 503 to retry.
 */
e2e(
  "transaction time-out",
  (server) => {
    let tenant: Tenant;
    let api: ReturnType<typeof rest>;
    let clientId: string;

    beforeAll(async () => {
      tenant = await server().tenant();
      api = rest(server().api, tenant.key);
      clientId = (await api.post("/clients", { name: "Slow Ltd" })).body.id;
    });

    it("an invoice whose line insert outlives the time-out: 503, and no invoice, line, number or event remains", async () => {
      const db = server().running.db.prisma;
      const before = await stored(server(), tenant.workspaceId);
      // Inserting the lines takes 1.5 s: past the 1 s the transaction may run.
      await db.$executeRawUnsafe(
        "create or replace function kontor_test_slow_items() returns trigger language plpgsql as $$ begin perform pg_sleep(1.5); return null; end $$",
      );
      await db.$executeRawUnsafe(
        "create trigger kontor_test_slow_items after insert on invoice_items for each statement execute function kontor_test_slow_items()",
      );
      try {
        const items = Array.from({ length: 40 }, (_, i) => ({
          description: `Line ${i}`,
          quantity: 1,
          unit_price: 10,
        }));
        const res = await api.post("/invoices", { client_id: clientId, items });
        expectError(res, 503, "service_unavailable");
        expect(res.headers.get("retry-after")).toBe("1");
      } finally {
        await db.$executeRawUnsafe("drop trigger if exists kontor_test_slow_items on invoice_items");
        await db.$executeRawUnsafe("drop function if exists kontor_test_slow_items()");
      }
      // Whatever was still on its way has had the time to arrive: nothing did.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
      expect(await db.invoiceItem.count({ where: { invoice: { workspaceId: tenant.workspaceId } } })).toBe(0);

      const next = await api.post("/invoices", {
        client_id: clientId,
        items: [{ description: "Fast", quantity: 1, unit_price: 1 }],
      });
      expect(next.status).toBe(201);
      expect(next.body.invoice_number).toMatch(/-0001$/);
    });
  },
  { KONTOR_TRANSACTION_TIMEOUT_MS: "1000" },
);
