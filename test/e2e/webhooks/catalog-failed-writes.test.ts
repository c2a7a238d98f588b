import { describe, expect, it } from "vitest";
import { call, rest } from "../../support/http.ts";
import { SAMPLE_ITEMS } from "../../support/invoicing.ts";
import { breakOutbox } from "../../support/outbox.ts";
import { e2e } from "../../support/suite.ts";
import { catalogHarness, get, newDoc, ok } from "./support.ts";

/**
 * The catalog's events are delivered only for writes that succeed (catalog.test.ts delivers each
 * of them by its action): a refused write, an idempotent replay or a write rolled back after it
 * emitted delivers nothing.
 */

e2e("webhooks: every catalog event, delivered by its action: failed writes", (server, stack) => {
  const { dispatched, settled, endpoint } = catalogHarness(server, stack);

  describe("failed writes deliver nothing", () => {
    it("validation failures, a missing resource and a refused state change deliver nothing; the next write is delivered alone", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const { doc } = await newDoc(api);
      const lead = await ok(api.post("/leads", { first_name: "Existing", stage: "won" }));
      await dispatched(tenant.workspaceId);
      const all = await endpoint(api, ["*"], "failures");

      expect((await api.post("/leads", { first_name: "" })).status).toBe(400);
      expect((await api.post("/clients", { name: "A", email: "not-an-address" })).status).toBe(400);
      expect(
        (await api.post("/invoices", { client_id: "cli_01J00000000000000000000000", items: SAMPLE_ITEMS }))
          .status,
      ).toBe(400);
      expect(
        (await api.post(`/invoices/${doc.id}/payments`, { amount: 101, payment_method: "card" })).status,
      ).toBe(400);
      expect((await api.post(`/invoices/${doc.id}/accept`)).status).toBe(400); // an invoice is not a quote
      expect((await api.post("/inventory/items", { name: "Bad", quantity: -1 })).status).toBe(400);
      expect((await api.patch("/leads/lead_01J00000000000000000000000", { stage: "lost" })).status).toBe(404);
      await ok(api.post(`/leads/${lead.id}/convert`));
      expect((await api.post(`/leads/${lead.id}/convert`)).status).toBe(400); // already converted

      const sentinel = await ok(api.post("/leads", { first_name: "Sentinel" }));
      const { requests } = await settled(tenant.workspaceId, all.id, all.path);
      // Only the successful convert (client.created: the lead was already won) and the sentinel.
      expect(requests.map((r) => r.json.type).sort()).toEqual(["client.created", "lead.created"]);
      expect(requests.find((r) => r.json.type === "lead.created")!.json.data.object.id).toBe(sentinel.id);
      expect(requests.find((r) => r.json.type === "client.created")!.json.data.object.name).toBe("Existing");
    });

    it("an idempotent replay delivers no second event", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const all = await endpoint(api, ["*"], "replay");
      const { doc } = await newDoc(api);
      const send = () =>
        call("POST", `${server().api}/invoices/${doc.id}/payments`, {
          key: tenant.key,
          body: { amount: 100, payment_method: "card" },
          headers: { "Idempotency-Key": `pay-${doc.id}` },
        });
      const first = await send();
      const again = await send();
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.body).toEqual(first.body);
      const { requests } = await settled(tenant.workspaceId, all.id, all.path);
      // The setup's client.created and invoice.created, then one payment and one paid invoice.
      expect(requests.map((r) => r.json.type).sort()).toEqual([
        "client.created",
        "invoice.created",
        "invoice.paid",
        "payment.recorded",
      ]);
      expect(requests.find((r) => r.json.type === "payment.recorded")!.json.data.object).toEqual(first.body);
    });

    it("a write that fails after it emitted an event delivers none of its events", async () => {
      const tenant = await server().tenant();
      const api = rest(server().api, tenant.key);
      const lead = await ok(api.post("/leads", { full_name: "Joan Clarke", stage: "qualified" }));
      await dispatched(tenant.workspaceId);
      const all = await endpoint(api, ["*"], "rollback");

      // Converting writes client.created, then fails writing lead.stage_changed: both roll back.
      const repair = await breakOutbox(server(), "lead.stage_changed");
      try {
        expect((await api.post(`/leads/${lead.id}/convert`)).status).toBe(500);
      } finally {
        await repair();
      }
      const sentinel = await ok(api.post("/leads", { first_name: "After" }));
      const { requests } = await settled(tenant.workspaceId, all.id, all.path);
      expect(requests.map((r) => r.json.type)).toEqual(["lead.created"]);
      expect(requests[0]!.json.data.object.id).toBe(sentinel.id);
      expect((await get(api, "/clients")).data).toEqual([]);
    });
  });
});
