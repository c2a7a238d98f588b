/** Idempotency on a running server, over REST and GraphQL; the stores themselves and two server processes: idempotency-stores.test.ts. */
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { flushRequestLogs } from "../../../server/observability/request-log.ts";
import { CLAIM_TTL_MS, IDEMPOTENCY_TTL_MS } from "../../../server/policies/idempotency.ts";
import { idempotencyRedisKey } from "../../../server/policies/idempotency-store.ts";
import { redisNamespace } from "../../../server/runtime/redis.ts";
import { type ApiResponse, call, rest } from "../../support/http.ts";
import { expectError, newClient, stored } from "../../support/invoicing.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { idempotentPost, isReplay, newKey } from "./support.ts";

const ITEMS = [{ description: "Work", quantity: 1, unit_price: 100 }];
const CREATE_LEAD = `mutation { createLead(first_name: "Grace", stage: qualified) { id first_name } }`;

async function graphqlPost(
  url: string,
  apiKey: string,
  query: string,
  idempotencyKey: string,
): Promise<ApiResponse> {
  return call("POST", `${url}/graphql`, {
    key: apiKey,
    body: { query },
    headers: { "Idempotency-Key": idempotencyKey },
  });
}

/** Sends header bytes fetch refuses to send (control characters, raw UTF-8); returns status line and text. */
function rawPost(
  url: string,
  path: string,
  apiKey: string,
  keyBytes: Buffer,
): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ first_name: "Raw" });
  const head = Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\nConnection: close\r\nIdempotency-Key: `,
  );
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text });
    });
    socket.write(Buffer.concat([head, keyBytes, Buffer.from(`\r\n\r\n${body}`)]));
  });
}

e2e("idempotency", (server, stack) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  const post = (path: string, body: unknown, idempotencyKey: string, apiKey = tenant.key) =>
    idempotentPost(server().api, apiKey, path, body, idempotencyKey);
  const leadCount = () =>
    server().running.db.prisma.lead.count({ where: { workspaceId: tenant.workspaceId } });
  const invoiceCount = () =>
    server().running.db.prisma.invoice.count({ where: { workspaceId: tenant.workspaceId } });

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  describe("replay", () => {
    it("replays a REST lead creation: same status, body and content type, nothing written", async () => {
      const key = newKey();
      const first = await post("/leads", { first_name: "Ada", stage: "qualified" }, key);
      expect(first.status).toBe(201);
      expect(isReplay(first)).toBe(false);
      const leads = await leadCount();
      const events = await server().running.db.prisma.event.count({
        where: { workspaceId: tenant.workspaceId },
      });

      const again = await post("/leads", { first_name: "Ada", stage: "qualified" }, key);
      expect(again.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.body.id).toMatch(/^lead_/);
      expect(again.headers.get("idempotent-replay")).toBe("true");
      expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
      expect(again.headers.get("x-request-id")).toMatch(/^req_/);
      expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
      expect(await leadCount()).toBe(leads);
      expect(
        await server().running.db.prisma.event.count({ where: { workspaceId: tenant.workspaceId } }),
      ).toBe(events);
    });

    it("replays an invoice creation without touching invoices, sequences or events", async () => {
      const clientId = await newClient(api);
      const key = newKey();
      const first = await post("/invoices", { client_id: clientId, items: ITEMS }, key);
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      const before = await stored(server(), tenant.workspaceId);

      const again = await post("/invoices", { client_id: clientId, items: ITEMS }, key);
      expect(again.status).toBe(201);
      expect(isReplay(again)).toBe(true);
      expect(again.body).toEqual(first.body);
      expect(again.body.invoice_number).toBe(first.body.invoice_number);
      expect(await stored(server(), tenant.workspaceId)).toEqual(before);
    });

    it("a GraphQL query sent with a key runs each time, records nothing and leaves the key free for a write", async () => {
      const key = `query-${Date.now()}`;
      const query = "{ leads(limit: 1) { data { id } } }";
      for (let i = 0; i < 2; i++) {
        const res = await graphqlPost(server().url, tenant.key, query, key);
        expect(res.status).toBe(200);
        expect(res.headers.get("idempotent-replay")).toBeNull();
      }
      const named = await call("POST", `${server().url}/graphql`, {
        key: tenant.key,
        body: {
          query: `query Q { workspace { id } } mutation M { createLead(first_name: "Not this") { id } }`,
          operationName: "Q",
        },
        headers: { "Idempotency-Key": key },
      });
      expect(named.status).toBe(200);
      const write = await graphqlPost(server().url, tenant.key, CREATE_LEAD, key);
      expect(write.status).toBe(200);
      expect(write.headers.get("idempotent-replay")).toBeNull();
      const replay = await graphqlPost(server().url, tenant.key, CREATE_LEAD, key);
      expect(replay.headers.get("idempotent-replay")).toBe("true");
      expect(replay.body).toEqual(write.body);
    });

    it("replays a GraphQL mutation", async () => {
      const key = newKey();
      const first = await graphqlPost(server().url, tenant.key, CREATE_LEAD, key);
      expect(first.status).toBe(200);
      expect(first.body.data.createLead.id).toMatch(/^lead_/);
      const leads = await leadCount();

      const again = await graphqlPost(server().url, tenant.key, CREATE_LEAD, key);
      expect(again.status).toBe(200);
      expect(isReplay(again)).toBe(true);
      expect(again.body).toEqual(first.body);
      expect(await leadCount()).toBe(leads);
    });

    it("does nothing to a POST without the header", async () => {
      const leads = await leadCount();
      const a = await api.post("/leads", { first_name: "Twice" });
      const b = await api.post("/leads", { first_name: "Twice" });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(a.body.id).not.toBe(b.body.id);
      expect(isReplay(b)).toBe(false);
      expect(await leadCount()).toBe(leads + 2);
    });
  });

  describe("conflict", () => {
    it("answers 409 idempotency_conflict to another body, path or interface, and still replays the original", async () => {
      const key = newKey();
      const first = await post("/leads", { first_name: "Alan" }, key);
      expect(first.status).toBe(201);
      const leads = await leadCount();

      for (const res of [
        await post("/leads", { first_name: "Alan", stage: "won" }, key),
        await post("/clients", { first_name: "Alan" }, key),
        await graphqlPost(server().url, tenant.key, CREATE_LEAD, key),
      ]) {
        expect(res.status, JSON.stringify(res.body)).toBe(409);
        const error = res.body.error ?? res.body.errors[0].extensions;
        expect(error).toMatchObject({
          type: "idempotency_error",
          code: "idempotency_conflict",
          request_id: res.headers.get("x-request-id"),
        });
      }
      expect(await leadCount()).toBe(leads);
      const again = await post("/leads", { first_name: "Alan" }, key);
      expect(isReplay(again)).toBe(true);
      expect(again.body).toEqual(first.body);
    });
  });

  describe("in progress", () => {
    it("answers 409 idempotency_in_progress while the first request still runs (held by a table lock)", async () => {
      const prisma = server().running.db.prisma;
      await api.get("/workspace"); // caches the key, so authentication needs no query while the lock is held
      const leads = await leadCount();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
        setTimeout(resolve, 15_000); // fail rather than hang if something else waits on the lock
      });
      let locked!: () => void;
      const lockTaken = new Promise<void>((resolve) => (locked = resolve));
      const lock = prisma.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe("lock table leads in share row exclusive mode");
          locked();
          await gate;
        },
        { timeout: 30_000, maxWait: 10_000 },
      );
      await lockTaken;

      const key = newKey();
      const requests = [
        post("/leads", { first_name: "Slow" }, key),
        post("/leads", { first_name: "Slow" }, key),
      ];
      // Whichever claimed the key waits on the lock; the other must be turned away meanwhile.
      const early = await Promise.race(requests);
      expectError(early, 409, "idempotency_in_progress");
      expect(early.body.error.type).toBe("idempotency_error");
      expectError(await post("/leads", { first_name: "Other" }, key), 409, "idempotency_conflict");
      if (stack === "postgres") {
        const ttl = await server().running.redis!.pttl(
          idempotencyRedisKey(
            redisNamespace(server().running.db.deploymentId),
            `${tenant.workspaceId}:${key}`,
          ),
        );
        expect(ttl).toBeGreaterThan(CLAIM_TTL_MS - 60_000);
        expect(ttl).toBeLessThanOrEqual(CLAIM_TTL_MS);
      }

      release();
      await lock;
      const [a, b] = await Promise.all(requests);
      const created = [a!, b!].find((res) => res.status === 201)!;
      expect(created.body.first_name).toBe("Slow");
      expect(isReplay(created)).toBe(false);
      const later = await post("/leads", { first_name: "Slow" }, key);
      expect(isReplay(later)).toBe(true);
      expect(later.body.id).toBe(created.body.id);
      expect(await leadCount()).toBe(leads + 1);
    });

    it("creates exactly one invoice from 20 concurrent requests with one key", async () => {
      const clientId = await newClient(api);
      const invoices = await invoiceCount();
      const key = newKey();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => post("/invoices", { client_id: clientId, items: ITEMS }, key)),
      );
      const created = results.filter((res) => res.status === 201);
      const originals = created.filter((res) => !isReplay(res));
      expect(originals).toHaveLength(1);
      for (const res of created) expect(res.body).toEqual(originals[0]!.body);
      for (const res of results.filter((res) => res.status !== 201)) {
        expectError(res, 409, "idempotency_in_progress");
      }
      expect(await invoiceCount()).toBe(invoices + 1);
    });
  });

  describe("key validation", () => {
    it.each([
      ["empty", ""],
      ["256 characters", "k".repeat(256)],
      ["non-ASCII", "clé"],
      ["a tab", "a\tb"],
    ])("rejects a key that is %s with 400 idempotency_key_invalid and runs nothing", async (_name, key) => {
      const leads = await leadCount();
      const res = await post("/leads", { first_name: "Bad" }, key);
      expectError(res, 400, "idempotency_key_invalid");
      expect(res.body.error.type).toBe("invalid_request_error");
      expect(await leadCount()).toBe(leads);
    });

    // Node's HTTP parser already refuses control characters in a header line; raw UTF-8 reaches the plugin.
    it.each([
      ["a control character", Buffer.from("abc\x01def", "latin1"), false],
      ["DEL", Buffer.from("abc\x7f", "latin1"), false],
      ["UTF-8", Buffer.from("ключ", "utf8"), true],
    ])("refuses a key with %s sent raw", async (_name, bytes, reachesPlugin) => {
      const leads = await leadCount();
      const res = await rawPost(server().url, "/v1/leads", tenant.key, bytes);
      expect(res.status).toBe(400);
      expect(res.text.includes('"code":"idempotency_key_invalid"')).toBe(reachesPlugin);
      expect(await leadCount()).toBe(leads);
    });

    it("answers GraphQL in its own error shape", async () => {
      const res = await graphqlPost(server().url, tenant.key, CREATE_LEAD, "k".repeat(256));
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({
        code: "idempotency_key_invalid",
        type: "invalid_request_error",
      });
    });

    it("accepts 255 printable characters, spaces and punctuation included", async () => {
      const key = `${"k".repeat(241)} !~"{}:/${randomBytes(3).toString("hex")}`;
      expect(key).toHaveLength(255);
      const first = await post("/leads", { first_name: "Long" }, key);
      expect(first.status).toBe(201);
      const again = await post("/leads", { first_name: "Long" }, key);
      expect(isReplay(again)).toBe(true);
      expect(again.body.id).toBe(first.body.id);
    });
  });

  describe("scope and what is kept", () => {
    it("keeps keys apart per workspace", async () => {
      const other = await server().tenant();
      const key = newKey();
      const mine = await post("/leads", { first_name: "Same" }, key);
      const theirs = await post("/leads", { first_name: "Same" }, key, other.key);
      expect([mine.status, theirs.status]).toEqual([201, 201]);
      expect(isReplay(theirs)).toBe(false);
      expect(theirs.body.id).not.toBe(mine.body.id);
      const prisma = server().running.db.prisma;
      expect(await prisma.lead.count({ where: { workspaceId: other.workspaceId } })).toBe(1);
    });

    it("replays only to the credential that made the first request: another key of the workspace gets 409", async () => {
      const key = newKey();
      const first = await post("/leads", { first_name: "Mine" }, key);
      expect(first.status).toBe(201);
      const colleague = await server().key(tenant.workspaceId, ["leads.read", "leads.write"]);
      const again = await post("/leads", { first_name: "Mine" }, key, colleague.key);
      expectError(again, 409, "idempotency_conflict");
      expect(again.body.error.message).toMatch(/another credential/);
      expect(isReplay(again)).toBe(false);
      expect(JSON.stringify(again.body)).not.toContain(first.body.id);
      // The first key still gets its replay.
      const mine = await post("/leads", { first_name: "Mine" }, key);
      expect(isReplay(mine)).toBe(true);
      expect(mine.body).toEqual(first.body);
    });

    it("keeps and replays a 400 validation failure", async () => {
      const key = newKey();
      const first = await post("/leads", { first_name: "A", stage: "bogus" }, key);
      expectError(first, 400, "validation_failed", "stage");
      const again = await post("/leads", { first_name: "A", stage: "bogus" }, key);
      expect(again.status).toBe(400);
      expect(isReplay(again)).toBe(true);
      expect(again.body).toEqual(first.body);
      // The replay is a request of its own: its log row carries the replayed status and error code.
      const replayId = again.headers.get("x-request-id")!;
      expect(replayId).not.toBe(first.body.error.request_id);
      await flushRequestLogs(server().running.db);
      const row = await server().running.db.prisma.requestLog.findUnique({ where: { id: replayId } });
      expect(row).toMatchObject({
        status: 400,
        errorCode: "validation_failed",
        route: "/v1/leads",
        credentialId: tenant.keyId,
      });
      // The key is spent on the failure: a corrected body is another request.
      expectError(await post("/leads", { first_name: "A" }, key), 409, "idempotency_conflict");
    });

    it("does not keep a 403: a retry with a better key runs", async () => {
      const readOnly = await server().key(tenant.workspaceId, ["leads.read"]);
      const key = newKey();
      for (let i = 0; i < 2; i++) {
        const denied = await post("/leads", { first_name: "Scoped" }, key, readOnly.key);
        expectError(denied, 403, "insufficient_scope");
        expect(isReplay(denied)).toBe(false);
      }
      const leads = await leadCount();
      const allowed = await post("/leads", { first_name: "Scoped" }, key);
      expect(allowed.status).toBe(201);
      expect(isReplay(allowed)).toBe(false);
      expect(await leadCount()).toBe(leads + 1);
      expect(isReplay(await post("/leads", { first_name: "Scoped" }, key))).toBe(true);
    });

    it("does not keep a GraphQL insufficient_scope either", async () => {
      const readOnly = await server().key(tenant.workspaceId, ["leads.read"]);
      const key = newKey();
      const denied = await graphqlPost(server().url, readOnly.key, CREATE_LEAD, key);
      expect(denied.status).toBe(200);
      expect(denied.body.errors[0].extensions).toMatchObject({
        code: "insufficient_scope",
        type: "permission_error",
      });
      const allowed = await graphqlPost(server().url, tenant.key, CREATE_LEAD, key);
      expect(isReplay(allowed)).toBe(false);
      expect(allowed.body.data.createLead.id).toMatch(/^lead_/);
      expect((await graphqlPost(server().url, tenant.key, CREATE_LEAD, key)).body).toEqual(allowed.body);
    });

    if (stack === "postgres") {
      it("keeps a finished key 24 hours in Redis", async () => {
        const key = newKey();
        expect((await post("/leads", { first_name: "Ttl" }, key)).status).toBe(201);
        const redisKey = idempotencyRedisKey(
          redisNamespace(server().running.db.deploymentId),
          `${tenant.workspaceId}:${key}`,
        );
        const ttl = await server().running.redis!.pttl(redisKey);
        expect(ttl).toBeGreaterThan(IDEMPOTENCY_TTL_MS - 60_000);
        expect(ttl).toBeLessThanOrEqual(IDEMPOTENCY_TTL_MS);
        const record = JSON.parse((await server().running.redis!.get(redisKey))!);
        expect(record.response.status).toBe(201);
        // Per-request headers (X-Request-Id, rate limits) are not part of what is replayed.
        expect(record.response.headers.map(([name]: [string]) => name.toLowerCase())).toEqual([
          "content-type",
        ]);
      });
    }
  });
});
