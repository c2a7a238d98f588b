import { type Kontor, type Lead, outputText, Page, Stream, toBase64 } from "@kontor/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decide, ownerOf, registerServiceAuth } from "../../support/agent-flow.ts";
import { completion, startFakeOpenAI, stream } from "../../support/fake-openai.ts";
import { eventually, type Receiver, startReceiver } from "../../support/receiver.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { failure, sdkFor } from "./support.ts";

/**
 * The SDK (`@kontor/sdk`, imported by its package name as a user would) against a live server:
 * every namespace does what its route does, and lists walk every page. Every answer the SDK
 * receives is checked against the OpenAPI document by the `fetch` it is given.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

e2e(
  "sdk: namespaces",
  (server) => {
    let tenant: Tenant;
    let kontor: Kontor;
    const sdk = sdkFor(server);
    let receiver: Receiver;

    beforeAll(async () => {
      tenant = await server().tenant({ plan: "pro" });
      kontor = sdk(tenant.key);
      receiver = await startReceiver();
    });

    afterAll(async () => {
      await receiver?.close();
    });

    describe("namespaces", () => {
      it("leads: create, list, retrieve, update, convert, delete", async () => {
        const lead = await kontor.leads.create({
          full_name: "Ada Lovelace",
          company_name: "Engines",
          stage: "qualified",
          estimated_value: 1200.5,
        });
        expect(lead).toMatchObject({
          object: "lead",
          first_name: "Ada",
          last_name: "Lovelace",
          stage: "qualified",
          estimated_value: 1200.5,
        });
        expect(
          (await kontor.leads.list({ stage: "qualified", search: "lovelace" })).data.map((l) => l.id),
        ).toEqual([lead.id]);
        expect((await kontor.leads.retrieve(lead.id)).company_name).toBe("Engines");
        const updated = await kontor.leads.update(lead.id, { stage: "proposal", company_name: null });
        expect(updated).toMatchObject({ stage: "proposal", company_name: null });
        const converted = await kontor.leads.convert(lead.id);
        expect(converted).toMatchObject({ id: lead.id, stage: "won" });
        expect(converted.client_id).toMatch(/^cli_/);
        expect((await kontor.clients.retrieve(converted.client_id!)).name).toBe("Ada Lovelace");
        expect(await kontor.leads.del(lead.id)).toEqual({ id: lead.id, object: "lead", deleted: true });
        expect((await failure(kontor.leads.retrieve(lead.id))).status).toBe(404);
      });

      it("clients: create, list, retrieve, update, delete", async () => {
        const client = await kontor.clients.create({
          name: "Babbage Ltd",
          email: "ops@babbage.test",
          address: { city: "London" },
          currency: "GBP",
        });
        expect(client).toMatchObject({
          object: "client",
          name: "Babbage Ltd",
          currency: "GBP",
          address: { city: "London", line1: null },
        });
        expect((await kontor.clients.list({ search: "babbage" })).data.map((c) => c.id)).toEqual([client.id]);
        expect((await kontor.clients.retrieve(client.id)).email).toBe("ops@babbage.test");
        expect(
          (await kontor.clients.update(client.id, { address: { line1: "1 Dorset St" } })).address,
        ).toMatchObject({ line1: "1 Dorset St", city: "London" });
        expect(await kontor.clients.del(client.id)).toMatchObject({ id: client.id, deleted: true });
      });

      it("inventory.items: create, list, retrieve, update, delete", async () => {
        const item = await kontor.inventory.items.create({
          name: "Brass gear",
          sku: "GEAR-1",
          quantity: 10,
          min_stock_threshold: 3,
          category: "parts",
        });
        expect(item).toMatchObject({ object: "inventory_item", status: "in_stock", quantity: 10 });
        expect((await kontor.inventory.items.list({ category: "parts" })).data.map((i) => i.id)).toEqual([
          item.id,
        ]);
        expect((await kontor.inventory.items.update(item.id, { quantity: 2 })).status).toBe("low_stock");
        expect((await kontor.inventory.items.retrieve(item.id)).sku).toBe("GEAR-1");
        expect((await kontor.inventory.items.list({ status: "low_stock" })).data.map((i) => i.id)).toEqual([
          item.id,
        ]);
        expect(await kontor.inventory.items.del(item.id)).toMatchObject({ id: item.id, deleted: true });
      });

      it("invoices: create, update, send, payments.create, void, and quotes accepted, converted, declined", async () => {
        const client = await kontor.clients.create({ name: "Invoice Client" });
        const invoice = await kontor.invoices.create({
          client_id: client.id,
          tax_rate: 10,
          items: [{ description: "Analysis", quantity: 2, unit_price: 100 }],
        });
        expect(invoice).toMatchObject({
          document_type: "invoice",
          status: "draft",
          subtotal: 200,
          tax_amount: 20,
          total: 220,
          balance_due: 220,
        });
        expect((await kontor.invoices.update(invoice.id, { notes: "Thanks" })).notes).toBe("Thanks");
        expect((await kontor.invoices.send(invoice.id)).status).toBe("sent");
        const payment = await kontor.invoices.payments.create(invoice.id, {
          amount: 20,
          payment_method: "card",
        });
        expect(payment).toMatchObject({
          object: "payment",
          amount: 20,
          invoice_id: invoice.id,
          invoice: { status: "partially_paid", balance_due: 200 },
        });
        const full = await kontor.invoices.retrieve(invoice.id);
        expect(full.payments.map((p) => p.id)).toEqual([payment.id]);
        expect(full.items).toEqual([{ description: "Analysis", quantity: 2, unit_price: 100, amount: 200 }]);
        expect((await kontor.invoices.void(invoice.id)).status).toBe("void");

        const quote = await kontor.invoices.create({
          client_id: client.id,
          document_type: "quote",
          items: [{ description: "Design", quantity: 1, unit_price: 50 }],
        });
        expect((await kontor.invoices.accept(quote.id)).status).toBe("accepted");
        const converted = await kontor.invoices.convert(quote.id);
        expect(converted).toMatchObject({
          document_type: "invoice",
          status: "draft",
          quote_id: quote.id,
          total: 50,
        });
        const declined = await kontor.invoices.create({
          client_id: client.id,
          document_type: "quote",
          items: [{ description: "More", quantity: 1, unit_price: 5 }],
        });
        expect((await kontor.invoices.decline(declined.id)).status).toBe("declined");
        const quotes = await kontor.invoices.list({ document_type: "quote", client_id: client.id });
        expect(quotes.data.map((q) => q.id)).toEqual([declined.id, quote.id]);
        expect((await kontor.invoices.retrieve(quote.id)).converted_invoice_id).toBe(converted.id);
      });

      it("projects, projects.tasks and tasks", async () => {
        const project = await kontor.projects.create({
          name: "Difference Engine",
          status: "active",
          budget: 5000,
        });
        expect(project).toMatchObject({
          object: "project",
          name: "Difference Engine",
          status: "active",
          budget: 5000,
        });
        expect((await kontor.projects.list({ search: "difference" })).data.map((p) => p.id)).toEqual([
          project.id,
        ]);
        expect((await kontor.projects.update(project.id, { status: "on_hold" })).status).toBe("on_hold");
        expect((await kontor.projects.retrieve(project.id)).name).toBe("Difference Engine");
        const task = await kontor.projects.tasks.create(project.id, {
          title: "Cut the gears",
          priority: "high",
        });
        expect(task).toMatchObject({
          object: "task",
          project_id: project.id,
          status: "todo",
          priority: "high",
          completed_at: null,
        });
        expect(
          (await kontor.projects.tasks.list(project.id, { priority: "high" })).data.map((t) => t.id),
        ).toEqual([task.id]);
        const done = await kontor.tasks.update(task.id, { status: "done" });
        expect(done.completed_at).toMatch(/Z$/);
        expect((await kontor.tasks.retrieve(task.id)).status).toBe("done");
        expect(await kontor.tasks.del(task.id)).toMatchObject({ id: task.id, deleted: true });
        expect(await kontor.projects.del(project.id)).toMatchObject({ id: project.id, deleted: true });
      });

      it("webhookEndpoints (with rotateSecret and test), webhookDeliveries (with replay) and events", async () => {
        const endpoint = await kontor.webhookEndpoints.create({
          url: receiver.url("/sdk-hook"),
          events: ["lead.created"],
          description: "SDK",
        });
        expect(endpoint.secret).toMatch(/^whsec_/);
        expect((await kontor.webhookEndpoints.retrieve(endpoint.id)).url).toBe(receiver.url("/sdk-hook"));
        expect((await kontor.webhookEndpoints.list()).data.map((e) => e.id)).toContain(endpoint.id);
        expect(
          (await kontor.webhookEndpoints.update(endpoint.id, { description: "Renamed" })).description,
        ).toBe("Renamed");
        const rotated = await kontor.webhookEndpoints.rotateSecret(endpoint.id);
        expect(rotated.secret).toMatch(/^whsec_/);
        expect(rotated.secret).not.toBe(endpoint.secret);

        const delivery = await kontor.webhookEndpoints.test(endpoint.id);
        expect(delivery).toMatchObject({
          object: "webhook_delivery",
          endpoint_id: endpoint.id,
          event_type: "webhook.test",
        });
        const delivered = await eventually(
          () => kontor.webhookDeliveries.retrieve(delivery.id),
          (d) => d.status === "succeeded",
        );
        expect(delivered.response_status).toBe(200);
        expect(receiver.on("/sdk-hook").length).toBeGreaterThanOrEqual(1);
        const replay = await kontor.webhookDeliveries.replay(delivery.id);
        expect(replay).toMatchObject({ object: "webhook_delivery", event_id: delivery.event_id });
        expect(replay.id).not.toBe(delivery.id);
        const listed = await kontor.webhookDeliveries.list({ endpoint_id: endpoint.id });
        expect(listed.data.map((d) => d.id)).toEqual([replay.id, delivery.id]);

        const lead = await kontor.leads.create({ full_name: "Event Lead" });
        const events = await eventually(
          () => kontor.events.list({ type: "lead.created", limit: 5 }),
          (page) => page.data.some((e) => (e.data as { object?: { id?: string } }).object?.id === lead.id),
        );
        const event = events.data.find(
          (e) => (e.data as { object?: { id?: string } }).object?.id === lead.id,
        )!;
        expect(event).toMatchObject({ object: "event", type: "lead.created" });
        expect((await kontor.events.retrieve(event.id)).id).toBe(event.id);
        expect(await kontor.webhookEndpoints.del(endpoint.id)).toMatchObject({
          id: endpoint.id,
          deleted: true,
        });
      });

      it("requestLogs: list and stats", async () => {
        const { requestId } = await kontor.workspace.retrieve().withResponse();
        const logs = await eventually(
          () => kontor.requestLogs.list({ key_id: tenant.keyId, limit: 100 }),
          (page) => page.data.some((log) => log.request_id === requestId),
        );
        expect(logs.data.find((log) => log.request_id === requestId)).toMatchObject({
          method: "GET",
          route: "/v1/workspace",
          status: 200,
        });
        const stats = await kontor.requestLogs.stats({ days: 7 });
        expect(stats).toMatchObject({ object: "request_log_stats", days: 7 });
      });

      it("buckets, buckets.objects (JSON and raw uploads: bytes, Blob, string, stream), objects and storage", async () => {
        const bucket = await kontor.buckets.create({ name: "sdk-files" });
        expect((await kontor.buckets.retrieve(bucket.id)).name).toBe("sdk-files");
        expect((await kontor.buckets.list()).data.map((b) => b.id)).toContain(bucket.id);
        const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);

        const json = await kontor.buckets.objects.upload(bucket.id, {
          file_name: "bytes.bin",
          content_type: "application/octet-stream",
          content_base64: toBase64(bytes),
        });
        expect(json).toMatchObject({
          object: "file",
          bucket_id: bucket.id,
          size_bytes: 256,
          content_type: "application/octet-stream",
        });
        const raw = await kontor.buckets.objects.upload(bucket.id, { file_name: "raw.bin", file: bytes });
        expect(raw.sha256).toBe(json.sha256);
        const blob = await kontor.buckets.objects.upload(bucket.id, {
          file_name: "page.html",
          file: new Blob(["<p>hi</p>"], { type: "text/html" }),
        });
        expect(blob).toMatchObject({ content_type: "text/html", size_bytes: 9 });
        const text = await kontor.buckets.objects.upload(bucket.id, {
          file_name: "résumé.txt",
          file: "héllo",
        });
        expect(text).toMatchObject({
          file_name: "résumé.txt",
          content_type: "text/plain; charset=utf-8",
          size_bytes: 6,
        });
        const streamed = await kontor.buckets.objects.upload(bucket.id, {
          file_name: "data.json",
          content_type: "application/json",
          file: new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('{"a":'));
              controller.enqueue(new TextEncoder().encode("1}"));
              controller.close();
            },
          }),
        });
        expect(streamed).toMatchObject({ content_type: "application/json", size_bytes: 7 });

        const listed = await kontor.buckets.objects.list(bucket.id, { content_type: "text/*" });
        expect(listed.data.map((o) => o.id)).toEqual([text.id, blob.id]);
        expect((await kontor.objects.retrieve(raw.id)).file_name).toBe("raw.bin");
        expect(await kontor.objects.download(raw.id)).toEqual(bytes);
        expect(new TextDecoder().decode(await kontor.objects.download(streamed.id))).toBe('{"a":1}');

        const part = await kontor.objects.content(raw.id, { range: "bytes=10-19" });
        expect(part.status).toBe(206);
        expect(part.headers.get("content-range")).toBe("bytes 10-19/256");
        expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(10, 20));
        const whole = await kontor.objects.content(raw.id);
        expect(whole.headers.get("etag")).toBe(`"${raw.sha256}"`);
        await whole.body?.cancel();
        const unchanged = await kontor.objects.content(raw.id, { ifNoneMatch: `"${raw.sha256}"` });
        expect(unchanged.status).toBe(304);
        const beyond = await failure(kontor.objects.content(raw.id, { range: "bytes=999-" }));
        expect(beyond).toMatchObject({ status: 416, code: "range_not_satisfiable" });

        expect(await kontor.storage.retrieve()).toMatchObject({
          object: "storage_usage",
          used_bytes: 256 + 256 + 9 + 6 + 7,
          object_count: 5,
        });
        for (const object of [json, raw, blob, text, streamed])
          expect(await kontor.objects.del(object.id)).toMatchObject({ id: object.id, deleted: true });
        expect(await kontor.buckets.del(bucket.id)).toMatchObject({ id: bucket.id, deleted: true });
        expect((await kontor.storage.retrieve()).used_bytes).toBe(0);
      });

      it("agentSettings, trustedProviders and agentRegistrations (with revoke)", async () => {
        expect(await kontor.agentSettings.retrieve()).toMatchObject({
          agent_auth_enabled: true,
          plan: "pro",
        });
        expect((await kontor.agentSettings.update({ agent_auth_enabled: false })).agent_auth_enabled).toBe(
          false,
        );
        expect((await kontor.agentSettings.update({ agent_auth_enabled: true })).agent_auth_enabled).toBe(
          true,
        );

        const provider = await kontor.trustedProviders.create({
          issuer: "https://127.0.0.1:9/idp-sdk",
          jwks_url: "https://127.0.0.1:9/idp-sdk/jwks",
        });
        expect(provider).toMatchObject({ object: "trusted_provider", issuer: "https://127.0.0.1:9/idp-sdk" });
        expect((await kontor.trustedProviders.list()).data.map((p) => p.id)).toEqual([provider.id]);
        expect((await kontor.trustedProviders.retrieve(provider.id)).jwks_url).toBe(
          "https://127.0.0.1:9/idp-sdk/jwks",
        );
        expect(await kontor.trustedProviders.del(provider.id)).toMatchObject({
          id: provider.id,
          deleted: true,
        });

        const owner = await ownerOf(server(), tenant.workspaceId);
        const registration = await registerServiceAuth(server(), owner.email);
        await decide(server(), registration.claim, owner.userId, { workspaceId: tenant.workspaceId });
        const active = await kontor.agentRegistrations.list({ status: "active" });
        expect(active.data.map((r) => r.id)).toContain(registration.registration_id);
        expect(await kontor.agentRegistrations.retrieve(registration.registration_id)).toMatchObject({
          status: "active",
          type: "service_auth",
        });
        expect((await kontor.agentRegistrations.revoke(registration.registration_id)).status).toBe("revoked");
        expect((await kontor.agentRegistrations.list({ status: "revoked" })).data.map((r) => r.id)).toContain(
          registration.registration_id,
        );
      });

      it("models, chat.completions (JSON and streamed) and responses", async () => {
        const models = await kontor.models.list();
        expect(models.data.map((m) => m.id)).toEqual(["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1"]);
        expect(await kontor.models.retrieve("gpt-4.1")).toMatchObject({ id: "gpt-4.1", object: "model" });

        fake.next(completion({ text: "Invoices, neatly." }));
        const chat = await kontor.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "Hi" }],
        });
        expect(chat.choices[0]!.message.content).toBe("Invoices, neatly.");

        fake.next(stream({ deltas: ["Paid ", "in ", "full."] }));
        const chunks = await kontor.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "Hi" }],
          stream: true,
        });
        expect(chunks).toBeInstanceOf(Stream);
        const text: string[] = [];
        for await (const chunk of chunks) text.push(String(chunk.choices[0]?.delta.content ?? ""));
        expect(text.join("")).toBe("Paid in full.");

        fake.next(completion({ text: "You have no overdue invoices." }));
        const response = await kontor.responses.create({ model: "gpt-4o-mini", input: "Anything overdue?" });
        expect(response).toMatchObject({ object: "response", status: "completed" });
        expect(outputText(response)).toBe("You have no overdue invoices.");
      });
    });

    describe("lists", () => {
      it("walk every page: await gives a page with nextPage(), for await gives every item", async () => {
        const made: string[] = [];
        for (let i = 0; i < 5; i++) made.unshift((await kontor.clients.create({ name: `Pager ${i}` })).id);
        const first = await kontor.clients.list({ search: "pager", limit: 2 });
        expect(first).toBeInstanceOf(Page);
        expect(first).toMatchObject({ object: "list", has_more: true });
        expect(first.next_cursor).toEqual(expect.any(String));
        expect(first.data.map((c) => c.id)).toEqual(made.slice(0, 2));
        const second = (await first.nextPage())!;
        expect(second.data.map((c) => c.id)).toEqual(made.slice(2, 4));
        const third = (await second.nextPage())!;
        expect(third).toMatchObject({ has_more: false, next_cursor: null });
        expect(third.data.map((c) => c.id)).toEqual(made.slice(4));
        expect(await third.nextPage()).toBeNull();

        const walked: string[] = [];
        for await (const client of kontor.clients.list({ search: "pager", limit: 2 })) walked.push(client.id);
        expect(walked).toEqual(made);
        let pages = 0;
        for await (const page of first.iterPages()) pages += page.data.length > 0 ? 1 : 0;
        expect(pages).toBe(3);
        const fromSecond: string[] = [];
        for await (const client of second) fromSecond.push(client.id);
        expect(fromSecond).toEqual(made.slice(2));
      });

      it("stage filter across pages, as in the README", async () => {
        const won: string[] = [];
        for (let i = 0; i < 3; i++)
          won.unshift((await kontor.leads.create({ full_name: `Winner ${i}`, stage: "won" })).id);
        await kontor.leads.create({ full_name: "Loser", stage: "lost" });
        const seen: Lead[] = [];
        for await (const lead of kontor.leads.list({ stage: "won", search: "winner", limit: 1 }))
          seen.push(lead);
        expect(seen.map((l) => l.id)).toEqual(won);
        expect(seen.every((l) => l.stage === "won")).toBe(true);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-sdk-upstream" },
);
