import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import type { RunningServer } from "../../../server/runtime/server.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";
import { type Api, newWorkspace } from "../../support/workspace.ts";
import { expectRefused, startTargetServer, testDelivery, type testResolver, workspaceOn } from "./support.ts";

/**
 * docs/api/webhooks.md: in development a webhook may target loopback and private addresses, but
 * never link-local or cloud metadata ones, checked when the URL is registered and again on the
 * address each attempt connects to. Hostnames are resolved by an injected lookup, so no test
 * depends on real DNS. Production (public https only): ssrf-production.test.ts.
 */

/** Refused in development too: link-local and cloud metadata addresses, literal or resolved. */
const NEVER_ALLOWED: [url: string, why: RegExp][] = [
  [
    "http://169.254.169.254/latest/meta-data/",
    /169\.254\.169\.254, a link-local address, which is never allowed/,
  ],
  ["http://169.254.10.20:8080/hooks", /link-local/],
  ["http://[fe80::1]/hooks", /fe80::1, a link-local address/],
  ["http://[::ffff:169.254.169.254]/hooks", /link-local/],
  // NAT64 local-use (RFC 8215): private as a prefix, but what it carries decides.
  [
    "http://[64:ff9b:1::a9fe:a9fe]/",
    /64:ff9b:1::a9fe:a9fe \(169\.254\.169\.254 in NAT64 local-use form\), a link-local address, which is never allowed/,
  ],
  ["http://[2002:a9fe:a9fe::]/hooks", /169\.254\.169\.254 in 6to4 form/],
  ["http://[::ffff:0:a9fe:a9fe]/hooks", /169\.254\.169\.254 in IPv4-translated form/],
  ["http://[fd00:ec2::254]/latest/meta-data/", /fd00:ec2::254, a cloud metadata address/],
  ["http://100.100.100.200/latest/meta-data/", /100\.100\.100\.200, a cloud metadata address/],
  ["http://metadata.test/computeMetadata/v1/", /resolves to 169\.254\.169\.254, a link-local address/],
  ["http://v6-private.test/hooks", /resolves to fd00:ec2::254, a cloud metadata address/],
  ["http://alibaba-metadata.test/hooks", /resolves to 100\.100\.100\.200, a cloud metadata address/],
];

for (const stack of stacks()) {
  describe(`link-local and metadata targets in development [${stack}]`, () => {
    let running: RunningServer;
    let drop: (() => Promise<void>) | undefined;
    let resolver: ReturnType<typeof testResolver>;
    let receiver: Receiver;
    let api: Api;
    let workspaceId: string;

    beforeAll(async () => {
      ({ running, resolver, drop } = await startTargetServer(stack, { KONTOR_ENV: "development" }));
      receiver = await startReceiver();
      ({ api, workspaceId } = await workspaceOn(running, "Metadata"));
    });

    afterAll(async () => {
      await running?.close();
      await receiver?.close();
      await drop?.();
    });

    it("refuses them at creation with validation_failed on url and stores nothing", async () => {
      for (const [url, why] of NEVER_ALLOWED)
        expectRefused(await api.post("/webhook-endpoints", { url, events: ["*"] }), why);
      expect((await api.get("/webhook-endpoints")).body.data).toEqual([]);
      expect(await running.db.prisma.webhookEndpoint.count({ where: { workspaceId } })).toBe(0);
      expect(resolver.calls("metadata.test")).toBeGreaterThanOrEqual(1);
    });

    it("still takes loopback, private and not-yet-resolvable targets", async () => {
      for (const url of [
        receiver.url("/dev-ok"),
        "http://internal.test/hooks",
        "http://[::1]:9/hooks",
        "http://nowhere.test/hooks",
      ]) {
        const created = await api.post("/webhook-endpoints", { url, events: ["lead.created"] });
        expect(created.status, `${url}: ${JSON.stringify(created.body)}`).toBe(201);
        expect((await api.delete(`/webhook-endpoints/${created.body.id}`)).status).toBe(200);
      }
    });

    it("refuses them in a PATCH and leaves the endpoint as it was", async () => {
      const created = await api.post("/webhook-endpoints", {
        url: receiver.url("/patched"),
        events: ["lead.created"],
      });
      expect(created.status).toBe(201);
      const { secret: _, ...stored } = created.body;
      for (const [url, why] of NEVER_ALLOWED)
        expectRefused(
          await api.patch(`/webhook-endpoints/${created.body.id}`, { url, description: "moved" }),
          why,
        );
      expect((await api.get(`/webhook-endpoints/${created.body.id}`)).body).toEqual(stored);
      await api.delete(`/webhook-endpoints/${created.body.id}`);
    });

    it("refuses a trusted provider at http://127.0.0.2/ or a NAT64 form of the metadata address, and writes nothing", async () => {
      const cases: [body: Record<string, string>, param: string, why: RegExp][] = [
        [
          { issuer: "http://127.0.0.2/", jwks_url: "http://127.0.0.1:9/jwks" },
          "issuer",
          /^issuer must use https \(http is accepted only for localhost, 127\.0\.0\.1 or \[::1\]/,
        ],
        [
          { issuer: "http://127.0.0.1:9/idp", jwks_url: "http://127.0.0.2/" },
          "jwks_url",
          /^jwks_url must use https/,
        ],
        [
          { issuer: "http://[::ffff:127.0.0.1]/", jwks_url: "http://127.0.0.1:9/jwks" },
          "issuer",
          /must use https/,
        ],
        [
          { issuer: "https://[64:ff9b:1::a9fe:a9fe]/", jwks_url: "http://127.0.0.1:9/jwks" },
          "issuer",
          /^issuer points to 64:ff9b:1::a9fe:a9fe .*link-local address, which is never allowed/,
        ],
        [
          { issuer: "http://127.0.0.1:9/idp", jwks_url: "https://metadata.test/jwks" },
          "jwks_url",
          /resolves to 169\.254\.169\.254, a link-local address/,
        ],
      ];
      for (const [body, param, why] of cases)
        expectRefused(await api.post("/trusted-providers", body), why, param);
      expect(await running.db.prisma.trustedProvider.count({ where: { workspaceId } })).toBe(0);
      // The exact loopback hosts over http are still taken (nothing is fetched until an ID-JAG arrives).
      const taken = await api.post("/trusted-providers", {
        issuer: "http://127.0.0.1:9/idp",
        jwks_url: "http://[::1]:9/jwks",
      });
      expect(taken.status, JSON.stringify(taken.body)).toBe(201);
      expect((await api.delete(`/trusted-providers/${taken.body.id}`)).status).toBe(200);
    });

    it("refuses them at send, before connecting: rows written past the API, and a name that resolves there only later", async () => {
      const donor = await api.post("/webhook-endpoints", {
        url: receiver.url("/donor"),
        events: ["lead.created"],
      });
      const { secretSealed } = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({
        where: { id: donor.body.id },
      });
      const rows = [];
      for (const url of [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://metadata.test/",
      ]) {
        rows.push(
          await running.db.prisma.webhookEndpoint.create({
            data: { id: newId("webhookEndpoint"), workspaceId, url, events: ["*"], secretSealed },
          }),
        );
      }
      const rebound = await api.post("/webhook-endpoints", {
        url: "http://rebind-metadata.test/hooks",
        events: ["lead.created"],
      });
      expect(rebound.status, JSON.stringify(rebound.body)).toBe(201);
      for (const id of [...rows.map((row) => row.id), rebound.body.id]) {
        const delivery = await testDelivery(api, id);
        expect(delivery, id).toMatchObject({
          status: "failed",
          attempts: 2,
          last_error: "address_not_allowed",
          response_status: null,
          response_body: null,
        });
      }
      expect(resolver.calls("rebind-metadata.test")).toBeGreaterThanOrEqual(3);
      // The donor's receiver saw nothing of it.
      expect(receiver.received).toEqual([]);
    });
  });
}

e2e("webhook targets in development", (server, stack) => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it("accepts an http://127.0.0.1 target and delivers to it", async () => {
    const { client: api } = await newWorkspace(server());
    const path = `/${stack}/dev-loopback`;
    const created = await api.post("/webhook-endpoints", {
      url: receiver.url(path),
      events: ["lead.created"],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.url).toBe(receiver.url(path));

    const lead = await api.post("/leads", { first_name: "Local" });
    expect(lead.status).toBe(201);
    const [request] = await receiver.waitFor(path, 1);
    expect(request!.json).toMatchObject({ type: "lead.created", data: { object: { id: lead.body.id } } });
  });

  it("still refuses ftp:// and other non-http schemes", async () => {
    const { client: api } = await newWorkspace(server());
    for (const url of [
      "ftp://127.0.0.1/hooks",
      "file:///etc/passwd",
      "gopher://127.0.0.1:6379/_INFO",
      "javascript:alert(1)",
    ]) {
      expectRefused(await api.post("/webhook-endpoints", { url, events: ["*"] }), /http or https/);
    }
    expectRefused(
      await api.post("/webhook-endpoints", { url: "not a url", events: ["*"] }),
      /absolute http or https URL/,
    );
    expect((await api.get("/webhook-endpoints")).body.data).toEqual([]);
  });
});
