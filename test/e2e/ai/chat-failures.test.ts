import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/child-server.ts";
import {
  type FakeRequest,
  garbage,
  hang,
  headThenDrop,
  startFakeOpenAI,
  stream,
  error as upstreamError,
} from "../../support/fake-openai.ts";
import { eventually } from "../../support/receiver.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";
import {
  CATALOG,
  chatApi,
  collectChunks as collect,
  noSecretIn,
  CHAT_SECRET as SECRET,
  textOf,
} from "./support.ts";

/**
 * Chat completions when the provider fails, against the OpenAI-compatible fake provider: every way
 * it can fail (errors, answers that are not JSON, cut connections and streams, no head in time), a
 * refused connection and no provider configured, without the provider's key ever showing.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

const expectNoSecret = noSecretIn(SECRET);

e2e(
  "AI chat completions: provider failures",
  (server) => {
    const { client, post, since, simple, fresh } = chatApi(server, fake);

    describe("when the provider fails", () => {
      it("a provider error is 502 upstream_error with its short message, not its key", async () => {
        const pro = await fresh();
        fake.next(
          upstreamError(500, "The server had an error while processing your request.", {
            type: "server_error",
          }),
        );
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expect(response.json.error.message).toContain(
          "The server had an error while processing your request.",
        );
        expectNoSecret(response);

        fake.next(
          upstreamError(400, "Invalid value for 'temperature'.", {
            param: "temperature",
            code: "invalid_value",
          }),
        );
        const refused = await post(pro.key, { ...simple(), temperature: 9 });
        expect(refused.status).toBe(502);
        expect(refused.json.error.code).toBe("upstream_error");
        expect(refused.json.error.message).toContain("Invalid value for 'temperature'.");

        fake.next(upstreamError(500, "boom"));
        const thrown = await client(pro.key)
          .chat.completions.create(simple())
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 502, code: "upstream_error" });
      });

      it("a provider error naming the key does not pass the key on", async () => {
        const pro = await fresh();
        fake.next(
          upstreamError(
            401,
            `Incorrect API key provided: ${SECRET}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            { code: "invalid_api_key" },
          ),
        );
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        fake.next(upstreamError(429, `Rate limit reached for key ${SECRET}`));
        const limited = await post(pro.key, simple());
        expect(limited.status).toBe(502);
        expectNoSecret(limited);

        fake.next(garbage(`<html>proxy error for Authorization: Bearer ${SECRET}</html>`, { status: 503 }));
        const proxy = await post(pro.key, { ...simple(), stream: true });
        expect(proxy.status).toBe(502);
        expectNoSecret(proxy);
      });

      it("an answer that is not JSON is 502 upstream_error", async () => {
        const pro = await fresh();
        fake.next(garbage("<html><body>Bad gateway</body></html>"));
        const html = await post(pro.key, simple());
        expect(html.status).toBe(502);
        expect(html.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(html);

        fake.next(garbage('{"id": "chatcmpl-truncated", "choi', { contentType: "application/json" }));
        const truncated = await post(pro.key, simple());
        expect(truncated.status).toBe(502);
        expect(truncated.json.error.code).toBe("upstream_error");
      });

      it("a provider that cuts the connection mid-answer is 502 upstream_error", async () => {
        const pro = await fresh();
        fake.next(headThenDrop());
        const response = await post(pro.key, simple());
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(response);
      });

      it("a stream the provider cuts off does not end cleanly for the client", async () => {
        const pro = await fresh();
        fake.next(stream({ deltas: ["cut", " off", " here"], dropAfter: 3 }));
        const created = await client(pro.key).chat.completions.create({
          model: "gpt-4o-mini",
          messages: simple().messages,
          stream: true,
        });
        const chunks: ChatCompletionChunk[] = [];
        const outcome = await collect(created, {
          into: chunks,
          onTimeout: () => created.controller.abort(),
        }).then(
          () => "ended",
          (e: unknown) => String(e),
        );
        // The deltas before the cut arrived; then the client learns the stream broke (no finish_reason, no [DONE]).
        expect(textOf(chunks)).toBe("cut off");
        expect(outcome).not.toBe("ended");
        expect(outcome).not.toContain("did not end within");
      });

      it("no head within AI_UPSTREAM_TIMEOUT_MS is 504 upstream_timeout, and the provider's request is dropped", async () => {
        const pro = await fresh();
        const before = fake.requests.length;
        fake.next(hang());
        const started = Date.now();
        const response = await post(pro.key, simple());
        const elapsed = Date.now() - started;
        expect(response.status).toBe(504);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
        expect(elapsed).toBeGreaterThanOrEqual(1_400);
        expect(elapsed).toBeLessThan(8_000);
        expectNoSecret(response);
        const [upstream] = since(before) as [FakeRequest];
        expect(await eventually(async () => upstream.aborted, Boolean, 5_000)).toBe(true);

        fake.next(hang());
        const thrown = await client(pro.key)
          .chat.completions.create({ ...simple(), stream: true })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 504, code: "upstream_timeout" });
      });
    });

    describe("without a reachable provider", () => {
      let bare: TestServer;
      let refused: TestServer;
      beforeAll(async () => {
        const port = await freePort();
        [bare, refused] = await Promise.all([
          startTestServer(server().stack),
          startTestServer(server().stack, {
            AI_UPSTREAM_URL: `http://127.0.0.1:${port}/v1`,
            AI_UPSTREAM_API_KEY: SECRET,
            AI_UPSTREAM_TIMEOUT_MS: "1500",
          }),
        ]);
      });
      afterAll(async () => {
        await Promise.all([bare?.close(), refused?.close()]);
      });

      it("no AI_UPSTREAM_URL: 503 ai_unavailable with Retry-After; the catalog is still listed", async () => {
        const tenant = await bare.tenant({ plan: "pro" });
        const response = await post(tenant.key, simple(), `${bare.api}/chat/completions`);
        expect(response.status).toBe(503);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "ai_unavailable" });
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
        const thrown = await client(tenant.key, bare.api)
          .chat.completions.create({ ...simple(), stream: true })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 503, code: "ai_unavailable" });
        // The scope and the plan are still checked first.
        const narrow = await bare.tenant({ plan: "pro", scopes: ["leads.read"] });
        expect((await post(narrow.key, simple(), `${bare.api}/chat/completions`)).status).toBe(403);
        expect((await post(tenant.key, simple("o3"), `${bare.api}/chat/completions`)).status).toBe(400);
        expect((await client(tenant.key, bare.api).models.list()).data.map((m) => m.id)).toEqual(CATALOG.pro);
      });

      it("a refused connection is 502 upstream_error, without the key", async () => {
        const tenant = await refused.tenant({ plan: "pro" });
        const response = await post(tenant.key, simple(), `${refused.api}/chat/completions`);
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expectNoSecret(response);
        const streamed = await post(
          tenant.key,
          { ...simple(), stream: true },
          `${refused.api}/chat/completions`,
        );
        expect(streamed.status).toBe(502);
        expectNoSecret(streamed);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
