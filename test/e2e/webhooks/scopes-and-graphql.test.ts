import { beforeAll, describe, expect, it } from "vitest";
import { graphql } from "../../support/graphql.ts";
import { call, rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import { e2e } from "../../support/suite.ts";
import type { Api } from "../../support/workspace.ts";
import {
  ENDPOINT_ID,
  ENV,
  expectSignedWith,
  header,
  NEVER_DELIVERY,
  QUIET_MS,
  receiver,
  SECRET,
  sleep,
  useReceiver,
  type Workspace,
  webhookHelpers,
} from "./support.ts";

/**
 * Webhooks end to end (docs/api/webhooks.md and "The API in short"): endpoints over REST and GraphQL,
 * and real deliveries to a loopback receiver through the production code path, with a short retry
 * schedule and timeout set through the server's configuration (./support.ts).
 *
 * This part: scopes, idempotent replays and tenancy, and the same resources over GraphQL.
 */

useReceiver();

e2e(
  "webhooks: scopes and GraphQL",
  (server, stack) => {
    const { at, prisma, workspace, listen, newLead, deliveriesOf, deliveriesWhen, finished } = webhookHelpers(
      server,
      stack,
    );

    describe("scopes and tenancy", () => {
      let owner: Workspace;
      let endpointId: string;
      let deliveryId: string;
      let eventId: string;

      beforeAll(async () => {
        owner = await workspace();
        endpointId = (await listen(owner.api, at("scopes"))).id;
        await newLead(owner.api);
        const [delivery] = await deliveriesWhen(endpointId, 1, finished);
        deliveryId = delivery!.id;
        eventId = delivery!.eventId;
      });

      const reads = (api: Api) => [
        () => api.get("/webhook-endpoints"),
        () => api.get(`/webhook-endpoints/${endpointId}`),
        () => api.get("/webhook-deliveries"),
        () => api.get(`/webhook-deliveries?endpoint_id=${endpointId}`),
        () => api.get(`/webhook-deliveries/${deliveryId}`),
        () => api.get("/events"),
        () => api.get(`/events/${eventId}`),
      ];
      const writes = (api: Api) => [
        () => api.post("/webhook-endpoints", { url: receiver.url(at("scopes-new")), events: ["*"] }),
        () => api.patch(`/webhook-endpoints/${endpointId}`, { description: "changed" }),
        () => api.post(`/webhook-endpoints/${endpointId}/rotate-secret`),
        () => api.post(`/webhook-endpoints/${endpointId}/test`),
        () => api.post(`/webhook-deliveries/${deliveryId}/replay`),
        () => api.delete(`/webhook-endpoints/${endpointId}`),
      ];

      async function snapshot() {
        return {
          endpoints: await prisma().webhookEndpoint.findMany({
            where: { workspaceId: owner.workspaceId },
            orderBy: { id: "asc" },
          }),
          deliveries: await prisma().webhookDelivery.count({ where: { workspaceId: owner.workspaceId } }),
          events: await prisma().event.count({ where: { workspaceId: owner.workspaceId } }),
        };
      }

      it("needs webhooks.read for every read, even with webhooks.write", async () => {
        const writeOnly = rest(
          server().api,
          (await server().key(owner.workspaceId, ["webhooks.write", "leads.read", "leads.write"])).key,
        );
        for (const read of reads(writeOnly)) {
          const res = await read();
          expectError(res, 403, "insufficient_scope");
          expect(res.body.error).toMatchObject({ type: "permission_error", required_scope: "webhooks.read" });
        }
      });

      it("needs webhooks.write for every write, and a refused write changes nothing", async () => {
        const readOnly = rest(
          server().api,
          (await server().key(owner.workspaceId, ["webhooks.read", "leads.read", "leads.write"])).key,
        );
        const before = await snapshot();
        for (const write of writes(readOnly)) {
          const res = await write();
          expectError(res, 403, "insufficient_scope");
          expect(res.body.error).toMatchObject({
            type: "permission_error",
            required_scope: "webhooks.write",
          });
        }
        expect(await snapshot()).toEqual(before);
        const none = rest(server().api, (await server().key(owner.workspaceId, ["leads.read"])).key);
        for (const read of reads(none))
          expect((await read()).body.error.required_scope).toBe("webhooks.read");
        for (const write of writes(none))
          expect((await write()).body.error.required_scope).toBe("webhooks.write");
        expect(await snapshot()).toEqual(before);
      });

      it("lets a write-only key create (with its secret), update and test", async () => {
        const writeOnly = rest(server().api, (await server().key(owner.workspaceId, ["webhooks.write"])).key);
        const created = await writeOnly.post("/webhook-endpoints", {
          url: receiver.url(at("scopes-write-only")),
          events: ["invoice.paid"],
        });
        expect(created.status).toBe(201);
        expect(created.body.secret).toMatch(SECRET);
        const patched = await writeOnly.patch(`/webhook-endpoints/${created.body.id}`, {
          description: "by a write-only key",
        });
        expect(patched.status).toBe(200);
        expect(patched.body.description).toBe("by a write-only key");
        const tested = await writeOnly.post(`/webhook-endpoints/${created.body.id}/test`);
        expect(tested.status).toBe(201);
        const [request] = await receiver.waitFor(at("scopes-write-only"), 1);
        expectSignedWith(request!, created.body.secret);
        expect((await writeOnly.delete(`/webhook-endpoints/${created.body.id}`)).status).toBe(200);
      });

      it("replays a create or rotation under the same Idempotency-Key instead of making a second secret", async () => {
        const own = await workspace();
        const body = { url: receiver.url(at("idempotent")), events: ["lead.created"] };
        const key = `create-${Date.now()}-${Math.random()}`;
        const post = (path: string, payload?: unknown, apiKey = own.key, idempotencyKey = key) =>
          call("POST", server().api + path, {
            key: apiKey,
            body: payload,
            headers: { "Idempotency-Key": idempotencyKey },
          });
        const first = await post("/webhook-endpoints", body);
        expect(first.status).toBe(201);
        const again = await post("/webhook-endpoints", body);
        expect(again.status).toBe(201);
        expect(again.headers.get("idempotent-replay")).toBe("true");
        expect(again.body).toEqual(first.body);
        expect(await prisma().webhookEndpoint.count({ where: { workspaceId: own.workspaceId } })).toBe(1);

        const rotateKey = `rotate-${Date.now()}-${Math.random()}`;
        const rotated = await post(
          `/webhook-endpoints/${first.body.id}/rotate-secret`,
          undefined,
          own.key,
          rotateKey,
        );
        expect(rotated.status).toBe(200);
        const sealed = (await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: first.body.id } }))
          .secretSealed;
        const rotatedAgain = await post(
          `/webhook-endpoints/${first.body.id}/rotate-secret`,
          undefined,
          own.key,
          rotateKey,
        );
        expect(rotatedAgain.body.secret).toBe(rotated.body.secret);
        // A retried rotation must not replace the secret the caller has just been given.
        expect(
          (await prisma().webhookEndpoint.findUniqueOrThrow({ where: { id: first.body.id } })).secretSealed,
        ).toBe(sealed);
        await newLead(own.api);
        const [request] = await receiver.waitFor(at("idempotent"), 1);
        expectSignedWith(request!, rotated.body.secret);
      });

      it("an idempotent replay never hands an endpoint's secret to another key of the workspace", async () => {
        const own = await workspace();
        const body = { url: receiver.url(at("idempotent-scope")), events: ["lead.created"] };
        const key = `scope-${Date.now()}-${Math.random()}`;
        const post = (path: string, payload: unknown, apiKey: string) =>
          call("POST", server().api + path, {
            key: apiKey,
            body: payload,
            headers: { "Idempotency-Key": key },
          });
        const created = await post("/webhook-endpoints", body, own.key);
        expect(created.status).toBe(201);
        // Without the header this key is refused (see "needs webhooks.write for every write").
        const leadsOnly = (await server().key(own.workspaceId, ["leads.read"])).key;
        const replayed = await post("/webhook-endpoints", body, leadsOnly);
        expect(JSON.stringify(replayed.body)).not.toContain(created.body.secret);
        expectError(replayed, 409, "idempotency_conflict");
        expect(replayed.headers.get("idempotent-replay")).toBeNull();
      });

      it("hides another workspace's endpoints, deliveries and events behind 404 on every route", async () => {
        const other = await workspace();
        const before = await snapshot();
        const ownerView = (await owner.api.get(`/webhook-endpoints/${endpointId}`)).body;
        for (const [res, id] of [
          [await other.api.get(`/webhook-endpoints/${endpointId}`), endpointId],
          [await other.api.patch(`/webhook-endpoints/${endpointId}`, { is_active: false }), endpointId],
          [await other.api.delete(`/webhook-endpoints/${endpointId}`), endpointId],
          [await other.api.post(`/webhook-endpoints/${endpointId}/rotate-secret`), endpointId],
          [await other.api.post(`/webhook-endpoints/${endpointId}/test`), endpointId],
          [await other.api.get(`/webhook-deliveries/${deliveryId}`), deliveryId],
          [await other.api.post(`/webhook-deliveries/${deliveryId}/replay`), deliveryId],
          [await other.api.get(`/events/${eventId}`), eventId],
        ] as const) {
          expectError(res, 404, "not_found");
          expect(res.body.error.message).toContain(id);
        }
        // Filters and lists show nothing of the owner's either.
        const filtered = await other.api.get(`/webhook-deliveries?endpoint_id=${endpointId}`);
        expect(filtered.body).toEqual({ object: "list", data: [], has_more: false, next_cursor: null });
        expect((await other.api.get("/webhook-endpoints")).body.data).toEqual([]);
        expect((await other.api.get("/webhook-deliveries")).body.data).toEqual([]);
        expect((await other.api.get("/events")).body.data).toEqual([]);
        expect(await snapshot()).toEqual(before);
        expect((await owner.api.get(`/webhook-endpoints/${endpointId}`)).body).toEqual(ownerView);
      });

      it("never sends a workspace's events to another workspace's endpoints", async () => {
        const mine = await workspace();
        const theirs = await workspace();
        const mineAll = await listen(mine.api, at("tenancy-mine"), ["*"]);
        await listen(theirs.api, at("tenancy-theirs"), ["*"]);
        const lead = await newLead(theirs.api);
        const [request] = await receiver.waitFor(at("tenancy-theirs"), 1);
        expect(request!.json).toMatchObject({
          workspace_id: theirs.workspaceId,
          data: { object: { id: lead.id } },
        });
        await sleep(QUIET_MS);
        expect(receiver.on(at("tenancy-mine"))).toEqual([]);
        expect(await deliveriesOf(mineAll.id)).toEqual([]);
        expect((await mine.api.get("/events")).body.data).toEqual([]);
      });
    });

    describe("GraphQL", () => {
      const ENDPOINT_FIELDS =
        "object id url events description is_active status disabled_reason created_at updated_at";
      const DELIVERY_FIELDS =
        "object id endpoint_id event_id event_type status attempts response_status response_body last_error duration_ms next_attempt_at delivered_at";

      it("creates an endpoint with its secret, and shows the same objects as REST", async () => {
        const ws = await workspace();
        const gql = graphql(server().url, ws.key);
        const created = await gql(
          `mutation ($url: String!) { createWebhookEndpoint(url: $url, events: ["lead.created"], description: "gql") { ${ENDPOINT_FIELDS} secret } }`,
          { url: receiver.url(at("graphql")) },
        );
        expect(created.errors).toBeUndefined();
        const { secret, ...endpoint } = created.data.createWebhookEndpoint;
        expect(secret).toMatch(SECRET);
        expect(endpoint).toMatchObject({
          object: "webhook_endpoint",
          id: expect.stringMatching(ENDPOINT_ID),
          status: "active",
          is_active: true,
        });
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(endpoint);

        // The secret is not a field of the endpoint once created.
        const noSecret = await gql(`query ($id: ID!) { webhookEndpoint(id: $id) { id secret } }`, {
          id: endpoint.id,
        });
        expect(noSecret.errors?.[0]?.message).toMatch(/secret/);

        const listed = await gql(`{ webhookEndpoints { object has_more data { ${ENDPOINT_FIELDS} } } }`);
        expect(listed.data.webhookEndpoints).toEqual({ object: "list", has_more: false, data: [endpoint] });

        const lead = await newLead(ws.api);
        const [request] = await receiver.waitFor(at("graphql"), 1);
        expectSignedWith(request!, secret);
        await deliveriesWhen(endpoint.id, 1, finished);

        const deliveries = await gql(
          `query ($id: ID!) { webhookDeliveries(endpoint_id: $id, status: succeeded) { data { ${DELIVERY_FIELDS} } } }`,
          {
            id: endpoint.id,
          },
        );
        expect(deliveries.errors).toBeUndefined();
        const [delivery] = deliveries.data.webhookDeliveries.data;
        const restDelivery = (await ws.api.get(`/webhook-deliveries/${delivery.id}`)).body;
        const { created_at: _c, updated_at: _u, ...restFields } = restDelivery;
        expect(delivery).toEqual(restFields);
        expect(delivery).toMatchObject({ status: "succeeded", event_type: "lead.created", attempts: 1 });

        const events = await gql(
          `{ events(type: "lead.created") { data { id object type workspace_id created_at data { object } } } }`,
        );
        expect(events.data.events.data).toEqual([request!.json]);
        expect(events.data.events.data[0].data.object).toEqual(lead);
        const one = await gql(`query ($id: ID!) { event(id: $id) { id type } }`, { id: request!.json.id });
        expect(one.data.event).toEqual({ id: request!.json.id, type: "lead.created" });
      });

      it("replays a delivery and tests an endpoint through mutations", async () => {
        const ws = await workspace();
        const gql = graphql(server().url, ws.key);
        const endpoint = await listen(ws.api, at("graphql-mutations"));
        await newLead(ws.api);
        const [original] = await receiver.waitFor(at("graphql-mutations"), 1);

        const replay = await gql(
          `mutation ($id: ID!) { replayWebhookDelivery(id: $id) { ${DELIVERY_FIELDS} } }`,
          {
            id: header(original!, "Kontor-Delivery"),
          },
        );
        expect(replay.errors).toBeUndefined();
        expect(replay.data.replayWebhookDelivery).toMatchObject({
          event_id: original!.json.id,
          status: "pending",
          endpoint_id: endpoint.id,
        });
        const [, replayed] = await receiver.waitFor(at("graphql-mutations"), 2);
        expect(header(replayed!, "Kontor-Delivery")).toBe(replay.data.replayWebhookDelivery.id);
        expect(header(replayed!, "webhook-id")).toBe(original!.json.id);

        const test = await gql(
          `mutation ($id: ID!) { testWebhookEndpoint(id: $id) { id event_type endpoint_id } }`,
          { id: endpoint.id },
        );
        expect(test.errors).toBeUndefined();
        expect(test.data.testWebhookEndpoint).toMatchObject({
          event_type: "webhook.test",
          endpoint_id: endpoint.id,
        });
        const [, , tested] = await receiver.waitFor(at("graphql-mutations"), 3);
        expect(tested!.json).toMatchObject({
          type: "webhook.test",
          data: { object: { id: endpoint.id, object: "webhook_endpoint" } },
        });

        const rotated = await gql(
          `mutation ($id: ID!) { rotateWebhookEndpointSecret(id: $id) { id secret } }`,
          { id: endpoint.id },
        );
        expect(rotated.data.rotateWebhookEndpointSecret.secret).toMatch(SECRET);
        expect(rotated.data.rotateWebhookEndpointSecret.secret).not.toBe(endpoint.secret);

        const missing = await gql(`mutation { replayWebhookDelivery(id: "${NEVER_DELIVERY}") { id } }`);
        expect(missing.errors?.[0]?.extensions).toMatchObject({ code: "not_found" });
        const bad = await gql(`mutation { createWebhookEndpoint(url: "ftp://x", events: ["*"]) { id } }`);
        expect(bad.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "url" });
      });

      it("answers insufficient_scope to a key without the webhooks scopes", async () => {
        const ws = await workspace();
        const endpoint = await listen(ws.api, at("graphql-scope"), ["invoice.paid"]);
        const gql = graphql(
          server().url,
          (await server().key(ws.workspaceId, ["leads.read", "leads.write"])).key,
        );
        for (const [query, scope] of [
          ["{ webhookEndpoints { data { id } } }", "webhooks.read"],
          ["{ webhookDeliveries { data { id } } }", "webhooks.read"],
          ["{ events { data { id } } }", "webhooks.read"],
          [
            `mutation { createWebhookEndpoint(url: "${receiver.url(at("graphql-scope"))}", events: ["*"]) { id } }`,
            "webhooks.write",
          ],
          [`mutation { testWebhookEndpoint(id: "${endpoint.id}") { id } }`, "webhooks.write"],
          [
            `mutation { updateWebhookEndpoint(id: "${endpoint.id}", is_active: false) { id } }`,
            "webhooks.write",
          ],
        ] as const) {
          const res = await gql(query);
          expect(res.errors?.[0]?.extensions, query).toMatchObject({
            code: "insufficient_scope",
            required_scope: scope,
          });
        }
        expect(await prisma().webhookEndpoint.count({ where: { workspaceId: ws.workspaceId } })).toBe(1);
        expect(await deliveriesOf(endpoint.id)).toEqual([]);
        expect((await ws.api.get(`/webhook-endpoints/${endpoint.id}`)).body.is_active).toBe(true);
      });
    });
  },
  ENV,
);
