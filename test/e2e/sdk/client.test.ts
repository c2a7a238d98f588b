import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { readFileSync } from "node:fs";
import {
  buildSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  typeFromAST,
  type GraphQLInputType,
  type OperationDefinitionNode,
} from "graphql";
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  ConflictError,
  IdempotencyError,
  InternalServerError,
  Kontor,
  KontorError,
  NotFoundError,
  Page,
  PermissionError,
  RateLimitError,
  ROUTE_METHODS,
  Stream,
  ValidationError,
  outputText,
  toBase64,
  type ClientOptions,
  type Lead,
} from "@kontor/sdk";
import * as documents from "@kontor/sdk/graphql";
import { CreateLeadDocument, LeadDocument, LeadsDocument, WorkspaceDocument } from "@kontor/sdk/graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schema as codeSchema } from "../../../schema/index.ts";
import { sessionOnlyFields } from "../../../scripts/sdk-operations.ts";
import { decide, granted, JWT_BEARER_GRANT_TYPE, ownerOf, registerAnonymous, registerServiceAuth, tokenClient } from "../../support/agent-flow.ts";
import { freePort } from "../../support/child-server.ts";
import { completion, error as upstreamError, gate, startFakeOpenAI, stream } from "../../support/fake-openai.ts";
import { checkAgainstOpenApi, checkedResponses } from "../../support/openapi-check.ts";
import { eventually, startReceiver, type Receiver } from "../../support/receiver.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The SDK (`@kontor/sdk`, imported by its package name as a user would) against a live server:
 * every `/v1` route of the served OpenAPI document has a method, every namespace does what its
 * route does, lists walk every page, each error class comes from a real answer, and the typed
 * GraphQL documents run. Every answer the SDK receives is checked against the OpenAPI document
 * by the `fetch` it is given.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

const NEVER_LEAD = "lead_01J00000000000000000000000";
const REQUEST_ID = /^req_[0-9A-Z]{26}$/;
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const LIMIT_CODES = ["query_too_deep", "too_many_aliases", "too_many_tokens", "too_many_directives", "query_too_costly"];

/** A fetch that checks every `/v1` answer against the served OpenAPI document, then hands it on unread. */
const checkedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!new URL(url).pathname.startsWith("/v1/")) return response;
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return response;
  const method = (init?.method ?? "GET").toUpperCase();
  const bytes = new Uint8Array(await response.arrayBuffer());
  await checkAgainstOpenApi(method, url, { status: response.status, headers: response.headers, text: new TextDecoder().decode(bytes) });
  const empty = method === "HEAD" || [204, 304].includes(response.status);
  return new Response(empty ? null : bytes, { status: response.status, statusText: response.statusText, headers: response.headers });
};

/** Every operation of an OpenAPI document as `METHOD /path`. */
function operations(doc: { paths: Record<string, Record<string, unknown>> }): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`));
}

/** The function at `leads.list` on a client, bound to its namespace. */
function methodAt(client: Kontor, dotted: string): ((...args: unknown[]) => unknown) | undefined {
  const parts = dotted.split(".");
  const name = parts.pop()!;
  const namespace = parts.reduce<any>((at, part) => at?.[part], client);
  const fn = namespace?.[name];
  return typeof fn === "function" ? fn.bind(namespace) : undefined;
}

/** An answer's error, or a failure when it succeeded. */
async function failure(promise: Promise<unknown>): Promise<APIError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome)) throw new Error(`expected an error, got ${JSON.stringify(outcome.value).slice(0, 300)}`);
  expect(outcome.error).toBeInstanceOf(APIError);
  return outcome.error as APIError;
}

/** A loopback server that accepts connections and never answers. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(() => {});
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Values for an operation's variables, built from their types (for documents run only to see they pass the limits). */
function sampleVariables(operation: OperationDefinitionNode, schema: ReturnType<typeof buildSchema>): Record<string, unknown> {
  const sample = (type: GraphQLInputType): unknown => {
    if (isNonNullType(type)) return sample(type.ofType);
    if (isListType(type)) return [sample(type.ofType)];
    const named = getNamedType(type);
    if (isEnumType(named)) return named.getValues()[0]!.value;
    if (isInputObjectType(named)) {
      return Object.fromEntries(Object.values(named.getFields()).filter((f) => isNonNullType(f.type)).map((f) => [f.name, sample(f.type)]));
    }
    const scalars: Record<string, unknown> = {
      ID: "x_01J00000000000000000000000",
      String: "x",
      Int: 1,
      Float: 1,
      Boolean: true,
      Money: 1,
      Quantity: 1,
      Percent: 1,
      Date: "2026-01-01",
      DateTime: "2026-01-01T00:00:00Z",
    };
    return scalars[named.name] ?? "x";
  };
  return Object.fromEntries(
    (operation.variableDefinitions ?? []).map((definition) => [definition.variable.name.value, sample(typeFromAST(schema, definition.type as never) as GraphQLInputType)]),
  );
}

e2e(
  "sdk",
  (server) => {
    let tenant: Tenant;
    let kontor: Kontor;
    let receiver: Receiver;
    const sdk = (apiKey: string, options: ClientOptions = {}) => new Kontor({ apiKey, baseUrl: server().api, fetch: checkedFetch, maxRetries: 0, ...options });

    beforeAll(async () => {
      tenant = await server().tenant({ plan: "pro" });
      kontor = sdk(tenant.key);
      receiver = await startReceiver();
    });

    afterAll(async () => {
      await receiver?.close();
    });

    describe("the route map", () => {
      it("has a method for every /v1 route of the served OpenAPI document, and no other", async () => {
        const doc = await (await fetch(`${server().api}/openapi.json`)).json();
        const routes = operations(doc).sort();
        expect(routes.length).toBeGreaterThan(70);
        expect(Object.keys(ROUTE_METHODS).sort()).toEqual(routes);
      });

      it("each mapped method calls exactly its route, with an Idempotency-Key on every POST", async () => {
        const seen: { method: string; path: string; key: string | null }[] = [];
        const recording: typeof fetch = async (input, init) => {
          const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
          seen.push({ method: init?.method ?? "GET", path: url.pathname, key: new Headers(init?.headers).get("idempotency-key") });
          // Any JSON will do for this check; a list envelope also lets list methods build their page.
          return Response.json({ object: "list", data: [], has_more: false, next_cursor: null });
        };
        const offline = new Kontor({ apiKey: "ktr_live_recording", baseUrl: "http://127.0.0.1:9/v1", fetch: recording });
        for (const [route, dotted] of Object.entries(ROUTE_METHODS)) {
          const [method, template] = route.split(" ") as [string, string];
          const fn = methodAt(offline, dotted);
          expect(fn, `${dotted} for ${route}`).toBeTypeOf("function");
          const pathValues = [...template.matchAll(/\{(\w+)\}/g)].map((m) => `${m[1]}_value`);
          seen.length = 0;
          await fn!(...pathValues, {});
          expect(seen, `${dotted} for ${route}`).toHaveLength(1);
          const call = seen[0]!;
          expect(`${call.method} ${call.path}`, dotted).toBe(`${method} /v1${template.replace(/\{(\w+)\}/g, "$1_value")}`);
          if (method === "POST") expect(call.key, `${dotted} sends an Idempotency-Key`).toMatch(/^kontor-sdk-[0-9a-f-]{32,36}$/);
          else expect(call.key, `${dotted} sends no Idempotency-Key`).toBeNull();
        }
      });
    });

    describe("the client", () => {
      it("falls back to KONTOR_API_KEY and KONTOR_BASE_URL, and refuses to start without a key", async () => {
        const saved = { key: process.env.KONTOR_API_KEY, base: process.env.KONTOR_BASE_URL };
        try {
          process.env.KONTOR_API_KEY = tenant.key;
          process.env.KONTOR_BASE_URL = server().api;
          const fromEnv = new Kontor({ fetch: checkedFetch });
          expect(fromEnv.baseUrl).toBe(server().api);
          expect(fromEnv.graphqlUrl).toBe(`${server().url}/graphql`);
          expect((await fromEnv.workspace.retrieve()).id).toBe(tenant.workspaceId);
          delete process.env.KONTOR_API_KEY;
          expect(() => new Kontor({ baseUrl: server().api })).toThrow(KontorError);
        } finally {
          if (saved.key === undefined) delete process.env.KONTOR_API_KEY;
          else process.env.KONTOR_API_KEY = saved.key;
          if (saved.base === undefined) delete process.env.KONTOR_BASE_URL;
          else process.env.KONTOR_BASE_URL = saved.base;
        }
      });

      it("withResponse() gives the raw response, the request id and the rate-limit headers", async () => {
        const before = checkedResponses();
        const { data, response, requestId, rateLimit } = await kontor.workspace.retrieve().withResponse();
        expect(data).toMatchObject({ object: "workspace", id: tenant.workspaceId, plan: "pro" });
        expect(response.status).toBe(200);
        expect(requestId).toMatch(REQUEST_ID);
        expect(requestId).toBe(response.headers.get("x-request-id"));
        expect(rateLimit).toMatchObject({ limit: 600, plan: "pro" });
        expect(rateLimit!.remaining).toBeLessThan(600);
        expect(rateLimit!.reset).toBeGreaterThan(Date.now() / 1000 - 1);
        expect(checkedResponses()).toBe(before + 1);
      });
    });

    describe("namespaces", () => {
      it("leads: create, list, retrieve, update, convert, delete", async () => {
        const lead = await kontor.leads.create({ full_name: "Ada Lovelace", company_name: "Engines", stage: "qualified", estimated_value: 1200.5 });
        expect(lead).toMatchObject({ object: "lead", first_name: "Ada", last_name: "Lovelace", stage: "qualified", estimated_value: 1200.5 });
        expect((await kontor.leads.list({ stage: "qualified", search: "lovelace" })).data.map((l) => l.id)).toEqual([lead.id]);
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
        const client = await kontor.clients.create({ name: "Babbage Ltd", email: "ops@babbage.test", address: { city: "London" }, currency: "GBP" });
        expect(client).toMatchObject({ object: "client", name: "Babbage Ltd", currency: "GBP", address: { city: "London", line1: null } });
        expect((await kontor.clients.list({ search: "babbage" })).data.map((c) => c.id)).toEqual([client.id]);
        expect((await kontor.clients.retrieve(client.id)).email).toBe("ops@babbage.test");
        expect((await kontor.clients.update(client.id, { address: { line1: "1 Dorset St" } })).address).toMatchObject({ line1: "1 Dorset St", city: "London" });
        expect(await kontor.clients.del(client.id)).toMatchObject({ id: client.id, deleted: true });
      });

      it("inventory.items: create, list, retrieve, update, delete", async () => {
        const item = await kontor.inventory.items.create({ name: "Brass gear", sku: "GEAR-1", quantity: 10, min_stock_threshold: 3, category: "parts" });
        expect(item).toMatchObject({ object: "inventory_item", status: "in_stock", quantity: 10 });
        expect((await kontor.inventory.items.list({ category: "parts" })).data.map((i) => i.id)).toEqual([item.id]);
        expect((await kontor.inventory.items.update(item.id, { quantity: 2 })).status).toBe("low_stock");
        expect((await kontor.inventory.items.retrieve(item.id)).sku).toBe("GEAR-1");
        expect((await kontor.inventory.items.list({ status: "low_stock" })).data.map((i) => i.id)).toEqual([item.id]);
        expect(await kontor.inventory.items.del(item.id)).toMatchObject({ id: item.id, deleted: true });
      });

      it("invoices: create, update, send, payments.create, void, and quotes accepted, converted, declined", async () => {
        const client = await kontor.clients.create({ name: "Invoice Client" });
        const invoice = await kontor.invoices.create({
          client_id: client.id,
          tax_rate: 10,
          items: [{ description: "Analysis", quantity: 2, unit_price: 100 }],
        });
        expect(invoice).toMatchObject({ document_type: "invoice", status: "draft", subtotal: 200, tax_amount: 20, total: 220, balance_due: 220 });
        expect((await kontor.invoices.update(invoice.id, { notes: "Thanks" })).notes).toBe("Thanks");
        expect((await kontor.invoices.send(invoice.id)).status).toBe("sent");
        const payment = await kontor.invoices.payments.create(invoice.id, { amount: 20, payment_method: "card" });
        expect(payment).toMatchObject({ object: "payment", amount: 20, invoice_id: invoice.id, invoice: { status: "partially_paid", balance_due: 200 } });
        const full = await kontor.invoices.retrieve(invoice.id);
        expect(full.payments.map((p) => p.id)).toEqual([payment.id]);
        expect(full.items).toEqual([{ description: "Analysis", quantity: 2, unit_price: 100, amount: 200 }]);
        expect((await kontor.invoices.void(invoice.id)).status).toBe("void");

        const quote = await kontor.invoices.create({ client_id: client.id, document_type: "quote", items: [{ description: "Design", quantity: 1, unit_price: 50 }] });
        expect((await kontor.invoices.accept(quote.id)).status).toBe("accepted");
        const converted = await kontor.invoices.convert(quote.id);
        expect(converted).toMatchObject({ document_type: "invoice", status: "draft", quote_id: quote.id, total: 50 });
        const declined = await kontor.invoices.create({ client_id: client.id, document_type: "quote", items: [{ description: "More", quantity: 1, unit_price: 5 }] });
        expect((await kontor.invoices.decline(declined.id)).status).toBe("declined");
        const quotes = await kontor.invoices.list({ document_type: "quote", client_id: client.id });
        expect(quotes.data.map((q) => q.id)).toEqual([declined.id, quote.id]);
        expect((await kontor.invoices.retrieve(quote.id)).converted_invoice_id).toBe(converted.id);
      });

      it("projects, projects.tasks and tasks", async () => {
        const project = await kontor.projects.create({ name: "Difference Engine", status: "active", budget: 5000 });
        expect(project).toMatchObject({ object: "project", name: "Difference Engine", status: "active", budget: 5000 });
        expect((await kontor.projects.list({ search: "difference" })).data.map((p) => p.id)).toEqual([project.id]);
        expect((await kontor.projects.update(project.id, { status: "on_hold" })).status).toBe("on_hold");
        expect((await kontor.projects.retrieve(project.id)).name).toBe("Difference Engine");
        const task = await kontor.projects.tasks.create(project.id, { title: "Cut the gears", priority: "high" });
        expect(task).toMatchObject({ object: "task", project_id: project.id, status: "todo", priority: "high", completed_at: null });
        expect((await kontor.projects.tasks.list(project.id, { priority: "high" })).data.map((t) => t.id)).toEqual([task.id]);
        const done = await kontor.tasks.update(task.id, { status: "done" });
        expect(done.completed_at).toMatch(/Z$/);
        expect((await kontor.tasks.retrieve(task.id)).status).toBe("done");
        expect(await kontor.tasks.del(task.id)).toMatchObject({ id: task.id, deleted: true });
        expect(await kontor.projects.del(project.id)).toMatchObject({ id: project.id, deleted: true });
      });

      it("webhookEndpoints (with rotateSecret and test), webhookDeliveries (with replay) and events", async () => {
        const endpoint = await kontor.webhookEndpoints.create({ url: receiver.url("/sdk-hook"), events: ["lead.created"], description: "SDK" });
        expect(endpoint.secret).toMatch(/^whsec_/);
        expect((await kontor.webhookEndpoints.retrieve(endpoint.id)).url).toBe(receiver.url("/sdk-hook"));
        expect((await kontor.webhookEndpoints.list()).data.map((e) => e.id)).toContain(endpoint.id);
        expect((await kontor.webhookEndpoints.update(endpoint.id, { description: "Renamed" })).description).toBe("Renamed");
        const rotated = await kontor.webhookEndpoints.rotateSecret(endpoint.id);
        expect(rotated.secret).toMatch(/^whsec_/);
        expect(rotated.secret).not.toBe(endpoint.secret);

        const delivery = await kontor.webhookEndpoints.test(endpoint.id);
        expect(delivery).toMatchObject({ object: "webhook_delivery", endpoint_id: endpoint.id, event_type: "webhook.test" });
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
        const event = events.data.find((e) => (e.data as { object?: { id?: string } }).object?.id === lead.id)!;
        expect(event).toMatchObject({ object: "event", type: "lead.created" });
        expect((await kontor.events.retrieve(event.id)).id).toBe(event.id);
        expect(await kontor.webhookEndpoints.del(endpoint.id)).toMatchObject({ id: endpoint.id, deleted: true });
      });

      it("requestLogs: list and stats", async () => {
        const { requestId } = await kontor.workspace.retrieve().withResponse();
        const logs = await eventually(
          () => kontor.requestLogs.list({ key_id: tenant.keyId, limit: 100 }),
          (page) => page.data.some((log) => log.request_id === requestId),
        );
        expect(logs.data.find((log) => log.request_id === requestId)).toMatchObject({ method: "GET", route: "/v1/workspace", status: 200 });
        const stats = await kontor.requestLogs.stats({ days: 7 });
        expect(stats).toMatchObject({ object: "request_log_stats", days: 7 });
      });

      it("buckets, buckets.objects (JSON and raw uploads: bytes, Blob, string, stream), objects and storage", async () => {
        const bucket = await kontor.buckets.create({ name: "sdk-files" });
        expect((await kontor.buckets.retrieve(bucket.id)).name).toBe("sdk-files");
        expect((await kontor.buckets.list()).data.map((b) => b.id)).toContain(bucket.id);
        const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);

        const json = await kontor.buckets.objects.upload(bucket.id, { file_name: "bytes.bin", content_type: "application/octet-stream", content_base64: toBase64(bytes) });
        expect(json).toMatchObject({ object: "file", bucket_id: bucket.id, size_bytes: 256, content_type: "application/octet-stream" });
        const raw = await kontor.buckets.objects.upload(bucket.id, { file_name: "raw.bin", file: bytes });
        expect(raw.sha256).toBe(json.sha256);
        const blob = await kontor.buckets.objects.upload(bucket.id, { file_name: "page.html", file: new Blob(["<p>hi</p>"], { type: "text/html" }) });
        expect(blob).toMatchObject({ content_type: "text/html", size_bytes: 9 });
        const text = await kontor.buckets.objects.upload(bucket.id, { file_name: "résumé.txt", file: "héllo" });
        expect(text).toMatchObject({ file_name: "résumé.txt", content_type: "text/plain; charset=utf-8", size_bytes: 6 });
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

        expect(await kontor.storage.retrieve()).toMatchObject({ object: "storage_usage", used_bytes: 256 + 256 + 9 + 6 + 7, object_count: 5 });
        for (const object of [json, raw, blob, text, streamed]) expect(await kontor.objects.del(object.id)).toMatchObject({ id: object.id, deleted: true });
        expect(await kontor.buckets.del(bucket.id)).toMatchObject({ id: bucket.id, deleted: true });
        expect((await kontor.storage.retrieve()).used_bytes).toBe(0);
      });

      it("agentSettings, trustedProviders and agentRegistrations (with revoke)", async () => {
        expect(await kontor.agentSettings.retrieve()).toMatchObject({ agent_auth_enabled: true, plan: "pro" });
        expect((await kontor.agentSettings.update({ agent_auth_enabled: false })).agent_auth_enabled).toBe(false);
        expect((await kontor.agentSettings.update({ agent_auth_enabled: true })).agent_auth_enabled).toBe(true);

        const provider = await kontor.trustedProviders.create({ issuer: "https://127.0.0.1:9/idp-sdk", jwks_url: "https://127.0.0.1:9/idp-sdk/jwks" });
        expect(provider).toMatchObject({ object: "trusted_provider", issuer: "https://127.0.0.1:9/idp-sdk" });
        expect((await kontor.trustedProviders.list()).data.map((p) => p.id)).toEqual([provider.id]);
        expect((await kontor.trustedProviders.retrieve(provider.id)).jwks_url).toBe("https://127.0.0.1:9/idp-sdk/jwks");
        expect(await kontor.trustedProviders.del(provider.id)).toMatchObject({ id: provider.id, deleted: true });

        const owner = await ownerOf(server(), tenant.workspaceId);
        const registration = await registerServiceAuth(server(), owner.email);
        await decide(server(), registration.claim, owner.userId, { workspaceId: tenant.workspaceId });
        const active = await kontor.agentRegistrations.list({ status: "active" });
        expect(active.data.map((r) => r.id)).toContain(registration.registration_id);
        expect(await kontor.agentRegistrations.retrieve(registration.registration_id)).toMatchObject({ status: "active", type: "service_auth" });
        expect((await kontor.agentRegistrations.revoke(registration.registration_id)).status).toBe("revoked");
        expect((await kontor.agentRegistrations.list({ status: "revoked" })).data.map((r) => r.id)).toContain(registration.registration_id);
      });

      it("models, chat.completions (JSON and streamed) and responses", async () => {
        const models = await kontor.models.list();
        expect(models.data.map((m) => m.id)).toEqual(["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1"]);
        expect(await kontor.models.retrieve("gpt-4.1")).toMatchObject({ id: "gpt-4.1", object: "model" });

        fake.next(completion({ text: "Invoices, neatly." }));
        const chat = await kontor.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] });
        expect(chat.choices[0]!.message.content).toBe("Invoices, neatly.");

        fake.next(stream({ deltas: ["Paid ", "in ", "full."] }));
        const chunks = await kontor.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }], stream: true });
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
        for (let i = 0; i < 3; i++) won.unshift((await kontor.leads.create({ full_name: `Winner ${i}`, stage: "won" })).id);
        await kontor.leads.create({ full_name: "Loser", stage: "lost" });
        const seen: Lead[] = [];
        for await (const lead of kontor.leads.list({ stage: "won", search: "winner", limit: 1 })) seen.push(lead);
        expect(seen.map((l) => l.id)).toEqual(won);
        expect(seen.every((l) => l.stage === "won")).toBe(true);
      });
    });

    describe("errors from real answers", () => {
      it("AuthenticationError (401) for an unknown key", async () => {
        const error = await failure(sdk("ktr_live_doesnotexist0000000000000000000000000000").workspace.retrieve());
        expect(error).toBeInstanceOf(AuthenticationError);
        expect(error).toMatchObject({ status: 401, code: "invalid_token", type: "authentication_error" });
        expect(error.requestId).toMatch(REQUEST_ID);
        expect(error.headers.get("www-authenticate")).toMatch(/^Bearer /);
      });

      it("PermissionError (403) with requiredScope", async () => {
        const readOnly = await server().key(tenant.workspaceId, ["leads.read"]);
        const error = await failure(sdk(readOnly.key).leads.create({ full_name: "Nope" }));
        expect(error).toBeInstanceOf(PermissionError);
        expect(error).toMatchObject({ status: 403, code: "insufficient_scope", requiredScope: "leads.write" });
        expect(error.requestId).toBe(error.headers.get("x-request-id"));
      });

      it("NotFoundError (404)", async () => {
        const error = await failure(kontor.leads.retrieve(NEVER_LEAD));
        expect(error).toBeInstanceOf(NotFoundError);
        expect(error).toMatchObject({ status: 404, code: "not_found", param: "id" });
        expect(error.message).toContain(NEVER_LEAD);
      });

      it("ValidationError (400) with param, for bad input and for a wrong state", async () => {
        const lead = await kontor.leads.create({ full_name: "Valid Lead" });
        const bad = await failure(kontor.leads.update(lead.id, { stage: "closed" as never }));
        expect(bad).toBeInstanceOf(ValidationError);
        expect(bad).toMatchObject({ status: 400, code: "validation_failed", param: "stage" });
        await kontor.leads.convert(lead.id);
        const again = await failure(kontor.leads.convert(lead.id));
        expect(again).toBeInstanceOf(ValidationError);
        expect(again.code).toBe("invalid_state");
      });

      it("ConflictError (409) for a taken value, IdempotencyError (409) for a reused key", async () => {
        await kontor.inventory.items.create({ name: "Cog", sku: "COG-1" });
        const taken = await failure(kontor.inventory.items.create({ name: "Cog again", sku: "COG-1" }));
        expect(taken).toBeInstanceOf(ConflictError);
        expect(taken).not.toBeInstanceOf(IdempotencyError);
        expect(taken).toMatchObject({ status: 409, code: "sku_taken", param: "sku" });

        const idempotencyKey = `sdk-${Date.now()}`;
        const first = await kontor.leads.create({ full_name: "Once Only" }, { idempotencyKey });
        const replay = await kontor.leads.create({ full_name: "Once Only" }, { idempotencyKey }).withResponse();
        expect(replay.data.id).toBe(first.id);
        expect(replay.response.headers.get("idempotent-replay")).toBe("true");
        const reused = await failure(kontor.leads.create({ full_name: "Someone Else" }, { idempotencyKey }));
        expect(reused).toBeInstanceOf(IdempotencyError);
        expect(reused).toBeInstanceOf(ConflictError);
        expect(reused).toMatchObject({ status: 409, code: "idempotency_conflict", type: "idempotency_error" });
      });

      it("RateLimitError (429) with retryAfter and the rate-limit headers, past the free plan's 120 a minute", async () => {
        const free = await server().tenant({ plan: "free", scopes: ["leads.read"] });
        const limited = sdk(free.key);
        const outcomes = await Promise.all(Array.from({ length: 130 }, () => limited.workspace.retrieve().then(() => null, (error: unknown) => error)));
        const errors = outcomes.filter((outcome) => outcome !== null);
        expect(errors.length).toBeGreaterThanOrEqual(10);
        // 130 at once open 130 connections: past 128 from one address, the server answers 429
        // concurrency_limit_exceeded and closes them (docs/api/limits.md#traffic-policies).
        const error = errors.find((outcome) => outcome instanceof RateLimitError && outcome.code === "rate_limit_exceeded") as RateLimitError;
        expect(error).toBeInstanceOf(RateLimitError);
        expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "rate_limit_error" });
        expect(error.retryAfter).toBeGreaterThan(0);
        expect(error.retryAfter).toBeLessThanOrEqual(60);
        expect(error.rateLimit).toMatchObject({ limit: 120, remaining: 0, plan: "free" });
      });

      it("RateLimitError carries the coding plan's headers (429 concurrency_limit_exceeded)", async () => {
        const free = await server().tenant({ plan: "free", scopes: ["ai.coding"] });
        const coder = sdk(free.key);
        const open = gate();
        fake.next(stream({ deltas: ["a", "b"], holdAfter: 1, gate: open.promise }));
        const held = await coder.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }], stream: true });
        try {
          const error = await failure(coder.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] }));
          expect(error).toBeInstanceOf(RateLimitError);
          expect(error.code).toBe("concurrency_limit_exceeded");
          const plan = (error as RateLimitError).codingPlan;
          expect(plan?.fiveHourUsedPercent).toEqual(expect.any(Number));
          expect(plan?.weeklyReset).toMatch(/Z$/);
        } finally {
          open.open();
          for await (const _chunk of held) {
            // drain the held stream so its slot is freed
          }
        }
      });

      it("APIError for a 5xx (InternalServerError): the provider failed, 502 upstream_error", async () => {
        fake.next(upstreamError(500, "The provider broke."));
        const error = await failure(kontor.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "Hi" }] }));
        expect(error).toBeInstanceOf(InternalServerError);
        expect(error).toBeInstanceOf(APIError);
        expect(error).toMatchObject({ status: 502, code: "upstream_error", type: "api_error" });
        expect(error.requestId).toMatch(REQUEST_ID);
      });

      it("APIConnectionError when nothing answers, APITimeoutError when the answer is too slow", async () => {
        const closed = new Kontor({ apiKey: tenant.key, baseUrl: `http://127.0.0.1:${await freePort()}/v1`, maxRetries: 0 });
        const refused = await failure(closed.workspace.retrieve());
        expect(refused).toBeInstanceOf(APIConnectionError);
        expect(refused).toMatchObject({ status: undefined, code: "connection_error", requestId: null });
        expect(refused.cause).toBeDefined();

        const silent = await silentServer();
        try {
          const slow = new Kontor({ apiKey: tenant.key, baseUrl: silent.url, maxRetries: 0, timeout: 5_000 });
          const started = Date.now();
          const timedOut = await failure(slow.workspace.retrieve({ timeout: 150 }));
          expect(timedOut).toBeInstanceOf(APITimeoutError);
          expect(timedOut).toBeInstanceOf(APIConnectionError);
          expect(timedOut.code).toBe("timeout");
          expect(Date.now() - started).toBeLessThan(4_000);
        } finally {
          await silent.close();
        }
      });
    });

    describe("GraphQL", () => {
      it("runs typed documents: queries and mutations", async () => {
        const { createLead } = await kontor.graphql(CreateLeadDocument, { full_name: "Grace Hopper", stage: "contacted" });
        expect(createLead).toMatchObject({ object: "lead", full_name: "Grace Hopper", stage: "contacted", client: null });
        const { leads } = await kontor.graphql(LeadsDocument, { search: "hopper", limit: 5 });
        expect(leads.data.map((l) => l.id)).toEqual([createLead.id]);
        const { workspace } = await kontor.graphql(WorkspaceDocument);
        expect(workspace.limits.requests_per_minute).toBe(600);
        const text = await kontor.graphql<{ lead: { full_name: string } }>("query ($id: ID!) { lead(id: $id) { full_name } }", { id: createLead.id });
        expect(text.lead.full_name).toBe("Grace Hopper");
      });

      it("throws the error class of a field error, with every error and the partial data", async () => {
        const lead = await kontor.leads.create({ full_name: "Partial Lead" });
        const converted = await kontor.leads.convert(lead.id);
        const leadsOnly = await server().key(tenant.workspaceId, ["leads.read"]);
        const error = await failure(sdk(leadsOnly.key).graphql(LeadDocument, { id: lead.id }));
        expect(error).toBeInstanceOf(PermissionError);
        expect(error).toMatchObject({ code: "insufficient_scope", requiredScope: "clients.read", status: 403 });
        expect(error.graphqlErrors?.[0]?.path).toEqual(["lead", "client"]);
        expect(error.data).toMatchObject({ lead: { id: lead.id, client_id: converted.client_id, client: null } });

        const invalid = await failure(kontor.graphql("{ lead(id: 1) { nope } }"));
        expect(invalid).toBeInstanceOf(ValidationError);
        expect(invalid.code).toBe("validation_failed");
      });

      it("every generated document stays within the server's GraphQL limits", async () => {
        const schema = buildSchema(readFileSync(new URL("../../../schema/schema.graphql", import.meta.url), "utf8"));
        const scopeless = sdk((await server().key(tenant.workspaceId, ["logs.write"])).key);
        const all = Object.entries(documents).filter(([name]) => name.endsWith("Document"));
        // Every root field but the dashboard's session-only ones, which no SDK credential may ask.
        const sessionOnly = sessionOnlyFields(codeSchema).size;
        expect(all.length).toBe(Object.keys(schema.getQueryType()!.getFields()).length + Object.keys(schema.getMutationType()!.getFields()).length - sessionOnly);
        for (const [name, document] of all) {
          const operation = (document as unknown as { definitions: OperationDefinitionNode[] }).definitions[0]!;
          const variables = sampleVariables(operation, schema);
          const outcome = await scopeless.graphql(document as never, variables as never).then(
            () => null,
            (error: unknown) => error,
          );
          if (outcome === null) continue;
          expect(outcome, name).toBeInstanceOf(APIError);
          const codes = ((outcome as APIError).graphqlErrors ?? []).map((e) => e.extensions?.code);
          for (const code of [(outcome as APIError).code, ...codes]) expect(LIMIT_CODES, `${name}: ${(outcome as APIError).message}`).not.toContain(code);
        }
      });
    });

    describe("agent access tokens", () => {
      it("work as apiKey on REST and GraphQL", async () => {
        const agent = await registerAnonymous(server(), "SDK agent");
        const token = granted(await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion })).access_token;
        expect(token).toMatch(/^ktr_agt_/);
        const asAgent = sdk(token);
        const workspace = await asAgent.workspace.retrieve();
        expect(workspace.id).toMatch(/^ws_/);
        expect(workspace.id).not.toBe(tenant.workspaceId);
        const lead = await asAgent.leads.create({ full_name: "Agent Lead" });
        expect((await asAgent.graphql(LeadDocument, { id: lead.id })).lead?.full_name).toBe("Agent Lead");
        expect((await failure(kontor.leads.retrieve(lead.id))).status).toBe(404);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-sdk-upstream" },
);
