import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import {
  MAX_IDEMPOTENT_RESPONSE_BYTES,
  MAX_PAYMENTS_PER_INVOICE,
  MAX_QUERY_STRING_BYTES,
  RESPONSE_BUDGET_BYTES,
} from "../../../schema/lib/limits.ts";
import { GRAPHQL_LIMITS } from "../../../server/graphql/limits.ts";
import { graphql } from "../../support/graphql.ts";
import { call, raw, rest } from "../../support/http.ts";
import { expectError } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const text = (length: number, char = "a") => char.repeat(length);

e2e("limits", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  let gql: ReturnType<typeof graphql>;
  let clientId: string;
  let leadId: string;

  beforeAll(async () => {
    tenant = await server().tenant({ plan: "max" });
    api = rest(server().api, tenant.key);
    gql = graphql(server().url, tenant.key);
    clientId = (await api.post("/clients", { name: "Limits Ltd" })).body.id;
    leadId = (await api.post("/leads", { first_name: "Limit" })).body.id;
  });

  describe("text fields: the limit passes, one more character fails, on REST and GraphQL alike", () => {
    const cases: [string, string, Record<string, unknown>, string, number][] = [
      ["/leads", "createLead", {}, "first_name", 200],
      ["/leads", "createLead", { first_name: "A" }, "notes", 10_000],
      ["/leads", "createLead", { first_name: "A" }, "email", 320],
      ["/leads", "createLead", { first_name: "A" }, "phone", 64],
      ["/inventory/items", "createInventoryItem", { name: "Bolt" }, "sku", 100],
      ["/inventory/items", "createInventoryItem", { name: "Bolt" }, "category", 100],
    ];
    for (const [path, mutation, base, field, limit] of cases) {
      it(`${path} ${field}: ${limit} characters`, async () => {
        const value = (n: number) =>
          field === "email" ? `${text(n - "@example.com".length)}@example.com` : text(n);
        const ok = await api.post(path, { ...base, [field]: value(limit) });
        expect(ok.status, JSON.stringify(ok.body)).toBe(201);
        expect(ok.body[field]).toHaveLength(limit);
        expectError(
          await api.post(path, { ...base, [field]: value(limit + 1) }),
          400,
          "validation_failed",
          field,
        );

        const over = await gql(
          `mutation($v: String) { ${mutation}(${Object.entries(base)
            .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
            .join(" ")} ${field}: $v) { id } }`,
          {
            v: value(limit + 1),
          },
        );
        expect(over.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: field });
      });
    }

    it("counts characters, not UTF-16 units: 200 emoji are a valid first_name, 201 are not", async () => {
      const ok = await api.post("/leads", { first_name: text(200, "😀") });
      expect(ok.status).toBe(201);
      expectError(
        await api.post("/leads", { first_name: text(201, "😀") }),
        400,
        "validation_failed",
        "first_name",
      );
    });

    it("names the nested field: address.city of a client, items[1].description of an invoice", async () => {
      expectError(
        await api.post("/clients", { name: "C", address: { city: text(201) } }),
        400,
        "validation_failed",
        "address.city",
      );
      const items = [
        { description: text(500), quantity: 1, unit_price: 1 },
        { description: text(501), quantity: 1, unit_price: 1 },
      ];
      expectError(
        await api.post("/invoices", { client_id: clientId, items }),
        400,
        "validation_failed",
        "items[1].description",
      );
      expect((await api.post("/invoices", { client_id: clientId, items: items.slice(0, 1) })).status).toBe(
        201,
      );
    });
  });

  describe("NUL, control characters and lone surrogates are refused wherever text goes", () => {
    it("in a body field", async () => {
      expectError(
        await api.post("/leads", { first_name: "A\u0000B" }),
        400,
        "validation_failed",
        "first_name",
      );
      expectError(
        await api.post("/leads", { first_name: "A", notes: "bell\u0007" }),
        400,
        "validation_failed",
        "notes",
      );
      const tabs = await api.post("/leads", { first_name: "A", notes: "line\n\tindented\r\n" });
      expect(tabs.status).toBe(201);
    });

    it("as a lone surrogate written in the JSON text", async () => {
      const res = await call("POST", `${server().api}/leads`, {
        key: tenant.key,
        raw: '{"first_name": "A\\ud800B"}',
        headers: { "content-type": "application/json" },
      });
      expectError(res, 400, "validation_failed", "first_name");
      expect(res.body.error.message).toMatch(/surrogate/);
    });

    it("in a query parameter and in a path id", async () => {
      expectError(await api.get("/leads?search=a%00b"), 400, "validation_failed", "search");
      expectError(await api.get("/leads/lead%00x"), 400, "validation_failed", "id");
    });

    it("over GraphQL, as a field error with the same code and param", async () => {
      const res = await gql(`mutation($v: String) { createLead(first_name: $v) { id } }`, { v: "A\u0000B" });
      expect(res.data?.createLead ?? null).toBeNull();
      expect(res.errors?.[0]?.extensions).toMatchObject({ code: "validation_failed", param: "first_name" });
    });
  });

  describe("dates and date-times keep to the years 1–9999", () => {
    it.each([
      ["expected_close_date", "0000-01-01"],
      ["expected_close_date", "10000-01-01"],
      ["next_follow_up_at", "0000-06-01T12:00:00Z"],
      ["next_follow_up_at", "0001-01-01T00:30:00+01:00"],
      ["next_follow_up_at", "2026-02-30T10:00:00Z"],
    ])("%s %s → 400", async (field, value) => {
      expectError(
        await api.post("/leads", { first_name: "A", [field]: value }),
        400,
        "validation_failed",
        field,
      );
    });

    it("the first and last days pass", async () => {
      const res = await api.post("/leads", {
        first_name: "A",
        expected_close_date: "9999-12-31",
        next_follow_up_at: "0001-01-01T00:00:00Z",
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.expected_close_date).toBe("9999-12-31");
    });
  });

  describe("lists", () => {
    it("an invoice takes 250 lines, not 251", async () => {
      const line = { description: "Work", quantity: 1, unit_price: 1 };
      const ok = await api.post("/invoices", { client_id: clientId, items: Array(250).fill(line) });
      expect(ok.status).toBe(201);
      expect(ok.body.items).toHaveLength(250);
      expectError(
        await api.post("/invoices", { client_id: clientId, items: Array(251).fill(line) }),
        400,
        "validation_failed",
        "items",
      );
    });

    it("an item takes 20 suppliers, an endpoint 32 event names", async () => {
      const supplier = { name: "S" };
      expect(
        (await api.post("/inventory/items", { name: "N", suppliers: Array(20).fill(supplier) })).status,
      ).toBe(201);
      expectError(
        await api.post("/inventory/items", { name: "N", suppliers: Array(21).fill(supplier) }),
        400,
        "validation_failed",
        "suppliers",
      );
      const events = Array(33).fill("lead.created");
      expectError(
        await api.post("/webhook-endpoints", { url: "http://127.0.0.1:9/", events }),
        400,
        "validation_failed",
        "events",
      );
    });

    it(`an invoice takes ${MAX_PAYMENTS_PER_INVOICE} payments, then 400 invalid_state`, async () => {
      const invoice = (
        await api.post("/invoices", {
          client_id: clientId,
          items: [{ description: "W", quantity: 1, unit_price: 1000 }],
        })
      ).body;
      for (let i = 0; i < MAX_PAYMENTS_PER_INVOICE; i++) {
        expect(
          (await api.post(`/invoices/${invoice.id}/payments`, { amount: 0.01, payment_method: "cash" }))
            .status,
        ).toBe(201);
      }
      expectError(
        await api.post(`/invoices/${invoice.id}/payments`, { amount: 0.01, payment_method: "cash" }),
        400,
        "invalid_state",
      );
      const after = await api.get(`/invoices/${invoice.id}`);
      expect(after.body.payments).toHaveLength(MAX_PAYMENTS_PER_INVOICE);
    });
  });

  describe("requests", () => {
    it.each(["%FF", "%ED%A0%80", "%C0%AE", "%"])(
      "a malformed percent-encoding in a path id (%s) is a JSON 400, never a stack trace",
      async (id) => {
        for (const path of [`/clients/${id}`, `/invoices/${id}/payments`, `/leads/${id}`]) {
          const res = await raw(`${server().api}${path}`, {
            method: path.endsWith("payments") ? "POST" : "GET",
            headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
            body: path.endsWith("payments") ? "{}" : undefined,
          });
          expect(res.headers.get("content-type")).toMatch(/application\/json/);
          expect(res.text).not.toMatch(/\bat\s|\.ts:\d/);
          expect([400, 404]).toContain(res.status);
          expect(res.json.error.request_id).toBe(res.headers.get("x-request-id"));
        }
      },
    );

    it(`a query string over ${MAX_QUERY_STRING_BYTES} bytes is 414 uri_too_long`, async () => {
      const ok = await api.get(`/leads?search=${text(200)}`);
      expect(ok.status).toBe(200);
      const res = await api.get(`/leads?search=${text(MAX_QUERY_STRING_BYTES)}`);
      expectError(res, 414, "uri_too_long");
    });

    it("a JSON body nested 33 deep is 400 validation_failed, 10 000 deep too", async () => {
      for (const depth of [33, 10_000]) {
        const body = `{"first_name": "A", "notes": ${"[".repeat(depth)}${"]".repeat(depth)}}`;
        const res = await call("POST", `${server().api}/leads`, {
          key: tenant.key,
          raw: body,
          headers: { "content-type": "application/json" },
        });
        expectError(res, 400, "validation_failed");
      }
    });

    it("a request Node cannot parse gets the JSON error shape and a request id", async () => {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(server().url).port), "127.0.0.1");
        let data = "";
        socket.on("data", (chunk) => (data += chunk.toString()));
        socket.on("end", () => resolve(data));
        socket.on("error", reject);
        socket.write("GET /v1/leads HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n");
      });
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
      expect(answer).toMatch(/X-Request-Id: req_/i);
      expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)).error.code).toBe("bad_request");
    });

    it("GraphQL takes JSON POSTs only: a form or text/plain body is 415 and runs nothing", async () => {
      for (const [type, body] of [
        ["text/plain", '{"query":"mutation { createLead(first_name: \\"Form\\") { id } }"}'],
        [
          "application/x-www-form-urlencoded",
          "query=mutation%20%7B%20createLead(first_name%3A%20%22Form%22)%20%7B%20id%20%7D%20%7D",
        ],
        [
          "multipart/form-data; boundary=x",
          '--x\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query":"mutation { createLead(first_name: \\"Form\\") { id } }"}\r\n--x--\r\n',
        ],
      ]) {
        const res = await raw(`${server().url}/graphql`, {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": type! },
          body,
        });
        expect(res.status, type).toBe(415);
        expect(res.json.errors[0].extensions.code).toBe("unsupported_media_type");
      }
      const leads = await gql(`{ leads(search: "Form") { data { id } } }`);
      expect(leads.data.leads.data).toEqual([]);
      const get = await raw(`${server().url}/graphql?query=${encodeURIComponent("{ workspace { id } }")}`, {
        headers: { authorization: `Bearer ${tenant.key}`, accept: "application/json" },
      });
      expect(get.status).toBe(200);
    });
  });

  describe("bad enum values are explained in the API's terms", () => {
    it("REST and GraphQL list the allowed values, with no GraphQL wording", async () => {
      const res = await api.patch(`/leads/${leadId}`, { stage: "closed" });
      expectError(res, 400, "validation_failed", "stage");
      expect(res.body.error.message).toBe(
        'stage is invalid: "closed" is not one of new, contacted, qualified, proposal, won, lost.',
      );
      const viaGraphql = await gql(
        `mutation($s: LeadStage) { updateLead(id: "${leadId}", stage: $s) { id } }`,
        { s: "closed" },
      );
      expect(viaGraphql.errors?.[0]?.message).toMatch(
        /"closed" is not one of new, contacted, qualified, proposal, won, lost\./,
      );
      expect(viaGraphql.errors?.[0]?.message).not.toMatch(/enum|Did you mean/);
    });
  });

  describe("the response budget", () => {
    it("every REST list takes limit 1–100, whatever its items could weigh: /invoices and /events too", async () => {
      for (const path of ["/invoices", "/events", "/leads"]) {
        expect((await api.get(`${path}?limit=100`)).status, path).toBe(200);
        const res = await api.get(`${path}?limit=101`);
        expectError(res, 400, "validation_failed", "limit");
        expect(res.body.error.message).toMatch(/from 1 to 100/);
      }
    });

    it("GraphQL prices pages by what they hold at run time, and refuses what could pass the budget outside them", async () => {
      // 15 pages of 100 notes of up to 10 000 four-byte characters could be 60 MB: each page stops
      // at what the budget leaves, so the document passes.
      const pages = Array.from(
        { length: GRAPHQL_LIMITS.maxAliases },
        (_, i) => `p${i}: leads(limit: 100) { data { notes } has_more }`,
      ).join("\n");
      const ok = await gql(`{ ${pages} }`);
      expect(ok.errors).toBeUndefined();
      expect(ok.data.p14.data.length).toBeGreaterThan(0);
      expect(ok.data.p14.data).toEqual(ok.data.p0.data);
      // One webhook endpoint shows its 20 newest deliveries, each with its event's data (priced as the
      // largest resource, about 1 MB): two such endpoints could pass the budget, outside any page.
      const endpoint = `{ deliveries { event { data { object } } } }`;
      const refused = await gql(
        `{ a: webhookEndpoint(id: "we_01J00000000000000000000000") ${endpoint} b: webhookEndpoint(id: "we_01J00000000000000000000001") ${endpoint} }`,
      );
      expect(refused.status).toBe(400);
      expect(refused.errors?.[0]?.extensions.code).toBe("query_too_costly");
      expect(refused.errors?.[0]?.message).toMatch(
        new RegExp(`outside its lists, over the ${RESPONSE_BUDGET_BYTES / 1024 / 1024}\\.0 MiB`),
      );
    });

    it("an idempotent answer over 256 KiB is not kept: it says so, and a repeat is refused, never run again", async () => {
      // Eight leads whose notes are 10 000 four-byte characters: about 320 KB of answer.
      const creates = Array.from(
        { length: 8 },
        (_, i) => `c${i}: createLead(first_name: "Big ${i}", notes: $notes) { notes }`,
      ).join("\n");
      const body = JSON.stringify({
        query: `mutation ($notes: String) { ${creates} }`,
        variables: { notes: text(10_000, "😀") },
      });
      const send = () =>
        raw(`${server().url}/graphql`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${tenant.key}`,
            "content-type": "application/json",
            "idempotency-key": "big-answer",
          },
          body,
        });
      const first = await send();
      expect(first.status).toBe(200);
      expect(Buffer.byteLength(first.text)).toBeGreaterThan(MAX_IDEMPOTENT_RESPONSE_BYTES);
      expect(first.headers.get("idempotent-replayable")).toBe("false");
      const again = await send();
      expect(again.status).toBe(409);
      expect(again.json.errors[0].extensions.code).toBe("idempotency_not_replayable");
      expect((await api.get("/leads?search=Big%200")).body.data).toHaveLength(1);
    });
  });
});
