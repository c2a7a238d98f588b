import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import type { RunningServer } from "../../../server/runtime/server.ts";
import { stacks } from "../../support/stacks.ts";
import type { Api } from "../../support/workspace.ts";
import {
  expectRefused,
  PUBLIC_ADDRESS,
  REBOUND,
  startTargetServer,
  testDelivery,
  type testResolver,
  workspaceOn,
} from "./support.ts";

/**
 * docs/api/webhooks.md: in production a webhook may only target public https addresses, checked when
 * the URL is registered and again on the address each attempt connects to (DNS rebinding).
 * Hostnames are resolved by an injected lookup, so no test depends on real DNS. Development
 * (link-local and metadata targets only): ssrf-development.test.ts.
 */

/**
 * A plain HTTP server on 127.0.0.1 and ::1 (same port) that counts TCP connections: a refused
 * target must not even be connected to (an https attempt on it would still open a connection).
 */
async function connectionCounter() {
  let connections = 0;
  const servers: Server[] = [];
  const listen = (host: string, port: number) =>
    new Promise<Server>((resolve, reject) => {
      const server = createServer((_req, res) => res.end("ok"));
      server.on("connection", () => connections++);
      server.once("error", reject);
      server.listen(port, host, () => resolve(server));
    });
  const v4 = await listen("127.0.0.1", 0);
  servers.push(v4);
  const { port } = v4.address() as AddressInfo;
  try {
    servers.push(await listen("::1", port));
  } catch {
    // no IPv6 loopback here: the IPv6 cases still must not connect, they just cannot be counted
  }
  return {
    port,
    ipv6: servers.length === 2,
    get connections() {
      return connections;
    },
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/** URLs production refuses to register, and what the refusal must say. */
const REFUSED: [url: string, why: RegExp][] = [
  ["http://hooks.public.test/hooks", /https/],
  ["ftp://hooks.public.test/hooks", /http or https/],
  ["https://user:pass@hooks.public.test/hooks", /credentials/],
  ["https://localhost/hooks", /localhost/],
  ["https://localhost:8443/hooks", /localhost/],
  ["https://LocalHost./hooks", /localhost/],
  ["https://api.localhost/hooks", /localhost/],
  ["https://127.0.0.1/hooks", /127\.0\.0\.1, a loopback address/],
  ["https://127.0.0.1:8443/hooks", /loopback/],
  ["https://2130706433/hooks", /127\.0\.0\.1, a loopback address/], // 127.0.0.1 as one decimal number
  ["https://0x7f.1/hooks", /loopback/],
  ["https://[::1]/hooks", /::1, a loopback address/],
  ["https://[::ffff:127.0.0.1]/hooks", /loopback/],
  ["https://127.1/hooks", /loopback/],
  ["https://017700000001/hooks", /loopback/], // octal
  ["https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/hooks", /localhost/], // IDNA maps it to localhost
  ["https://[2002:7f00:1::]/hooks", /loopback/], // 6to4 around 127.0.0.1
  ["https://0.0.0.0/hooks", /unspecified/],
  ["https://[::]/hooks", /unspecified/],
  ["https://169.254.169.254/latest/meta-data", /169\.254\.169\.254, a link-local address/],
  ["https://[fe80::1]/hooks", /link-local/],
  ["https://[::ffff:169.254.169.254]/hooks", /link-local/],
  ["https://[64:ff9b::a9fe:a9fe]/hooks", /link-local/], // NAT64 around the metadata address
  [
    "https://[64:ff9b:1::a9fe:a9fe]/hooks",
    /169\.254\.169\.254 in NAT64 local-use form\), a link-local address/,
  ],
  ["https://[2001:0:4136:e378:8000:63bf:5601:5601]/hooks", /169\.254\.169\.254 in Teredo form/], // client address inverted
  ["https://10.0.0.1/hooks", /10\.0\.0\.1, a private address/],
  ["https://172.16.5.4/hooks", /private/],
  ["https://192.168.1.1/hooks", /192\.168\.1\.1, a private address/],
  ["https://[fd00:ec2::254]/hooks", /fd00:ec2::254, a cloud metadata address/],
  ["https://[fd00::1]/hooks", /private/],
  ["https://100.64.0.1/hooks", /carrier-grade NAT/],
  ["https://internal.test/hooks", /resolves to 10\.1\.2\.3, a private address/],
  ["https://metadata.test/hooks", /resolves to 169\.254\.169\.254, a link-local address/],
  ["https://v6-private.test/hooks", /resolves to fd00:ec2::254, a cloud metadata address/],
  ["https://alibaba-metadata.test/hooks", /resolves to 100\.100\.100\.200, a cloud metadata address/],
  ["https://mixed.test/hooks", /resolves to 10\.9\.8\.7, a private address/],
  ["https://nowhere.test/hooks", /nowhere\.test could not be resolved/],
  ["https://empty.test/hooks", /empty\.test could not be resolved/],
];

for (const stack of stacks()) {
  describe(`webhook targets in production [${stack}]`, () => {
    let running: RunningServer;
    let drop: (() => Promise<void>) | undefined;
    let resolver: ReturnType<typeof testResolver>;
    let counter: Awaited<ReturnType<typeof connectionCounter>>;
    let api: Api;
    let workspaceId: string;

    beforeAll(async () => {
      counter = await connectionCounter();
      ({ running, resolver, drop } = await startTargetServer(stack, {
        KONTOR_ENV: "production",
        KONTOR_SECRET_KEY: "webhook-ssrf-test-secret-key-0123456789abcdef",
      }));
      ({ api, workspaceId } = await tenant());
    });

    afterAll(async () => {
      await running?.close();
      await counter?.close();
      await drop?.();
    });

    /** A new workspace on this suite's server, with a key holding every scope. */
    const tenant = () => workspaceOn(running, "SSRF");

    const endpointRows = (id: string) =>
      running.db.prisma.webhookEndpoint.findMany({ where: { workspaceId: id } });

    async function createPublic(path: string) {
      const res = await api.post("/webhook-endpoints", {
        url: `https://hooks.public.test${path}`,
        events: ["lead.created"],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body;
    }

    function expectRefusedAtSend(delivery: any, lastError = "address_not_allowed") {
      // One attempt and the one retry of the schedule, both refused before connecting.
      expect(delivery).toMatchObject({
        object: "webhook_delivery",
        event_type: "webhook.test",
        status: "failed",
        attempts: 2,
        last_error: lastError,
        response_status: null,
        response_body: null,
        delivered_at: null,
        next_attempt_at: null,
      });
    }

    describe("registering", () => {
      it("refuses every non-public or non-https target with validation_failed on url, saying why, and writes nothing", async () => {
        const own = await tenant();
        for (const [url, why] of REFUSED) {
          const res = await own.api.post("/webhook-endpoints", {
            url,
            events: ["*"],
            description: "must not be stored",
          });
          expectRefused(res, why);
        }
        expect((await own.api.get("/webhook-endpoints")).body.data).toEqual([]);
        expect(await endpointRows(own.workspaceId)).toEqual([]);
        // Registration resolved the names it had to, and never resolved a literal address.
        expect(resolver.calls("internal.test")).toBeGreaterThanOrEqual(1);
        expect(resolver.calls("nowhere.test")).toBeGreaterThanOrEqual(1);
        expect(resolver.calls("127.0.0.1")).toBe(0);
      });

      it("accepts https to a hostname that resolves to a public address, and a public address literal", async () => {
        const before = resolver.calls("hooks.public.test");
        const res = await api.post("/webhook-endpoints", {
          url: "https://hooks.public.test/hooks/kontor?x=1",
          events: ["*"],
        });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body).toMatchObject({
          object: "webhook_endpoint",
          url: "https://hooks.public.test/hooks/kontor?x=1",
          status: "active",
        });
        expect(res.body.secret).toMatch(/^whsec_/);
        expect(resolver.calls("hooks.public.test")).toBe(before + 1);
        expect((await api.get(`/webhook-endpoints/${res.body.id}`)).body.url).toBe(
          "https://hooks.public.test/hooks/kontor?x=1",
        );

        const literal = await api.post("/webhook-endpoints", {
          url: `https://${PUBLIC_ADDRESS}:8443/in`,
          events: ["lead.created"],
        });
        expect(literal.status, JSON.stringify(literal.body)).toBe(201);
        // Neither is sent anything here: this workspace causes no events.
        for (const id of [res.body.id, literal.body.id])
          expect(await api.delete(`/webhook-endpoints/${id}`)).toMatchObject({ status: 200 });
      });

      it("refuses a PATCH to such a url the same way and leaves the endpoint as it was", async () => {
        const endpoint = await createPublic("/patch-me");
        const { secret: _, ...stored } = endpoint;
        const cases = REFUSED.filter(([url]) =>
          [
            "http://",
            "ftp://",
            "https://localhost/",
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://169.254",
            "https://[64:ff9b:1::",
            "https://10.0",
            "https://192.168",
            "https://internal.test",
            "https://nowhere.test",
          ].some((p) => url.startsWith(p)),
        );
        expect(cases.length).toBeGreaterThanOrEqual(10);
        for (const [url, why] of cases) {
          expectRefused(
            await api.patch(`/webhook-endpoints/${endpoint.id}`, {
              url,
              description: "changed",
              events: ["*"],
            }),
            why,
          );
        }
        expect((await api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(stored);
        const row = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
        expect(row).toMatchObject({
          url: "https://hooks.public.test/patch-me",
          description: null,
          events: ["lead.created"],
        });

        // A public url is still accepted by PATCH.
        const moved = await api.patch(`/webhook-endpoints/${endpoint.id}`, {
          url: "https://hooks.public.test/moved",
        });
        expect(moved.status, JSON.stringify(moved.body)).toBe(200);
        expect(moved.body.url).toBe("https://hooks.public.test/moved");
      });
    });

    describe("trusted ID-JAG providers", () => {
      it("refuses an issuer or JWKS URL on loopback or a NAT64 form of the metadata address, and writes nothing", async () => {
        const own = await tenant();
        const cases: [body: Record<string, string>, param: string, why: RegExp][] = [
          [
            { issuer: "http://localhost:9/idp", jwks_url: "https://hooks.public.test/jwks" },
            "issuer",
            /must use https/,
          ],
          [
            { issuer: "https://127.0.0.2/idp", jwks_url: "https://hooks.public.test/jwks" },
            "issuer",
            /127\.0\.0\.2, a loopback address/,
          ],
          [
            { issuer: "https://hooks.public.test/idp", jwks_url: "https://[64:ff9b:1::a9fe:a9fe]/jwks" },
            "jwks_url",
            /NAT64 local-use form\), a link-local address/,
          ],
          [
            { issuer: "https://hooks.public.test/idp", jwks_url: "https://internal.test/jwks" },
            "jwks_url",
            /resolves to 10\.1\.2\.3, a private address/,
          ],
        ];
        for (const [body, param, why] of cases)
          expectRefused(await own.api.post("/trusted-providers", body), why, param);
        expect(
          await running.db.prisma.trustedProvider.count({ where: { workspaceId: own.workspaceId } }),
        ).toBe(0);
      });
    });

    describe("sending: the connected address is checked again", () => {
      it.each(Object.keys(REBOUND))(
        "%s: public when registered, internal when sent: never connected, address_not_allowed, then failed",
        async (host) => {
          const before = counter.connections;
          const url = `https://${host}:${counter.port}/rebind`;
          const created = await api.post("/webhook-endpoints", { url, events: ["lead.created"] });
          expect(created.status, JSON.stringify(created.body)).toBe(201);
          expect(resolver.calls(host)).toBe(1);

          const delivery = await testDelivery(api, created.body.id);
          expectRefusedAtSend(delivery);
          // Each attempt resolved the name again and refused what it got.
          expect(resolver.calls(host)).toBeGreaterThanOrEqual(3);
          expect(counter.connections).toBe(before);
          await api.delete(`/webhook-endpoints/${created.body.id}`);
        },
      );

      it("refuses an endpoint row written past the API (https://127.0.0.1, localhost, ::1, mapped, 0.0.0.0, http)", async () => {
        // A legitimately created endpoint lends its sealed secret to the rows written directly.
        const donor = await createPublic("/donor");
        const { secretSealed } = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({
          where: { id: donor.id },
        });
        const port = counter.port;
        const targets: [url: string, lastError: string][] = [
          [`https://127.0.0.1:${port}/direct`, "address_not_allowed"],
          [`https://2130706433:${port}/direct`, "address_not_allowed"],
          [`https://localhost:${port}/direct`, "address_not_allowed"],
          [`https://[::1]:${port}/direct`, "address_not_allowed"],
          [`https://[::ffff:127.0.0.1]:${port}/direct`, "address_not_allowed"],
          [`https://0.0.0.0:${port}/direct`, "address_not_allowed"],
          // http is refused in production before any address is looked at.
          [`http://127.0.0.1:${port}/direct`, "invalid_url"],
        ];
        const before = counter.connections;
        const results = await Promise.all(
          targets.map(async ([url, lastError]) => {
            const row = await running.db.prisma.webhookEndpoint.create({
              data: { id: newId("webhookEndpoint"), workspaceId, url, events: ["*"], secretSealed },
            });
            return { url, lastError, delivery: await testDelivery(api, row.id) };
          }),
        );
        for (const { url, lastError, delivery } of results) {
          expect(delivery.status, url).toBe("failed");
          expectRefusedAtSend(delivery, lastError);
        }
        expect(counter.connections).toBe(before);
      });

      it("the connection counter does count a connection (control: a plain TCP client)", async () => {
        const before = counter.connections;
        const res = await fetch(`http://127.0.0.1:${counter.port}/control`);
        expect(await res.text()).toBe("ok");
        if (counter.ipv6) expect((await fetch(`http://[::1]:${counter.port}/control`)).status).toBe(200);
        expect(counter.connections).toBe(before + (counter.ipv6 ? 2 : 1));
      });
    });
  });
}
