import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../../schema/lib/ids.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { startServer, type RunningServer } from "../../../server/runtime/server.ts";
import type { LookupAll } from "../../../server/webhooks/url-policy.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { rest, type ApiResponse } from "../../support/http.ts";
import { eventually, startReceiver, type Receiver } from "../../support/receiver.ts";
import { provisionStack } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { e2e } from "../../support/suite.ts";

/**
 * docs/api/webhooks.md: in production a webhook may only target public https addresses, checked when
 * the URL is registered and again on the address each attempt connects to (DNS rebinding).
 * Hostnames are resolved by an injected lookup, so no test depends on real DNS.
 */

const PUBLIC_ADDRESS = "93.184.215.14";

/** Addresses of hostnames that resolve one way when registered and another when sent to. */
const REBOUND: Record<string, { address: string; family: number }> = {
  "rebind.test": { address: "127.0.0.1", family: 4 },
  "rebind-v6.test": { address: "::1", family: 6 },
  "rebind-mapped.test": { address: "::ffff:127.0.0.1", family: 6 },
  "rebind-private.test": { address: "10.1.2.3", family: 4 },
  "rebind-metadata.test": { address: "169.254.169.254", family: 4 },
};

/** A resolver for test hostnames; every call is recorded. */
function testResolver() {
  const calls: string[] = [];
  const lookup: LookupAll = async (hostname) => {
    const name = hostname.toLowerCase();
    calls.push(name);
    if (name === "hooks.public.test") return [{ address: PUBLIC_ADDRESS, family: 4 }];
    if (name === "internal.test") return [{ address: "10.1.2.3", family: 4 }];
    if (name === "metadata.test") return [{ address: "169.254.169.254", family: 4 }];
    if (name === "alibaba-metadata.test") return [{ address: "100.100.100.200", family: 4 }];
    if (name === "v6-private.test") return [{ address: "fd00:ec2::254", family: 6 }];
    // One public address and one private: the host is refused as a whole.
    if (name === "mixed.test") return [{ address: PUBLIC_ADDRESS, family: 4 }, { address: "10.9.8.7", family: 4 }];
    if (name === "empty.test") return [];
    const rebound = REBOUND[name];
    if (rebound) {
      // Public on the first call (registration), the internal address on every later one (sending).
      return calls.filter((c) => c === name).length === 1 ? [{ address: PUBLIC_ADDRESS, family: 4 }] : [rebound];
    }
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND", syscall: "getaddrinfo", hostname });
  };
  return { lookup, calls: (name: string) => calls.filter((c) => c === name).length };
}

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

function expectRefused(res: ApiResponse, message: RegExp, param = "url") {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
  expect(res.body.error.message).toMatch(message);
  expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
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
  ["https://[64:ff9b:1::a9fe:a9fe]/hooks", /169\.254\.169\.254 in NAT64 local-use form\), a link-local address/],
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
    let api: ReturnType<typeof rest>;
    let workspaceId: string;

    beforeAll(async () => {
      const scratch = await provisionStack(stack);
      drop = scratch.drop;
      resolver = testResolver();
      counter = await connectionCounter();
      const config = loadConfig({
        ...scratch.env,
        PORT: "0",
        KONTOR_ENV: "production",
        KONTOR_SECRET_KEY: "webhook-ssrf-test-secret-key-0123456789abcdef",
        KONTOR_WEBHOOK_TIMEOUT_MS: "1000",
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms",
      });
      running = await startServer(config, { publicUrlFromPort: true, webhooks: { lookup: resolver.lookup } });
      ({ api, workspaceId } = await tenant());
    });

    afterAll(async () => {
      await running?.close();
      await counter?.close();
      await drop?.();
    });

    async function tenant() {
      const workspace = await createWorkspace(running.db.prisma, {
        name: `SSRF ${randomBytes(3).toString("hex")}`,
        plan: "pro",
        ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      const { key } = await createApiKey(running.db.prisma, { workspaceId: workspace.workspace_id, scopes: [...SCOPES] });
      return { api: rest(`${running.url}/v1`, key), workspaceId: workspace.workspace_id };
    }

    const endpointRows = (id: string) => running.db.prisma.webhookEndpoint.findMany({ where: { workspaceId: id } });

    async function createPublic(path: string) {
      const res = await api.post("/webhook-endpoints", { url: `https://hooks.public.test${path}`, events: ["lead.created"] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body;
    }

    /** Sends a webhook.test event to the endpoint and waits until its delivery has no attempt left. */
    async function testDelivery(endpointId: string) {
      const started = await api.post(`/webhook-endpoints/${endpointId}/test`);
      expect(started.status, JSON.stringify(started.body)).toBe(201);
      const delivery = await eventually(
        async () => (await api.get(`/webhook-deliveries/${started.body.id}`)).body,
        (d) => d.status === "failed" || d.status === "succeeded",
      );
      return delivery;
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
          const res = await own.api.post("/webhook-endpoints", { url, events: ["*"], description: "must not be stored" });
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
        const res = await api.post("/webhook-endpoints", { url: "https://hooks.public.test/hooks/kontor?x=1", events: ["*"] });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body).toMatchObject({ object: "webhook_endpoint", url: "https://hooks.public.test/hooks/kontor?x=1", status: "active" });
        expect(res.body.secret).toMatch(/^whsec_/);
        expect(resolver.calls("hooks.public.test")).toBe(before + 1);
        expect((await api.get(`/webhook-endpoints/${res.body.id}`)).body.url).toBe("https://hooks.public.test/hooks/kontor?x=1");

        const literal = await api.post("/webhook-endpoints", { url: `https://${PUBLIC_ADDRESS}:8443/in`, events: ["lead.created"] });
        expect(literal.status, JSON.stringify(literal.body)).toBe(201);
        // Neither is sent anything here: this workspace causes no events.
        for (const id of [res.body.id, literal.body.id]) expect(await api.delete(`/webhook-endpoints/${id}`)).toMatchObject({ status: 200 });
      });

      it("refuses a PATCH to such a url the same way and leaves the endpoint as it was", async () => {
        const endpoint = await createPublic("/patch-me");
        const { secret: _, ...stored } = endpoint;
        const cases = REFUSED.filter(([url]) =>
          ["http://", "ftp://", "https://localhost/", "https://127.0.0.1/", "https://[::1]/", "https://169.254", "https://[64:ff9b:1::", "https://10.0", "https://192.168", "https://internal.test", "https://nowhere.test"].some((p) => url.startsWith(p)),
        );
        expect(cases.length).toBeGreaterThanOrEqual(10);
        for (const [url, why] of cases) {
          expectRefused(await api.patch(`/webhook-endpoints/${endpoint.id}`, { url, description: "changed", events: ["*"] }), why);
        }
        expect((await api.get(`/webhook-endpoints/${endpoint.id}`)).body).toEqual(stored);
        const row = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpoint.id } });
        expect(row).toMatchObject({ url: "https://hooks.public.test/patch-me", description: null, events: ["lead.created"] });

        // A public url is still accepted by PATCH.
        const moved = await api.patch(`/webhook-endpoints/${endpoint.id}`, { url: "https://hooks.public.test/moved" });
        expect(moved.status, JSON.stringify(moved.body)).toBe(200);
        expect(moved.body.url).toBe("https://hooks.public.test/moved");
      });
    });

    describe("trusted ID-JAG providers", () => {
      it("refuses an issuer or JWKS URL on loopback or a NAT64 form of the metadata address, and writes nothing", async () => {
        const own = await tenant();
        const cases: [body: Record<string, string>, param: string, why: RegExp][] = [
          [{ issuer: "http://localhost:9/idp", jwks_url: "https://hooks.public.test/jwks" }, "issuer", /must use https/],
          [{ issuer: "https://127.0.0.2/idp", jwks_url: "https://hooks.public.test/jwks" }, "issuer", /127\.0\.0\.2, a loopback address/],
          [{ issuer: "https://hooks.public.test/idp", jwks_url: "https://[64:ff9b:1::a9fe:a9fe]/jwks" }, "jwks_url", /NAT64 local-use form\), a link-local address/],
          [{ issuer: "https://hooks.public.test/idp", jwks_url: "https://internal.test/jwks" }, "jwks_url", /resolves to 10\.1\.2\.3, a private address/],
        ];
        for (const [body, param, why] of cases) expectRefused(await own.api.post("/trusted-providers", body), why, param);
        expect(await running.db.prisma.trustedProvider.count({ where: { workspaceId: own.workspaceId } })).toBe(0);
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

          const delivery = await testDelivery(created.body.id);
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
        const { secretSealed } = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: donor.id } });
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
            return { url, lastError, delivery: await testDelivery(row.id) };
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

/** Refused in development too: link-local and cloud metadata addresses, literal or resolved. */
const NEVER_ALLOWED: [url: string, why: RegExp][] = [
  ["http://169.254.169.254/latest/meta-data/", /169\.254\.169\.254, a link-local address, which is never allowed/],
  ["http://169.254.10.20:8080/hooks", /link-local/],
  ["http://[fe80::1]/hooks", /fe80::1, a link-local address/],
  ["http://[::ffff:169.254.169.254]/hooks", /link-local/],
  // NAT64 local-use (RFC 8215): private as a prefix, but what it carries decides.
  ["http://[64:ff9b:1::a9fe:a9fe]/", /64:ff9b:1::a9fe:a9fe \(169\.254\.169\.254 in NAT64 local-use form\), a link-local address, which is never allowed/],
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
    let api: ReturnType<typeof rest>;
    let workspaceId: string;

    beforeAll(async () => {
      const scratch = await provisionStack(stack);
      drop = scratch.drop;
      resolver = testResolver();
      receiver = await startReceiver();
      const config = loadConfig({
        ...scratch.env,
        PORT: "0",
        KONTOR_ENV: "development",
        KONTOR_WEBHOOK_TIMEOUT_MS: "1000",
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms",
      });
      running = await startServer(config, { publicUrlFromPort: true, webhooks: { lookup: resolver.lookup } });
      const workspace = await createWorkspace(running.db.prisma, {
        name: `Metadata ${randomBytes(3).toString("hex")}`,
        plan: "pro",
        ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
        ownerPassword: "correct horse battery staple",
      });
      workspaceId = workspace.workspace_id;
      const { key } = await createApiKey(running.db.prisma, { workspaceId, scopes: [...SCOPES] });
      api = rest(`${running.url}/v1`, key);
    });

    afterAll(async () => {
      await running?.close();
      await receiver?.close();
      await drop?.();
    });

    async function finished(deliveryId: string) {
      return eventually(
        async () => (await api.get(`/webhook-deliveries/${deliveryId}`)).body,
        (d) => d.status === "failed" || d.status === "succeeded",
      );
    }

    it("refuses them at creation with validation_failed on url and stores nothing", async () => {
      for (const [url, why] of NEVER_ALLOWED) expectRefused(await api.post("/webhook-endpoints", { url, events: ["*"] }), why);
      expect((await api.get("/webhook-endpoints")).body.data).toEqual([]);
      expect(await running.db.prisma.webhookEndpoint.count({ where: { workspaceId } })).toBe(0);
      expect(resolver.calls("metadata.test")).toBeGreaterThanOrEqual(1);
    });

    it("still takes loopback, private and not-yet-resolvable targets", async () => {
      for (const url of [receiver.url("/dev-ok"), "http://internal.test/hooks", "http://[::1]:9/hooks", "http://nowhere.test/hooks"]) {
        const created = await api.post("/webhook-endpoints", { url, events: ["lead.created"] });
        expect(created.status, `${url}: ${JSON.stringify(created.body)}`).toBe(201);
        expect((await api.delete(`/webhook-endpoints/${created.body.id}`)).status).toBe(200);
      }
    });

    it("refuses them in a PATCH and leaves the endpoint as it was", async () => {
      const created = await api.post("/webhook-endpoints", { url: receiver.url("/patched"), events: ["lead.created"] });
      expect(created.status).toBe(201);
      const { secret: _, ...stored } = created.body;
      for (const [url, why] of NEVER_ALLOWED) expectRefused(await api.patch(`/webhook-endpoints/${created.body.id}`, { url, description: "moved" }), why);
      expect((await api.get(`/webhook-endpoints/${created.body.id}`)).body).toEqual(stored);
      await api.delete(`/webhook-endpoints/${created.body.id}`);
    });

    it("refuses a trusted provider at http://127.0.0.2/ or a NAT64 form of the metadata address, and writes nothing", async () => {
      const cases: [body: Record<string, string>, param: string, why: RegExp][] = [
        [{ issuer: "http://127.0.0.2/", jwks_url: "http://127.0.0.1:9/jwks" }, "issuer", /^issuer must use https \(http is accepted only for localhost, 127\.0\.0\.1 or \[::1\]/],
        [{ issuer: "http://127.0.0.1:9/idp", jwks_url: "http://127.0.0.2/" }, "jwks_url", /^jwks_url must use https/],
        [{ issuer: "http://[::ffff:127.0.0.1]/", jwks_url: "http://127.0.0.1:9/jwks" }, "issuer", /must use https/],
        [{ issuer: "https://[64:ff9b:1::a9fe:a9fe]/", jwks_url: "http://127.0.0.1:9/jwks" }, "issuer", /^issuer points to 64:ff9b:1::a9fe:a9fe .*link-local address, which is never allowed/],
        [{ issuer: "http://127.0.0.1:9/idp", jwks_url: "https://metadata.test/jwks" }, "jwks_url", /resolves to 169\.254\.169\.254, a link-local address/],
      ];
      for (const [body, param, why] of cases) expectRefused(await api.post("/trusted-providers", body), why, param);
      expect(await running.db.prisma.trustedProvider.count({ where: { workspaceId } })).toBe(0);
      // The exact loopback hosts over http are still taken (nothing is fetched until an ID-JAG arrives).
      const taken = await api.post("/trusted-providers", { issuer: "http://127.0.0.1:9/idp", jwks_url: "http://[::1]:9/jwks" });
      expect(taken.status, JSON.stringify(taken.body)).toBe(201);
      expect((await api.delete(`/trusted-providers/${taken.body.id}`)).status).toBe(200);
    });

    it("refuses them at send, before connecting: rows written past the API, and a name that resolves there only later", async () => {
      const donor = await api.post("/webhook-endpoints", { url: receiver.url("/donor"), events: ["lead.created"] });
      const { secretSealed } = await running.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: donor.body.id } });
      const rows = [];
      for (const url of ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://100.100.100.200/", "http://metadata.test/"]) {
        rows.push(await running.db.prisma.webhookEndpoint.create({ data: { id: newId("webhookEndpoint"), workspaceId, url, events: ["*"], secretSealed } }));
      }
      const rebound = await api.post("/webhook-endpoints", { url: "http://rebind-metadata.test/hooks", events: ["lead.created"] });
      expect(rebound.status, JSON.stringify(rebound.body)).toBe(201);
      for (const id of [...rows.map((row) => row.id), rebound.body.id]) {
        const started = await api.post(`/webhook-endpoints/${id}/test`);
        expect(started.status, JSON.stringify(started.body)).toBe(201);
        const delivery = await finished(started.body.id);
        expect(delivery, id).toMatchObject({ status: "failed", attempts: 2, last_error: "address_not_allowed", response_status: null, response_body: null });
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
    const tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    const path = `/${stack}/dev-loopback`;
    const created = await api.post("/webhook-endpoints", { url: receiver.url(path), events: ["lead.created"] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.url).toBe(receiver.url(path));

    const lead = await api.post("/leads", { first_name: "Local" });
    expect(lead.status).toBe(201);
    const [request] = await receiver.waitFor(path, 1);
    expect(request!.json).toMatchObject({ type: "lead.created", data: { object: { id: lead.body.id } } });
  });

  it("still refuses ftp:// and other non-http schemes", async () => {
    const tenant = await server().tenant();
    const api = rest(server().api, tenant.key);
    for (const url of ["ftp://127.0.0.1/hooks", "file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "javascript:alert(1)"]) {
      expectRefused(await api.post("/webhook-endpoints", { url, events: ["*"] }), /http or https/);
    }
    expectRefused(await api.post("/webhook-endpoints", { url: "not a url", events: ["*"] }), /absolute http or https URL/);
    expect((await api.get("/webhook-endpoints")).body.data).toEqual([]);
  });
});
