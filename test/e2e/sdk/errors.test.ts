import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  AuthenticationError,
  ConflictError,
  IdempotencyError,
  InternalServerError,
  Kontor,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ValidationError,
} from "@kontor/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/child-server.ts";
import { gate, startFakeOpenAI, stream, error as upstreamError } from "../../support/fake-openai.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import { failure, REQUEST_ID, sdkFor } from "./support.ts";

/**
 * The SDK (`@kontor/sdk`, imported by its package name as a user would) against a live server:
 * each error class comes from a real answer (or from no answer at all). Every answer the SDK
 * receives is checked against the OpenAPI document by the `fetch` it is given.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

const NEVER_LEAD = "lead_01J00000000000000000000000";

/** A loopback server that accepts connections and never answers. */
async function silentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(() => {});
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

e2e(
  "sdk: errors",
  (server) => {
    let tenant: Tenant;
    let kontor: Kontor;
    const sdk = sdkFor(server);

    beforeAll(async () => {
      tenant = await server().tenant({ plan: "pro" });
      kontor = sdk(tenant.key);
    });

    describe("errors from real answers", () => {
      it("AuthenticationError (401) for an unknown key", async () => {
        const error = await failure(
          sdk("ktr_live_doesnotexist0000000000000000000000000000").workspace.retrieve(),
        );
        expect(error).toBeInstanceOf(AuthenticationError);
        expect(error).toMatchObject({ status: 401, code: "invalid_token", type: "authentication_error" });
        expect(error.requestId).toMatch(REQUEST_ID);
        expect(error.headers.get("www-authenticate")).toMatch(/^Bearer /);
      });

      it("PermissionError (403) with requiredScope", async () => {
        const readOnly = await server().key(tenant.workspaceId, ["leads.read"]);
        const error = await failure(sdk(readOnly.key).leads.create({ full_name: "Nope" }));
        expect(error).toBeInstanceOf(PermissionError);
        expect(error).toMatchObject({
          status: 403,
          code: "insufficient_scope",
          requiredScope: "leads.write",
        });
        expect(error.requestId).toBe(error.headers.get("x-request-id"));
      });

      it("NotFoundError (404)", async () => {
        const error = await failure(kontor.leads.retrieve(NEVER_LEAD));
        expect(error).toBeInstanceOf(NotFoundError);
        expect(error).toMatchObject({ status: 404, code: "not_found", param: "id" });
        expect(error.message).toContain(NEVER_LEAD);
      });

      it("ValidationError (400) with param, for bad input and for a wrong state", async () => {
        const lead = await kontor.leads.create({ full_name: "Valid Lead" });
        const bad = await failure(kontor.leads.update(lead.id, { stage: "closed" as never }));
        expect(bad).toBeInstanceOf(ValidationError);
        expect(bad).toMatchObject({ status: 400, code: "validation_failed", param: "stage" });
        await kontor.leads.convert(lead.id);
        const again = await failure(kontor.leads.convert(lead.id));
        expect(again).toBeInstanceOf(ValidationError);
        expect(again.code).toBe("invalid_state");
      });

      it("ConflictError (409) for a taken value, IdempotencyError (409) for a reused key", async () => {
        await kontor.inventory.items.create({ name: "Cog", sku: "COG-1" });
        const taken = await failure(kontor.inventory.items.create({ name: "Cog again", sku: "COG-1" }));
        expect(taken).toBeInstanceOf(ConflictError);
        expect(taken).not.toBeInstanceOf(IdempotencyError);
        expect(taken).toMatchObject({ status: 409, code: "sku_taken", param: "sku" });

        const idempotencyKey = `sdk-${Date.now()}`;
        const first = await kontor.leads.create({ full_name: "Once Only" }, { idempotencyKey });
        const replay = await kontor.leads
          .create({ full_name: "Once Only" }, { idempotencyKey })
          .withResponse();
        expect(replay.data.id).toBe(first.id);
        expect(replay.response.headers.get("idempotent-replay")).toBe("true");
        const reused = await failure(kontor.leads.create({ full_name: "Someone Else" }, { idempotencyKey }));
        expect(reused).toBeInstanceOf(IdempotencyError);
        expect(reused).toBeInstanceOf(ConflictError);
        expect(reused).toMatchObject({
          status: 409,
          code: "idempotency_conflict",
          type: "idempotency_error",
        });
      });

      it("RateLimitError (429) with retryAfter and the rate-limit headers, past the free plan's 120 a minute", async () => {
        const free = await server().tenant({ plan: "free", scopes: ["leads.read"] });
        const limited = sdk(free.key);
        const outcomes = await Promise.all(
          Array.from({ length: 130 }, () =>
            limited.workspace.retrieve().then(
              () => null,
              (error: unknown) => error,
            ),
          ),
        );
        const errors = outcomes.filter((outcome) => outcome !== null);
        expect(errors.length).toBeGreaterThanOrEqual(10);
        // 130 at once open 130 connections: past 128 from one address, the server answers 429
        // concurrency_limit_exceeded and closes them (docs/api/limits.md#traffic-policies).
        const error = errors.find(
          (outcome) => outcome instanceof RateLimitError && outcome.code === "rate_limit_exceeded",
        ) as RateLimitError;
        expect(error).toBeInstanceOf(RateLimitError);
        expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "rate_limit_error" });
        expect(error.retryAfter).toBeGreaterThan(0);
        expect(error.retryAfter).toBeLessThanOrEqual(60);
        expect(error.rateLimit).toMatchObject({ limit: 120, remaining: 0, plan: "free" });
      });

      it("RateLimitError carries the coding plan's headers (429 concurrency_limit_exceeded)", async () => {
        const free = await server().tenant({ plan: "free", scopes: ["ai.coding"] });
        const coder = sdk(free.key);
        const open = gate();
        fake.next(stream({ deltas: ["a", "b"], holdAfter: 1, gate: open.promise }));
        const held = await coder.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "Hi" }],
          stream: true,
        });
        try {
          const error = await failure(
            coder.chat.completions.create({
              model: "gpt-4o-mini",
              messages: [{ role: "user", content: "Hi" }],
            }),
          );
          expect(error).toBeInstanceOf(RateLimitError);
          expect(error.code).toBe("concurrency_limit_exceeded");
          const plan = (error as RateLimitError).codingPlan;
          expect(plan?.fiveHourUsedPercent).toEqual(expect.any(Number));
          expect(plan?.weeklyReset).toMatch(/Z$/);
        } finally {
          open.open();
          for await (const _chunk of held) {
            // drain the held stream so its slot is freed
          }
        }
      });

      it("APIError for a 5xx (InternalServerError): the provider failed, 502 upstream_error", async () => {
        fake.next(upstreamError(500, "The provider broke."));
        const error = await failure(
          kontor.chat.completions.create({
            model: "gpt-4o-mini",
            messages: [{ role: "user", content: "Hi" }],
          }),
        );
        expect(error).toBeInstanceOf(InternalServerError);
        expect(error).toBeInstanceOf(APIError);
        expect(error).toMatchObject({ status: 502, code: "upstream_error", type: "api_error" });
        expect(error.requestId).toMatch(REQUEST_ID);
      });

      it("APIConnectionError when nothing answers, APITimeoutError when the answer is too slow", async () => {
        const closed = new Kontor({
          apiKey: tenant.key,
          baseUrl: `http://127.0.0.1:${await freePort()}/v1`,
          maxRetries: 0,
        });
        const refused = await failure(closed.workspace.retrieve());
        expect(refused).toBeInstanceOf(APIConnectionError);
        expect(refused).toMatchObject({ status: undefined, code: "connection_error", requestId: null });
        expect(refused.cause).toBeDefined();

        const silent = await silentServer();
        try {
          const slow = new Kontor({ apiKey: tenant.key, baseUrl: silent.url, maxRetries: 0, timeout: 5_000 });
          const started = Date.now();
          const timedOut = await failure(slow.workspace.retrieve({ timeout: 150 }));
          expect(timedOut).toBeInstanceOf(APITimeoutError);
          expect(timedOut).toBeInstanceOf(APIConnectionError);
          expect(timedOut.code).toBe("timeout");
          expect(Date.now() - started).toBeLessThan(4_000);
        } finally {
          await silent.close();
        }
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: "sk-sdk-upstream" },
);
