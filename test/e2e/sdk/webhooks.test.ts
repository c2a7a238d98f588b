import type { IncomingHttpHeaders } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it, vi } from "vitest";
import { EVENT_TYPES, TEST_EVENT_TYPE } from "../../../schema/events.ts";
import {
  KONTOR_EVENT_TYPES,
  type KontorEvent,
  type KontorEventType,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationErrorReason,
} from "../../../sdk/src/webhooks/index.ts";
import { rest } from "../../support/http.ts";
import { type Received, type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The SDK's webhook verification (issue 13, point 7) against real deliveries: an endpoint on a
 * loopback receiver, events made through the API, and the received raw body and headers handed to
 * verifyWebhook as a Node receiver would; then the same deliveries altered, which it must refuse.
 */

type Api = ReturnType<typeof rest>;

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

/** The refusal `promise` ends in, checked for its class and reason. */
async function refusal(
  promise: Promise<unknown>,
  reason: WebhookVerificationErrorReason,
): Promise<WebhookVerificationError> {
  const error = await promise.then(
    (event) => {
      throw new Error(`accepted: ${JSON.stringify(event).slice(0, 200)}`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(WebhookVerificationError);
  expect({
    reason: (error as WebhookVerificationError).reason,
    message: (error as Error).message,
  }).toMatchObject({ reason });
  return error as WebhookVerificationError;
}

/** A copy of the received headers without `drop` and with `set` (names lower-case, as Node gives them). */
function headersWith(
  request: Received,
  set: Record<string, string> = {},
  drop: string[] = [],
): IncomingHttpHeaders {
  const copy: IncomingHttpHeaders = { ...request.headers };
  for (const name of drop) delete copy[name];
  return { ...copy, ...set };
}

const KONTOR_HEADERS = ["kontor-signature", "kontor-timestamp"];
const STANDARD_HEADERS = ["webhook-id", "webhook-timestamp", "webhook-signature"];

it("knows exactly the server's event catalog, plus webhook.test", () => {
  expect([...KONTOR_EVENT_TYPES]).toEqual([...EVENT_TYPES, TEST_EVENT_TYPE]);
});

e2e("SDK webhook verification", (server, stack) => {
  let api: Api;
  let workspaceId: string;
  let endpoint: { id: string; secret: string };
  /** The first lead.created delivery, and the lead it carries. */
  let delivered: Received;
  let lead: Record<string, any>;
  const path = (name: string) => `/${stack}/sdk-${name}`;

  async function newLead(first_name: string) {
    const res = await api.post("/leads", { first_name, last_name: "Lovelace" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as Record<string, any>;
  }

  /** A new endpoint on the receiver at `path(name)` for `events`: its id and secret. */
  async function newEndpoint(name: string, events: string[]): Promise<{ id: string; secret: string }> {
    const created = await api.post("/webhook-endpoints", { url: receiver.url(path(name)), events });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return created.body;
  }

  /** The delivery carrying the event about `resourceId` on `at`. */
  async function deliveryOf(at: string, resourceId: string): Promise<Received> {
    let found: Received | undefined;
    for (let count = 1; !found; count++) {
      const received = await receiver.waitFor(at, count);
      found = received.find((request) => request.json?.data?.object?.id === resourceId);
    }
    return found;
  }

  /** verifyWebhook's answer for the main delivery with its headers altered by `set` and `drop`. */
  const verifyAltered = (
    set: Record<string, string>,
    drop: string[] = [],
    secret = endpoint.secret,
    options?: Parameters<typeof verifyWebhook>[3],
  ) => verifyWebhook(delivered.body, headersWith(delivered, set, drop), secret, options);

  beforeAll(async () => {
    const tenant = await server().tenant();
    workspaceId = tenant.workspaceId;
    api = rest(server().api, tenant.key);
    endpoint = await newEndpoint("main", ["lead.created"]);
    lead = await newLead("Ada");
    delivered = await deliveryOf(path("main"), lead.id);
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  describe("real deliveries", () => {
    it("verifies a lead.created delivery (raw string body, Node's headers) and returns the typed event", async () => {
      const event = await verifyWebhook(delivered.body, delivered.headers, endpoint.secret);
      expect(event).toEqual(delivered.json);
      expect(event).toMatchObject({
        object: "event",
        type: "lead.created",
        workspace_id: workspaceId,
        id: delivered.headers["webhook-id"],
      });
      expect(event.id).toMatch(/^evt_/);
      // The discriminated union: narrowing on type (and thin) types data.object.
      if (event.type !== "lead.created" || event.thin) throw new Error(`unexpected ${event.type}`);
      expectTypeOf(event.data.object.object).toEqualTypeOf<"lead">();
      expectTypeOf(event.data.object.first_name).toEqualTypeOf<string>();
      expectTypeOf(event.data.object.last_name).toEqualTypeOf<string | null>();
      expectTypeOf(event.type).toEqualTypeOf<"lead.created">();
      expect(event.data.object).toEqual(lead);
      expect(event.data.object.object).toBe("lead");
      expect(event.thin).toBeUndefined();
    });

    it("verifies the same delivery given as bytes (Buffer and plain Uint8Array) and with fetch Headers", async () => {
      const bytes = Buffer.from(delivered.body, "utf8");
      await expect(verifyWebhook(bytes, delivered.headers, endpoint.secret)).resolves.toEqual(delivered.json);
      await expect(verifyWebhook(new Uint8Array(bytes), delivered.headers, endpoint.secret)).resolves.toEqual(
        delivered.json,
      );
      const headers = new Headers();
      for (const [name, value] of Object.entries(delivered.headers))
        if (typeof value === "string") headers.set(name, value);
      await expect(verifyWebhook(delivered.body, headers, endpoint.secret)).resolves.toEqual(delivered.json);
      // Header names are case-insensitive in a plain object too.
      const mixedCase = {
        "Kontor-Signature": String(delivered.headers["kontor-signature"]),
        "Kontor-Timestamp": String(delivered.headers["kontor-timestamp"]),
        "Webhook-Id": String(delivered.headers["webhook-id"]),
        "Webhook-Timestamp": String(delivered.headers["webhook-timestamp"]),
        "Webhook-Signature": String(delivered.headers["webhook-signature"]),
      };
      await expect(verifyWebhook(delivered.body, mixedCase, endpoint.secret)).resolves.toEqual(
        delivered.json,
      );
    });

    it("compares both signatures with Web Crypto's HMAC verify (constant time), never with ===", async () => {
      const verify = vi.spyOn(globalThis.crypto.subtle, "verify");
      await verifyWebhook(delivered.body, delivered.headers, endpoint.secret);
      expect(verify).toHaveBeenCalledTimes(2);
      for (const [algorithm, , signature] of verify.mock.calls) {
        expect(algorithm).toBe("HMAC");
        expect((signature as Uint8Array).byteLength).toBe(32);
      }
    });

    it("accepts the Standard Webhooks headers alone, and Kontor's alone", async () => {
      await expect(verifyAltered({}, KONTOR_HEADERS)).resolves.toEqual(delivered.json);
      await expect(verifyAltered({}, STANDARD_HEADERS)).resolves.toEqual(delivered.json);
      // Any of several space-separated signatures may match (a rotation on the sender's side); v1a and junk are skipped.
      const real = String(delivered.headers["webhook-signature"]);
      const several = headersWith(
        delivered,
        { "webhook-signature": `v1a,AAAA v1,${Buffer.alloc(32).toString("base64")} junk ${real}` },
        KONTOR_HEADERS,
      );
      await expect(verifyWebhook(delivered.body, several, endpoint.secret)).resolves.toEqual(delivered.json);
      // Two webhook-signature headers, which fetch's Headers joins with ", ".
      const joined = new Headers({
        "webhook-id": String(delivered.headers["webhook-id"]),
        "webhook-timestamp": String(delivered.headers["webhook-timestamp"]),
      });
      joined.append("webhook-signature", `v1,${Buffer.alloc(32, 1).toString("base64")}`);
      joined.append("webhook-signature", real);
      expect(joined.get("webhook-signature")).toContain(", v1,");
      await expect(verifyWebhook(delivered.body, joined, endpoint.secret)).resolves.toEqual(delivered.json);
    });

    it("verifies a webhook.test delivery: its data.object is the endpoint, without the secret", async () => {
      const tested = await api.post(`/webhook-endpoints/${endpoint.id}/test`);
      expect(tested.status, JSON.stringify(tested.body)).toBe(201);
      const request = await deliveryOf(path("main"), endpoint.id);
      const event = await verifyWebhook(request.body, request.headers, endpoint.secret);
      expect(event.type).toBe("webhook.test");
      if (event.type !== "webhook.test" || event.thin) throw new Error("not a full webhook.test event");
      expectTypeOf(event.data.object.object).toEqualTypeOf<"webhook_endpoint">();
      expectTypeOf(event.data.object.url).toEqualTypeOf<string>();
      expectTypeOf(event.data.object).not.toHaveProperty("secret");
      expect(event.data.object).toMatchObject({
        object: "webhook_endpoint",
        id: endpoint.id,
        url: receiver.url(path("main")),
      });
      expect(event.data.object).not.toHaveProperty("secret");
      expect(JSON.stringify(event)).not.toContain(endpoint.secret);
    });

    it("verifies a thin event (over 256 KiB) and types its data.object as object and id only", async () => {
      const created = await newEndpoint("thin", ["invoice.created"]);
      const client = await api.post("/clients", { name: "Thin Events Ltd" });
      expect(client.status).toBe(201);
      // 250 lines of 500 "€" (3 bytes each): about 390 KB in full.
      const items = Array.from({ length: 250 }, (_, i) => ({
        description: `${i}:`.padEnd(500, "€"),
        quantity: 1,
        unit_price: 10,
      }));
      const invoice = await api.post("/invoices", { client_id: client.body.id, items });
      expect(invoice.status).toBe(201);
      const request = await deliveryOf(path("thin"), invoice.body.id);
      const event = await verifyWebhook(request.body, request.headers, created.secret);
      expect(event).toMatchObject({
        type: "invoice.created",
        thin: true,
        data: { object: { object: "invoice", id: invoice.body.id } },
      });
      if (event.type !== "invoice.created" || !event.thin)
        throw new Error("not a thin invoice.created event");
      expectTypeOf(event.data.object).toEqualTypeOf<{ object: "invoice"; id: string }>();
      // @ts-expect-error a thin event carries no snapshot: its fields are not typed as there
      expect(event.data.object.items).toBeUndefined();
      expect(event.event_url).toBe(`${server().api}/events/${event.id}`);
      expect((await api.get(`/events/${event.id}`)).body.data.object.items).toHaveLength(250);
    });

    it("signWebhook reproduces the headers Kontor sent (for tests of a receiver)", async () => {
      const timestamp = Number(delivered.headers["kontor-timestamp"]);
      const signed = await signWebhook(delivered.body, endpoint.secret, { timestamp });
      expect(signed).toEqual({
        "Kontor-Event": "lead.created",
        "Kontor-Timestamp": delivered.headers["kontor-timestamp"],
        "Kontor-Signature": delivered.headers["kontor-signature"],
        "webhook-id": delivered.headers["webhook-id"],
        "webhook-timestamp": delivered.headers["webhook-timestamp"],
        "webhook-signature": delivered.headers["webhook-signature"],
      });
    });
  });

  describe("refusals", () => {
    it("refuses a tampered body, under either signature", async () => {
      const tampered = delivered.body.replace('"first_name":"Ada"', '"first_name":"Eve"');
      expect(tampered).not.toBe(delivered.body);
      const both = await refusal(
        verifyWebhook(tampered, delivered.headers, endpoint.secret),
        "invalid_signature",
      );
      expect(both.message).toContain("Kontor-Signature");
      await refusal(
        verifyWebhook(tampered, headersWith(delivered, {}, KONTOR_HEADERS), endpoint.secret),
        "invalid_signature",
      );
      await refusal(
        verifyWebhook(`${delivered.body} `, headersWith(delivered, {}, STANDARD_HEADERS), endpoint.secret),
        "invalid_signature",
      );
      // A body re-serialised after parsing is not the body that was signed.
      await refusal(
        verifyWebhook(JSON.stringify(delivered.json, null, 1), delivered.headers, endpoint.secret),
        "invalid_signature",
      );
    });

    it("refuses a signature that does not cover the headers it came with (timestamp, id changed)", async () => {
      const later = String(Number(delivered.headers["kontor-timestamp"]) + 1);
      await refusal(verifyAltered({ "kontor-timestamp": later }, STANDARD_HEADERS), "invalid_signature");
      await refusal(verifyAltered({ "webhook-timestamp": later }, KONTOR_HEADERS), "invalid_signature");
      await refusal(verifyAltered({ "webhook-id": "evt_01J00000000000000000000000" }), "invalid_signature");
      // One good signature does not excuse a bad one: both present, both must match.
      await refusal(
        verifyAltered({ "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}` }),
        "invalid_signature",
      );
      await refusal(verifyAltered({ "kontor-signature": `sha256=${"0".repeat(64)}` }), "invalid_signature");
      await refusal(verifyAltered({ "kontor-signature": "sha256=zz" }), "invalid_signature");
      // Kontor-Event is not signed, but must agree with the signed body.
      await refusal(verifyAltered({ "kontor-event": "invoice.paid" }), "invalid_header");
    });

    it("refuses another endpoint's secret", async () => {
      const other = await newEndpoint("other", ["lead.created"]);
      expect(other.secret).toMatch(/^whsec_/);
      await refusal(verifyWebhook(delivered.body, delivered.headers, other.secret), "invalid_signature");
      await refusal(verifyAltered({}, KONTOR_HEADERS, other.secret), "invalid_signature");
      await refusal(verifyAltered({}, STANDARD_HEADERS, other.secret), "invalid_signature");
    });

    it("after rotate-secret: new deliveries verify with the new secret only, old ones with the old secret only", async () => {
      const at = path("rotate");
      const created = await newEndpoint("rotate", ["lead.created"]);
      const before = await deliveryOf(at, (await newLead("Before")).id);
      await expect(verifyWebhook(before.body, before.headers, created.secret)).resolves.toMatchObject({
        type: "lead.created",
      });

      const rotated = await api.post(`/webhook-endpoints/${created.id}/rotate-secret`);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).not.toBe(created.secret);
      const after = await deliveryOf(at, (await newLead("After")).id);
      const event = await verifyWebhook(after.body, after.headers, rotated.body.secret);
      expect(event.type === "lead.created" && !event.thin && event.data.object.first_name).toBe("After");
      await refusal(verifyWebhook(after.body, after.headers, created.secret), "invalid_signature");
      await refusal(verifyWebhook(before.body, before.headers, rotated.body.secret), "invalid_signature");
    });

    it("refuses a stale or future timestamp beyond the tolerance (default 300 s), accepts within it", async () => {
      const sentAt = Number(delivered.headers["kontor-timestamp"]) * 1000;
      const at = (offsetSeconds: number) => () => sentAt + offsetSeconds * 1000;
      await expect(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, { now: at(299) }),
      ).resolves.toBeTruthy();
      await expect(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, { now: at(-299) }),
      ).resolves.toBeTruthy();
      const stale = await refusal(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, { now: at(301) }),
        "timestamp_too_old",
      );
      expect(stale.message).toContain("300 s");
      await refusal(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, { now: at(-301) }),
        "timestamp_in_future",
      );
      // Each signature's own timestamp is checked: the Standard Webhooks one alone too.
      await refusal(
        verifyAltered({}, KONTOR_HEADERS, endpoint.secret, { now: at(3600) }),
        "timestamp_too_old",
      );
      await refusal(
        verifyAltered({}, STANDARD_HEADERS, endpoint.secret, { now: at(-3600) }),
        "timestamp_in_future",
      );
      // toleranceSeconds widens or narrows the window.
      await expect(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, {
          now: at(3000),
          toleranceSeconds: 3600,
        }),
      ).resolves.toBeTruthy();
      await refusal(
        verifyWebhook(delivered.body, delivered.headers, endpoint.secret, {
          now: at(11),
          toleranceSeconds: 10,
        }),
        "timestamp_too_old",
      );
      await refusal(verifyAltered({ "kontor-timestamp": "yesterday" }), "invalid_header");
    });

    it("refuses missing headers: no signature at all, a signature without its timestamp, incomplete Standard Webhooks headers", async () => {
      const none = await refusal(
        verifyAltered({}, [...KONTOR_HEADERS, ...STANDARD_HEADERS]),
        "missing_header",
      );
      expect(none.message).toContain("Kontor-Signature");
      await refusal(verifyWebhook(delivered.body, {}, endpoint.secret), "missing_header");
      await refusal(verifyWebhook(delivered.body, new Headers(), endpoint.secret), "missing_header");
      await refusal(verifyAltered({}, ["kontor-timestamp", ...STANDARD_HEADERS]), "missing_header");
      for (const missing of STANDARD_HEADERS) {
        const error = await refusal(verifyAltered({}, [missing]), "missing_header");
        expect(error.message).toContain(missing);
      }
    });

    it("refuses a secret that is not a whsec_ secret, with a message that says so", async () => {
      const tenantKey = await server().tenant();
      for (const secret of [
        tenantKey.key,
        "",
        "whsec_",
        endpoint.secret.slice("whsec_".length),
        undefined as unknown as string,
      ]) {
        const error = await refusal(
          verifyWebhook(delivered.body, delivered.headers, secret),
          "invalid_secret",
        );
        expect(error.message).toContain('"whsec_"');
      }
      // The Standard Webhooks key is the base64 part: a secret whose part is not base64 cannot check it.
      await refusal(verifyAltered({}, KONTOR_HEADERS, "whsec_not*base64!"), "invalid_secret");
    });

    it("refuses signed bodies that are not the event envelope, a parsed body, and types it does not know", async () => {
      const secret = endpoint.secret;
      const timestamp = Math.floor(Date.now() / 1000);
      const signed = async (body: string) =>
        verifyWebhook(
          body,
          await signWebhook(body, secret, { eventId: "evt_01J00000000000000000000000", timestamp }),
          secret,
        );
      for (const body of [
        "not json",
        "[1,2]",
        JSON.stringify({ ...delivered.json, object: "lead" }),
        JSON.stringify({ ...delivered.json, data: {} }),
        JSON.stringify({ ...delivered.json, id: 7 }),
      ]) {
        await refusal(signed(body), "invalid_payload");
      }
      const parsed = await refusal(
        verifyWebhook(delivered.json as unknown as string, delivered.headers, secret),
        "invalid_payload",
      );
      expect(parsed.message).toContain("raw request body");
      const future = { ...delivered.json, type: "lead.archived" };
      const unknown = await refusal(signed(JSON.stringify(future)), "unknown_event_type");
      expect(unknown.payload).toEqual(future);
    });
  });
});

// Type-level: the union covers the catalog and narrows data.object by type.
expectTypeOf<KontorEvent["type"]>().toEqualTypeOf<KontorEventType>();
expectTypeOf<
  Extract<KontorEvent, { type: "file.uploaded"; thin?: undefined }>["data"]["object"]["object"]
>().toEqualTypeOf<"file">();
expectTypeOf<
  Extract<KontorEvent, { type: "file.uploaded"; thin?: undefined }>["data"]["object"]["size_bytes"]
>().toEqualTypeOf<number>();
expectTypeOf<
  Extract<KontorEvent, { type: "payment.recorded"; thin?: undefined }>["data"]["object"]["invoice_id"]
>().toEqualTypeOf<string>();
expectTypeOf<
  Extract<KontorEvent, { type: "quote.accepted"; thin?: undefined }>["data"]["object"]["object"]
>().toEqualTypeOf<"invoice">();
