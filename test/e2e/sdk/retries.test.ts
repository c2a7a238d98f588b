import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  APIConnectionError,
  APITimeoutError,
  type ClientOptions,
  InternalServerError,
  Kontor,
  NotFoundError,
  RateLimitError,
} from "@kontor/sdk";
import { CreateLeadDocument } from "@kontor/sdk/graphql";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The SDK's retries against a live server, through a proxy on loopback that injects failures:
 * a POST whose answer is lost after the server ran it is retried with the same Idempotency-Key
 * and creates exactly one object; 429 waits out Retry-After; 5xx and 409 idempotency_in_progress
 * are retried with back-off; maxRetries and timeout hold per client and per call.
 */

interface Seen {
  method: string;
  /** Path and query. */
  path: string;
  idempotencyKey: string | null;
  at: number;
}

/** What the proxy does with a request: pass it on, pass it on and lose the answer, answer itself, or never answer. */
type Action =
  | "forward"
  | "forward-then-drop"
  | "hang"
  | { status: number; headers?: Record<string, string>; body?: unknown };

interface Proxy {
  /** `http://127.0.0.1:<port>/v1` */
  api: string;
  seen: Seen[];
  /** How the `n`-th request (0-based) is handled; the default forwards. */
  plan(decide: (seen: Seen, index: number) => Action): void;
  close(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const seen: Seen[] = [];
  let decide: (seen: Seen, index: number) => Action = () => "forward";
  const sockets = new Set<Socket>();

  const forward = async (req: IncomingMessage, body: Buffer) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (
        value === undefined ||
        ["host", "connection", "content-length", "transfer-encoding", "keep-alive"].includes(name)
      )
        continue;
      headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    const response = await fetch(`${target}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === "GET" || req.method === "HEAD" ? undefined : new Uint8Array(body),
    });
    return {
      status: response.status,
      headers: response.headers,
      body: Buffer.from(await response.arrayBuffer()),
    };
  };

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const record: Seen = {
        method: req.method ?? "",
        path: req.url ?? "",
        idempotencyKey: (req.headers["idempotency-key"] as string | undefined) ?? null,
        at: performance.now(),
      };
      seen.push(record);
      const action = decide(record, seen.length - 1);
      try {
        if (action === "hang") return;
        if (typeof action === "object") {
          res.writeHead(action.status, {
            "content-type": "application/json",
            "x-request-id": "req_PROXY",
            ...action.headers,
          });
          res.end(action.body === undefined ? "" : JSON.stringify(action.body));
          return;
        }
        const answer = await forward(req, Buffer.concat(chunks));
        if (action === "forward-then-drop") {
          // The server has answered (and committed); the client never hears of it.
          req.socket.destroy();
          return;
        }
        const headers: Record<string, string> = {};
        answer.headers.forEach((value, name) => {
          if (
            !["content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"].includes(
              name,
            )
          )
            headers[name] = value;
        });
        res.writeHead(answer.status, headers);
        res.end(answer.body);
      } catch {
        res.destroy();
      }
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    api: `http://127.0.0.1:${port}/v1`,
    seen,
    plan: (next) => void (decide = next),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const apiError = (_status: number, type: string, code: string) => ({
  error: { type, code, message: `Injected ${code}.`, request_id: "req_PROXY" },
});
const SERVICE_UNAVAILABLE = { status: 503, body: apiError(503, "api_error", "service_unavailable") };
const INTERNAL = { status: 500, body: apiError(500, "api_error", "internal_error") };

e2e("sdk retries", (server) => {
  let tenant: Tenant;
  let proxy: Proxy;
  /** Straight to the server, for checking what exists. */
  let direct: Kontor;
  const viaProxy = (options: ClientOptions = {}) =>
    new Kontor({ apiKey: tenant.key, baseUrl: proxy.api, ...options });
  const posts = () => proxy.seen.filter((s) => s.method === "POST");

  beforeAll(async () => {
    tenant = await server().tenant({ plan: "pro" });
    direct = new Kontor({ apiKey: tenant.key, baseUrl: server().api, maxRetries: 0 });
    proxy = await startProxy(server().url);
  });

  afterAll(async () => {
    await proxy?.close();
  });

  afterEach(() => {
    proxy.seen.length = 0;
    proxy.plan(() => "forward");
  });

  describe("a POST whose answer is lost", () => {
    it("is retried with the same Idempotency-Key: the server replays it and exactly one lead exists", async () => {
      proxy.plan((seen, index) => (index === 0 && seen.method === "POST" ? "forward-then-drop" : "forward"));
      const { data: lead, response } = await viaProxy()
        .leads.create({ full_name: "Dropped Once", company_name: "Retry Co" })
        .withResponse();
      expect(posts()).toHaveLength(2);
      expect(posts()[0]!.idempotencyKey).toMatch(/^kontor-sdk-/);
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      expect(response.headers.get("idempotent-replay")).toBe("true");
      const existing = await direct.leads.list({ search: "Dropped" });
      expect(existing.data.map((l) => l.id)).toEqual([lead.id]);
    });

    it("keeps a caller's own Idempotency-Key across the retry", async () => {
      proxy.plan((_seen, index) => (index === 0 ? "forward-then-drop" : "forward"));
      const bucket = await viaProxy().buckets.create(
        { name: "retry-bucket" },
        { idempotencyKey: "my-own-key-1" },
      );
      expect(posts().map((p) => p.idempotencyKey)).toEqual(["my-own-key-1", "my-own-key-1"]);
      expect(
        (await direct.buckets.list()).data.filter((b) => b.name === "retry-bucket").map((b) => b.id),
      ).toEqual([bucket.id]);
    });

    it("a raw upload (bytes) is retried the same way and stores one object", async () => {
      const bucket = await direct.buckets.create({ name: "retry-uploads" });
      proxy.plan((_seen, index) => (index === 0 ? "forward-then-drop" : "forward"));
      const object = await viaProxy().buckets.objects.upload(bucket.id, {
        file_name: "once.bin",
        file: new Uint8Array([1, 2, 3, 4]),
      });
      expect(posts()).toHaveLength(2);
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      expect((await direct.buckets.objects.list(bucket.id)).data.map((o) => o.id)).toEqual([object.id]);
      expect((await direct.storage.retrieve()).used_bytes).toBe(4);
    });

    it("a GraphQL mutation is retried with one Idempotency-Key too; queries carry none", async () => {
      proxy.plan((_seen, index) => (index === 0 ? "forward-then-drop" : "forward"));
      const { createLead } = await viaProxy().graphql(CreateLeadDocument, {
        full_name: "GraphQLDropped Lead",
      });
      expect(posts()).toHaveLength(2);
      expect(posts()[0]!.path).toBe("/graphql");
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      expect(posts()[0]!.idempotencyKey).toMatch(/^kontor-sdk-/);
      expect((await direct.leads.list({ search: "GraphQLDropped" })).data.map((l) => l.id)).toEqual([
        createLead.id,
      ]);

      proxy.seen.length = 0;
      await viaProxy().graphql("{ workspace { id } }");
      expect(proxy.seen[0]!.idempotencyKey).toBeNull();
    });

    it("without retries the lost answer is an APIConnectionError (and the lead was created once)", async () => {
      proxy.plan(() => "forward-then-drop");
      const error = await viaProxy({ maxRetries: 0 })
        .leads.create({ full_name: "LostForGood Lead" })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APIConnectionError);
      expect(posts()).toHaveLength(1);
      expect((await direct.leads.list({ search: "LostForGood" })).data).toHaveLength(1);
    });
  });

  describe("429 and Retry-After", () => {
    it("waits at least Retry-After before the next attempt", async () => {
      proxy.plan((_seen, index) =>
        index === 0
          ? {
              status: 429,
              headers: { "retry-after": "1" },
              body: apiError(429, "rate_limit_error", "rate_limit_exceeded"),
            }
          : "forward",
      );
      const workspace = await viaProxy().workspace.retrieve();
      expect(workspace.id).toBe(tenant.workspaceId);
      expect(proxy.seen).toHaveLength(2);
      expect(proxy.seen[1]!.at - proxy.seen[0]!.at).toBeGreaterThanOrEqual(1000);
    });

    it("a Retry-After longer than maxRetryAfter is not waited out: RateLimitError with retryAfter", async () => {
      proxy.plan(() => ({
        status: 429,
        headers: { "retry-after": "3600" },
        body: apiError(429, "rate_limit_error", "rate_limit_exceeded"),
      }));
      const error = (await viaProxy()
        .workspace.retrieve()
        .catch((e: unknown) => e)) as RateLimitError;
      expect(error).toBeInstanceOf(RateLimitError);
      expect(error.retryAfter).toBe(3600);
      expect(proxy.seen).toHaveLength(1);
    });
  });

  describe("5xx, 409 idempotency_in_progress and time-outs", () => {
    it("a 503 is retried after a back-off and the call succeeds", async () => {
      proxy.plan((_seen, index) => (index === 0 ? SERVICE_UNAVAILABLE : "forward"));
      const lead = await viaProxy().leads.create({ full_name: "After 503" });
      expect(lead.full_name).toBe("After 503");
      expect(posts()).toHaveLength(2);
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      // 0.5 s less up to 25 % jitter.
      expect(posts()[1]!.at - posts()[0]!.at).toBeGreaterThanOrEqual(370);
    });

    it("409 idempotency_in_progress is retried with the same key", async () => {
      proxy.plan((_seen, index) =>
        index === 0
          ? {
              status: 409,
              headers: { "retry-after": "0" },
              body: apiError(409, "idempotency_error", "idempotency_in_progress"),
            }
          : "forward",
      );
      const client = await viaProxy().clients.create({ name: "In Progress Co" });
      expect(posts()).toHaveLength(2);
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      expect((await direct.clients.list({ search: "In Progress Co" })).data.map((c) => c.id)).toEqual([
        client.id,
      ]);
    });

    it("maxRetries holds per client (default 2) and per call; 4xx answers are not retried", async () => {
      proxy.plan(() => INTERNAL);
      const byDefault = await viaProxy()
        .workspace.retrieve()
        .catch((e: unknown) => e);
      expect(byDefault).toBeInstanceOf(InternalServerError);
      expect((byDefault as InternalServerError).status).toBe(500);
      expect(proxy.seen).toHaveLength(3);

      proxy.seen.length = 0;
      expect(
        await viaProxy({ maxRetries: 1 })
          .workspace.retrieve()
          .catch((e: unknown) => e),
      ).toBeInstanceOf(InternalServerError);
      expect(proxy.seen).toHaveLength(2);

      proxy.seen.length = 0;
      expect(
        await viaProxy({ maxRetries: 5 })
          .workspace.retrieve({ maxRetries: 0 })
          .catch((e: unknown) => e),
      ).toBeInstanceOf(InternalServerError);
      expect(proxy.seen).toHaveLength(1);

      proxy.seen.length = 0;
      proxy.plan(() => "forward");
      expect(
        await viaProxy()
          .leads.retrieve("lead_01J00000000000000000000000")
          .catch((e: unknown) => e),
      ).toBeInstanceOf(NotFoundError);
      expect(proxy.seen).toHaveLength(1);
    });

    it("an attempt past the time-out is abandoned and retried; per call the time-out can change", async () => {
      proxy.plan((_seen, index) => (index === 0 ? "hang" : "forward"));
      const started = performance.now();
      // Long enough for a real create on a loaded machine (a second slow attempt would be retried too).
      const project = await viaProxy({ timeout: 10_000 }).projects.create(
        { name: "Slow start" },
        { timeout: 1_500 },
      );
      expect(project.name).toBe("Slow start");
      expect(posts()).toHaveLength(2);
      expect(posts()[1]!.idempotencyKey).toBe(posts()[0]!.idempotencyKey);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect((await direct.projects.list({ search: "Slow start" })).data).toHaveLength(1);

      proxy.seen.length = 0;
      proxy.plan(() => "hang");
      const error = await viaProxy({ timeout: 200, maxRetries: 1 })
        .workspace.retrieve()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(APITimeoutError);
      expect(proxy.seen).toHaveLength(2);
    });

    it("a streamed upload cannot be sent twice: it is not retried", async () => {
      const bucket = await direct.buckets.create({ name: "stream-once" });
      proxy.plan(() => SERVICE_UNAVAILABLE);
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array([9, 9, 9]));
          controller.close();
        },
      });
      const error = await viaProxy()
        .buckets.objects.upload(bucket.id, { file_name: "s.bin", file: body })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InternalServerError);
      expect(posts()).toHaveLength(1);
    });
  });
});
