import { beforeAll, describe, expect, it } from "vitest";
import { call, raw, rest } from "../../support/http.ts";
import {
  checkAgainstOpenApi,
  checkedResponses,
  documentFor,
  OpenApiMismatch,
} from "../../support/openapi-check.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

type Json = Record<string, any>;

function deref(doc: Json, node: Json): Json {
  let current = node;
  while (typeof current?.$ref === "string")
    current = current.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((at: Json, key: string) => at[key], doc);
  return current;
}

/** The properties of a response schema, with allOf/nullable wrappers followed. */
function propertiesOf(doc: Json, node: Json): Json {
  const schema = deref(doc, node);
  return schema.allOf ? propertiesOf(doc, schema.allOf[0]) : schema.properties;
}

/** A response fetched without the http.ts check, so the test can alter it first. */
async function unchecked(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  return { status: response.status, headers: new Headers(response.headers), text: await response.text() };
}

e2e("OpenAPI document against real responses", (server) => {
  let tenant: Tenant;
  let doc: Json;

  beforeAll(async () => {
    tenant = await server().tenant();
    doc = (await call("GET", `${server().api}/openapi.json`)).body;
  });

  async function paidInvoice() {
    const api = rest(server().api, tenant.key);
    const client = await api.post("/clients", { name: "Schema Client" });
    const invoice = await api.post("/invoices", {
      client_id: client.body.id,
      items: [{ description: "Work", quantity: 2, unit_price: 50 }],
    });
    expect(invoice.status, JSON.stringify(invoice.body)).toBe(201);
    const payment = await api.post(`/invoices/${invoice.body.id}/payments`, {
      amount: 40,
      payment_method: "cash",
    });
    expect(payment.status, JSON.stringify(payment.body)).toBe(201);
    const read = await api.get(`/invoices/${invoice.body.id}`);
    return { payment: payment.body, invoice: read.body };
  }

  describe("the document describes what REST answers", () => {
    it("documents exactly the keys of a payment, its invoice, and an invoice's payments", async () => {
      const { payment, invoice } = await paidInvoice();
      const paymentProps = propertiesOf(
        doc,
        doc.paths["/invoices/{invoice_id}/payments"].post.responses["201"].content["application/json"].schema,
      );
      expect(Object.keys(paymentProps).sort()).toEqual(Object.keys(payment).sort());
      const paymentInvoiceProps = propertiesOf(doc, paymentProps.invoice);
      expect(Object.keys(paymentInvoiceProps).sort()).toEqual(Object.keys(payment.invoice).sort());
      expect(paymentInvoiceProps).not.toHaveProperty("payments");

      const invoiceProps = propertiesOf(
        doc,
        doc.paths["/invoices/{id}"].get.responses["200"].content["application/json"].schema,
      );
      expect(Object.keys(invoiceProps).sort()).toEqual(Object.keys(invoice).sort());
      expect(invoice.payments).toHaveLength(1);
      const invoicePaymentProps = propertiesOf(doc, invoiceProps.payments.items);
      expect(Object.keys(invoicePaymentProps).sort()).toEqual(Object.keys(invoice.payments[0]).sort());
      expect(invoicePaymentProps).not.toHaveProperty("invoice");
    });

    it("types an event's data.object as a JSON object, which is what GET /events returns", async () => {
      const api = rest(server().api, tenant.key);
      await api.post("/leads", { first_name: "Evented" });
      const events = await api.get("/events?type=lead.created");
      expect(events.status).toBe(200);
      expect(typeof events.body.data[0].data.object).toBe("object");
      const event = propertiesOf(
        doc,
        propertiesOf(doc, doc.paths["/events"].get.responses["200"].content["application/json"].schema).data
          .items,
      );
      expect(propertiesOf(doc, event.data).object).toMatchObject({
        type: "object",
        additionalProperties: true,
      });
    });

    it("types no success body as nullable", () => {
      for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
        for (const [method, op] of Object.entries(item as Record<string, Json>)) {
          const status = Object.keys(op.responses).find((s) => /^2/.test(s))!;
          const json = op.responses[status].content["application/json"];
          if (!json) continue; // bytes: GET /objects/{id}/content
          const schema = json.schema;
          expect(deref(doc, schema).nullable, `${method} ${path}`).toBeUndefined();
          expect(schema.nullable, `${method} ${path}`).toBeUndefined();
        }
      }
    });
  });

  describe("every /v1 response received through test/support/http.ts is checked", () => {
    it("counts the answers of call, rest and raw under /v1, and leaves /graphql alone", async () => {
      const before = checkedResponses();
      await call("GET", `${server().api}/workspace`, { key: tenant.key });
      await rest(server().api, tenant.key).get("/leads?limit=1");
      await raw(`${server().api}/leads/lead_00000000000000000000000000`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      expect(checkedResponses()).toBe(before + 3);
      await call("POST", `${server().url}/graphql`, {
        key: tenant.key,
        body: { query: "{ workspace { id } }" },
      });
      expect(checkedResponses()).toBe(before + 3);
    });

    it("accepts real error answers: 401 with its challenge, 405 with Allow, 404 outside the document, 415", async () => {
      const before = checkedResponses();
      expect((await call("GET", `${server().api}/leads`)).status).toBe(401);
      const put = await call("PUT", `${server().api}/leads`, { key: tenant.key });
      expect(put.status).toBe(405);
      expect(put.headers.get("allow")).toBe("GET, POST");
      expect((await call("GET", `${server().api}/no-such-route`, { key: tenant.key })).status).toBe(404);
      const text = await call("POST", `${server().api}/leads`, {
        key: tenant.key,
        raw: "first_name=Ada",
        headers: { "content-type": "text/plain" },
      });
      expect(text.status).toBe(415);
      expect(checkedResponses()).toBe(before + 4);
    });

    it("fails a body that contradicts the schema, naming the route, the status and the schema error", async () => {
      const url = `${server().api}/leads/lead_00000000000000000000000000`;
      const real = await unchecked(`${server().api}/workspace`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      const lead = {
        ...JSON.parse(
          (
            await unchecked(`${server().api}/leads`, {
              method: "POST",
              headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
              body: '{"first_name":"Wrong"}',
            })
          ).text,
        ),
      };
      lead.estimated_value = "12";
      const response = { status: 200, headers: real.headers, text: JSON.stringify(lead) };
      const failure = await checkAgainstOpenApi("GET", url, response).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(OpenApiMismatch);
      expect((failure as Error).message).toMatch(/^GET \/leads\/\{id\} answered 200/);
      expect((failure as Error).message).toMatch(/\/estimated_value must be number/);

      const extra = {
        status: 200,
        headers: real.headers,
        text: JSON.stringify({ ...lead, estimated_value: 12, surprise: true }),
      };
      await expect(checkAgainstOpenApi("GET", url, extra)).rejects.toThrow(
        /must NOT have additional properties.*surprise/,
      );
    });

    it("fails a status the operation does not declare", async () => {
      const real = await unchecked(`${server().api}/workspace`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      const response = { status: 404, headers: real.headers, text: real.text };
      await expect(checkAgainstOpenApi("GET", `${server().api}/workspace`, response)).rejects.toThrow(
        /GET \/workspace answered 404[\s\S]*status 404 is not declared/,
      );
    });

    it("fails a missing or malformed declared header", async () => {
      const url = `${server().api}/workspace`;
      const check = await documentFor(server().api);
      const real = await unchecked(url, { headers: { authorization: `Bearer ${tenant.key}` } });
      expect(check.problems("GET", url, real).problems).toEqual([]);

      const noId = new Headers(real.headers);
      noId.delete("x-request-id");
      expect(check.problems("GET", url, { ...real, headers: noId }).problems).toEqual([
        "header X-Request-Id is missing",
      ]);

      const badRemaining = new Headers(real.headers);
      badRemaining.set("x-ratelimit-remaining", "lots");
      expect(check.problems("GET", url, { ...real, headers: badRemaining }).problems).toEqual([
        "header X-RateLimit-Remaining is 'lots', not a number",
      ]);
      const badPlan = new Headers(real.headers);
      badPlan.set("x-ratelimit-plan", "platinum");
      expect(check.problems("GET", url, { ...real, headers: badPlan }).problems).toEqual([
        expect.stringMatching(
          /^header X-RateLimit-Plan 'platinum': must be equal to one of the allowed values/,
        ),
      ]);

      const refused = {
        status: 429,
        headers: real.headers,
        text: JSON.stringify({
          error: {
            type: "rate_limit_error",
            code: "rate_limit_exceeded",
            message: "Slow down.",
            request_id: real.headers.get("x-request-id"),
          },
        }),
      };
      expect(check.problems("GET", url, refused).problems).toEqual(["header Retry-After is missing"]);
    });

    it("checks errors outside the document against the Error schema, and a wrong method against the path's 405", async () => {
      const check = await documentFor(server().api);
      const notFound = await unchecked(`${server().api}/no-such-route`, {
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      expect(notFound.status).toBe(404);
      expect(check.problems("GET", `${server().api}/no-such-route`, notFound).problems).toEqual([]);
      const malformed = { ...notFound, text: JSON.stringify({ error: { code: "not_found" } }) };
      expect(check.problems("GET", `${server().api}/no-such-route`, malformed).problems).toEqual([
        expect.stringMatching(/^body: \/error must have required property 'type'/),
      ]);
      const html = { ...notFound, text: "<h1>Not found</h1>" };
      expect(check.problems("GET", `${server().api}/no-such-route`, html).problems).toEqual([
        expect.stringMatching(/^the body is not JSON/),
      ]);

      const put = await unchecked(`${server().api}/leads`, {
        method: "PUT",
        headers: { authorization: `Bearer ${tenant.key}` },
      });
      expect(put.status).toBe(405);
      const withoutAllow = new Headers(put.headers);
      withoutAllow.delete("allow");
      expect(
        check.problems("PUT", `${server().api}/leads`, { ...put, headers: withoutAllow }).problems,
      ).toEqual(["header Allow is missing"]);
      const document = await unchecked(`${server().api}/openapi.json`);
      expect(check.problems("GET", `${server().api}/openapi.json`, document)).toEqual({
        route: "GET /v1/openapi.json (not in the document)",
        problems: [],
      });
    });
  });
});
