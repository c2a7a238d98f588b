import { createHmac, randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { maxTextLength } from "../../../schema/lib/limits.ts";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { createApiKey } from "../../../server/auth/api-keys.ts";
import { loadConfig } from "../../../server/runtime/config.ts";
import { type RunningServer, startServer } from "../../../server/runtime/server.ts";
import type { LookupAll } from "../../../server/webhooks/url-policy.ts";
import { type ApiResponse, rest } from "../../support/http.ts";
import { eventually, type Received, type Receiver, startReceiver } from "../../support/receiver.ts";
import { provisionStack, type Tenant, type TestServer } from "../../support/server.ts";
import type { Stack } from "../../support/stacks.ts";
import type { Api } from "../../support/workspace.ts";

/**
 * Shared by the webhook suites of this folder. The endpoint and delivery suites (endpoints,
 * scopes-and-graphql, delivery, retries-and-replay) run against a loopback receiver through the
 * production code path, with a short retry schedule and timeout set through the server's
 * configuration (ENV). The catalog suites (catalog, catalog-failed-writes) share their harness.
 */

export const RETRY_SCHEDULE_MS = [300, 600];
/**
 * The attempt time-out of the suites that count deliveries: long enough that a loaded machine
 * (an embedded server shares its process with PGlite) never times out an answered attempt and
 * sends it again.
 */
export const TIMEOUT_MS = 5000;
export const ENV = {
  KONTOR_WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE_MS.map((ms) => `${ms}ms`).join(","),
  KONTOR_WEBHOOK_JITTER: "0",
  KONTOR_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
};
/** The short time-out of the suite whose subject is time-outs (retries-and-replay). */
export const SHORT_TIMEOUT_MS = 1000;
export const SHORT_TIMEOUT_ENV = { ...ENV, KONTOR_WEBHOOK_TIMEOUT_MS: String(SHORT_TIMEOUT_MS) };
/** Longer than the embedded worker's poll (500 ms) plus an attempt: what did not arrive by then is not coming. */
export const QUIET_MS = 1500;

export const ULID = "[0-9A-HJKMNP-TV-Z]{26}";
export { ISO } from "../../support/assertions.ts";
export const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
export const ENDPOINT_ID = new RegExp(`^we_${ULID}$`);
export const DELIVERY_ID = new RegExp(`^whd_${ULID}$`);
export const EVENT_ID = new RegExp(`^evt_${ULID}$`);
export const NEVER_ENDPOINT = "we_01J00000000000000000000000";
export const NEVER_DELIVERY = "whd_01J00000000000000000000000";
export const NEVER_EVENT = "evt_01J00000000000000000000000";
/** An endpoint's description: long text (docs/api/limits.md), the bound the OpenAPI document states. */
export const DESCRIPTION = maxTextLength("Mutation.createWebhookEndpoint", "description");

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const header = (request: Received, name: string) => {
  const value = request.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(",") : (value ?? "");
};

/** `Kontor-Signature` computed the way a user would: HMAC-SHA256 keyed by the whole secret string. */
export function kontorSignature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

export function standardHeaders(request: Received, body = request.body) {
  return {
    body,
    headers: {
      "webhook-id": header(request, "webhook-id"),
      "webhook-timestamp": header(request, "webhook-timestamp"),
      "webhook-signature": header(request, "webhook-signature"),
    },
  };
}

/** Both signatures of a received request check out with `secret`. */
export function expectSignedWith(request: Received, secret: string) {
  const { body, headers } = standardHeaders(request);
  expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
  expect(header(request, "Kontor-Signature")).toBe(
    kontorSignature(secret, header(request, "Kontor-Timestamp"), request.body),
  );
}

/** Neither signature of a received request checks out with `secret`. */
export function expectNotSignedWith(request: Received, secret: string) {
  const { body, headers } = standardHeaders(request);
  expect(() => new Webhook(secret).verify(body, headers)).toThrow();
  expect(header(request, "Kontor-Signature")).not.toBe(
    kontorSignature(secret, header(request, "Kontor-Timestamp"), request.body),
  );
}

/**
 * The loopback receiver of the endpoint and delivery suites, started by useReceiver() before a
 * file's tests and closed after them. A receiver path of a test is its own (see `at`).
 */
export let receiver: Receiver;

/** Starts `receiver` for this file's suites; after each test it answers every request 200 again. */
export function useReceiver() {
  beforeAll(async () => {
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
  });

  afterEach(() => {
    receiver.answer = () => ({ status: 200 });
  });
}

export interface Workspace extends Tenant {
  api: Api;
}

/** The helpers of an endpoint and delivery suite: `server` and `stack` are the ones e2e(...) hands its body. */
export function webhookHelpers(server: () => TestServer, stack: Stack) {
  /** A receiver path of this stack's test: no other test or stack sees its requests. */
  const at = (name: string) => `/${stack}/${name}`;
  const prisma = () => server().running.db.prisma;

  /** A fresh workspace: its endpoints see only the events the test makes. */
  async function workspace(): Promise<Workspace> {
    const tenant = await server().tenant();
    return { ...tenant, api: rest(server().api, tenant.key) };
  }

  async function createEndpoint(api: Api, body: Record<string, unknown>) {
    const res = await api.post("/webhook-endpoints", body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; secret: string } & Record<string, any>;
  }

  /** An endpoint receiving on the receiver's `path`. */
  const listen = (api: Api, path: string, events: string[] = ["lead.created"]) =>
    createEndpoint(api, { url: receiver.url(path), events });

  async function newLead(
    api: Api,
    body: Record<string, unknown> = { first_name: "Ada", last_name: "Lovelace" },
  ) {
    const res = await api.post("/leads", body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string } & Record<string, any>;
  }

  const deliveriesOf = (endpointId: string) =>
    prisma().webhookDelivery.findMany({ where: { endpointId }, orderBy: { id: "asc" } });

  /** Waits (via the database, to spare the rate limit) until the endpoint has `count` deliveries that all satisfy `done`. */
  async function deliveriesWhen(
    endpointId: string,
    count: number,
    done: (row: Awaited<ReturnType<typeof deliveriesOf>>[number]) => boolean,
  ) {
    const rows = await eventually(
      () => deliveriesOf(endpointId),
      (list) => list.length === count && list.every(done),
    );
    expect(
      rows.map((row) => [row.status, row.attempts]),
      `deliveries of ${endpointId}`,
    ).toHaveLength(count);
    for (const row of rows) expect(done(row), JSON.stringify(row)).toBe(true);
    return rows;
  }

  /** The REST view of a delivery once its row satisfies `done`. */
  async function deliveryWhen(
    api: Api,
    id: string,
    done: (row: { status: string; attempts: number }) => boolean,
  ) {
    const row = await eventually(() => prisma().webhookDelivery.findUniqueOrThrow({ where: { id } }), done);
    expect(done(row), JSON.stringify(row)).toBe(true);
    const res = await api.get(`/webhook-deliveries/${id}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  const finished = (row: { status: string }) => row.status === "succeeded" || row.status === "failed";

  return {
    at,
    prisma,
    workspace,
    createEndpoint,
    listen,
    newLead,
    deliveriesOf,
    deliveriesWhen,
    deliveryWhen,
    finished,
  };
}

// The catalog suites (catalog.test.ts, catalog-failed-writes.test.ts).

export async function ok(res: Promise<ApiResponse>): Promise<any> {
  const done = await res;
  expect(done.status, JSON.stringify(done.body)).toBeLessThan(300);
  return done.body;
}

export const get = async (api: Api, path: string) => ok(api.get(path));

export const newClient = (api: Api) =>
  ok(api.post("/clients", { name: "Ada Industries", email: "billing@ada.example", currency: "EUR" }));

export async function newDoc(api: Api, documentType: "invoice" | "quote" = "invoice") {
  const client = await newClient(api);
  const doc = await ok(
    api.post("/invoices", {
      document_type: documentType,
      client_id: client.id,
      items: [{ description: "Work", quantity: 2, unit_price: 50 }],
    }),
  );
  expect(doc.total).toBe(100);
  return { client, doc };
}

export const sorted = (types: readonly string[]) => [...types].sort();

/**
 * The catalog suites' receiver (started before the suite's tests, closed after them) and the
 * waits on a workspace's events and an endpoint's deliveries. Call it in the body of e2e(...).
 */
export function catalogHarness(server: () => TestServer, stack: Stack) {
  let receiver: Receiver;
  let sequence = 0;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const prisma = () => server().running.db.prisma;

  /** Waits until every event of the workspace has been fanned out to deliveries. */
  async function dispatched(workspaceId: string) {
    const waiting = await eventually(
      () => prisma().event.count({ where: { workspaceId, dispatchedAt: null } }),
      (n) => n === 0,
    );
    expect(waiting, "events not yet fanned out").toBe(0);
  }

  /**
   * Once every event is fanned out and every delivery to the endpoint has succeeded, nothing more
   * can arrive for it: returns what the receiver got, one request per delivery.
   */
  async function settled(workspaceId: string, endpointId: string, path: string) {
    await dispatched(workspaceId);
    const deliveries = await eventually(
      () => prisma().webhookDelivery.findMany({ where: { endpointId }, orderBy: { id: "asc" } }),
      (rows) => rows.every((row) => row.status === "succeeded") && receiver.on(path).length >= rows.length,
    );
    expect(deliveries.map((d) => d.status)).toEqual(deliveries.map(() => "succeeded"));
    const requests = receiver.on(path);
    expect(requests).toHaveLength(deliveries.length);
    expect(sorted(requests.map((r) => r.headers["kontor-delivery"] as string))).toEqual(
      sorted(deliveries.map((d) => d.id)),
    );
    return { deliveries, requests };
  }

  async function endpoint(api: Api, events: string[], name: string) {
    const path = `/${stack}/${++sequence}-${name}`;
    const created = await ok(api.post("/webhook-endpoints", { url: receiver.url(path), events }));
    expect(created).toMatchObject({
      object: "webhook_endpoint",
      events,
      status: "active",
      secret: expect.stringMatching(/^whsec_/),
    });
    return { id: created.id as string, secret: created.secret as string, path };
  }

  return { prisma, dispatched, settled, endpoint };
}

// The webhook target suites (ssrf-production.test.ts, ssrf-development.test.ts): hostnames are
// resolved by an injected lookup, so no test depends on real DNS.

export const PUBLIC_ADDRESS = "93.184.215.14";

/** Addresses of hostnames that resolve one way when registered and another when sent to. */
export const REBOUND: Record<string, { address: string; family: number }> = {
  "rebind.test": { address: "127.0.0.1", family: 4 },
  "rebind-v6.test": { address: "::1", family: 6 },
  "rebind-mapped.test": { address: "::ffff:127.0.0.1", family: 6 },
  "rebind-private.test": { address: "10.1.2.3", family: 4 },
  "rebind-metadata.test": { address: "169.254.169.254", family: 4 },
};

/** A resolver for test hostnames; every call is recorded. */
export function testResolver() {
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
    if (name === "mixed.test")
      return [
        { address: PUBLIC_ADDRESS, family: 4 },
        { address: "10.9.8.7", family: 4 },
      ];
    if (name === "empty.test") return [];
    const rebound = REBOUND[name];
    if (rebound) {
      // Public on the first call (registration), the internal address on every later one (sending).
      return calls.filter((c) => c === name).length === 1
        ? [{ address: PUBLIC_ADDRESS, family: 4 }]
        : [rebound];
    }
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: "ENOTFOUND",
      syscall: "getaddrinfo",
      hostname,
    });
  };
  return { lookup, calls: (name: string) => calls.filter((c) => c === name).length };
}

/** A target suite's server on a scratch database (`drop` removes it), its hostnames resolved by `resolver`, a testResolver(). */
export async function startTargetServer(stack: Stack, env: NodeJS.ProcessEnv) {
  const scratch = await provisionStack(stack);
  const resolver = testResolver();
  try {
    const config = loadConfig({
      ...scratch.env,
      PORT: "0",
      KONTOR_WEBHOOK_TIMEOUT_MS: "1000",
      KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms",
      ...env,
    });
    const running = await startServer(config, {
      publicUrlFromPort: true,
      webhooks: { lookup: resolver.lookup },
    });
    return { running, resolver, drop: scratch.drop };
  } catch (error) {
    await scratch.drop();
    throw error;
  }
}

/** A new workspace on `running` named `name` (and a random suffix), with a key holding every scope: its id and a REST client. */
export async function workspaceOn(running: RunningServer, name: string) {
  const workspace = await createWorkspace(running.db.prisma, {
    name: `${name} ${randomBytes(3).toString("hex")}`,
    plan: "pro",
    ownerEmail: `owner-${randomBytes(4).toString("hex")}@example.com`,
    ownerPassword: "correct horse battery staple",
  });
  const workspaceId = workspace.workspace_id;
  const { key } = await createApiKey(running.db.prisma, { workspaceId, scopes: [...SCOPES] });
  return { api: rest(`${running.url}/v1`, key), workspaceId };
}

/** Sends a webhook.test event to the endpoint and waits until its delivery has no attempt left: the delivery as GET returns it. */
export async function testDelivery(api: Api, endpointId: string) {
  const started = await api.post(`/webhook-endpoints/${endpointId}/test`);
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  return eventually(
    async () => (await api.get(`/webhook-deliveries/${started.body.id}`)).body,
    (d) => d.status === "failed" || d.status === "succeeded",
  );
}

export function expectRefused(res: ApiResponse, message: RegExp, param = "url") {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
  expect(res.body.error.message).toMatch(message);
  expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
}
