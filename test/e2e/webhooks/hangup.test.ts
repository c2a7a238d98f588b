import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { rest } from "../../support/http.ts";
import { eventually, type HangUp, type RudeReceiver, startRudeReceiver } from "../../support/receiver.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";

/**
 * The server process outlives receivers that refuse, reset or answer before the body is sent:
 * a socket error nobody listens to would end it (the EPIPE crash, see server/webhooks/send.ts).
 */

async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

const MODES: HangUp[] = ["answer-then-close", "answer-then-reset", "reset-mid-body"];

for (const stack of stacks()) {
  describe(`webhook receivers that hang up [${stack}]`, () => {
    let scratch: Awaited<ReturnType<typeof provisionStack>>;
    let child: ChildServer | undefined;
    const receivers = new Map<HangUp, RudeReceiver>();

    beforeAll(async () => {
      scratch = await provisionStack(stack);
      for (const mode of MODES) receivers.set(mode, await startRudeReceiver(mode));
    });
    afterAll(async () => {
      await child?.stop();
      for (const receiver of receivers.values()) await receiver.close();
      await scratch?.drop();
    });

    it("keeps the server process alive and records each failure", { timeout: 90_000 }, async () => {
      const env = {
        ...scratch.env,
        KONTOR_ENV: "development",
        KONTOR_WEBHOOK_TIMEOUT_MS: "2000",
        KONTOR_WEBHOOK_RETRY_SCHEDULE: "200ms,200ms",
        KONTOR_WEBHOOK_JITTER: "0",
      };
      const { key } = await tenantIn(env, "Hang-ups");
      child = await startChildServer(env);
      const api = rest(child.api, key);

      const targets = new Map<string, string>(
        MODES.map((mode) => [mode, receivers.get(mode)!.url(`/${mode}`)]),
      );
      targets.set("refused", `http://127.0.0.1:${await closedPort()}/refused`);
      const endpoints = new Map<string, string>();
      for (const [name, url] of targets) {
        const created = await api.post("/webhook-endpoints", { url, events: ["invoice.created"] });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        endpoints.set(name, created.body.id);
      }

      // A small event and the largest one sent in full (250 lines of 500 characters).
      const client = await api.post("/clients", { name: "Hang-up Ltd" });
      expect(client.status).toBe(201);
      for (const [count, length] of [
        [1, 10],
        [250, 500],
      ] as const) {
        const items = Array.from({ length: count }, (_, i) => ({
          description: `${i}:`.padEnd(length, "x"),
          quantity: 1,
          unit_price: 1,
        }));
        const invoice = await api.post("/invoices", { client_id: client.body.id, items });
        expect(invoice.status, JSON.stringify(invoice.body).slice(0, 300)).toBe(201);
      }

      // Every delivery has used all three attempts.
      for (const [name, endpointId] of endpoints) {
        const rows = await eventually(
          async () => (await api.get(`/webhook-deliveries?endpoint_id=${endpointId}`)).body.data as any[],
          (list) => list.length === 2 && list.every((row) => row.status === "failed"),
          45_000,
        );
        expect(rows, name).toHaveLength(2);
        for (const row of rows) {
          expect(row, name).toMatchObject({ status: "failed", attempts: 3, delivered_at: null });
          if (name === "answer-then-close")
            expect(row, name).toMatchObject({
              response_status: 413,
              response_body: "body too large",
              last_error: null,
            });
          else if (name === "refused")
            expect(row, name).toMatchObject({ response_status: null, last_error: "connection_refused" });
          else if (name === "reset-mid-body")
            expect(row, name).toMatchObject({ response_status: null, last_error: "connection_reset" });
          // The reset may overtake the early answer.
          else
            expect(
              row.response_status === 400 || row.last_error === "connection_reset",
              `${name}: ${JSON.stringify(row)}`,
            ).toBe(true);
        }
      }
      for (const [mode, receiver] of receivers) expect(receiver.hungUp, mode).toBeGreaterThanOrEqual(6);

      expect(child.child.exitCode).toBeNull();
      expect(child.child.signalCode).toBeNull();
      expect((await api.get("/workspace")).status).toBe(200);
      expect(child.stderr()).not.toMatch(/EPIPE|ECONNRESET|Unhandled|uncaught/i);
    });
  });
}
