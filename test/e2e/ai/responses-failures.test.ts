import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  completion,
  completionBody,
  type Handler,
  hang,
  startFakeOpenAI,
  stream,
  error as upstreamError,
  usageOf,
} from "../../support/fake-openai.ts";
import { eventually } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import {
  defaultAnswer,
  noSecretIn,
  parseSse,
  responsesApi,
  RESPONSES_SECRET as SECRET,
  type Seeded,
  toolRound,
} from "./support.ts";

/**
 * POST /v1/responses when the provider fails, against the OpenAI-compatible fake provider on
 * loopback: errors in the first or a later round, streams cut off, no head in time and answers
 * that are not JSON, without the provider's key ever showing.
 */

const fake = await startFakeOpenAI();
afterAll(() => fake.close());

/**
 * The fake's answers, one per upstream request, in order; reset before every test so a failing
 * test leaves nothing queued for the next. Past the script, the default answer.
 */
let script: Handler[] = [];
fake.setDefault((request, res) => (script.shift() ?? defaultAnswer)(request, res));
beforeEach(() => {
  script = [];
});

const expectNoSecret = noSecretIn(SECRET);

e2e(
  "AI responses: provider failures",
  (server) => {
    const { client, post, since, seed } = responsesApi(server, fake);
    let seeded: Seeded;
    beforeAll(async () => {
      seeded = await seed();
    });

    describe("when the provider fails", () => {
      it("a provider 500 is 502 upstream_error with its short message, not its key", async () => {
        const key = seeded.owner.key;
        script = [
          upstreamError(500, "The server had an error while processing your request.", {
            type: "server_error",
          }),
        ];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_error" });
        expect(response.json.error.message).toContain(
          "The server had an error while processing your request.",
        );
        expectNoSecret(response);

        script = [upstreamError(500, "boom")];
        const thrown = await client(key)
          .responses.create({ model: "gpt-4o-mini", input: "x" })
          .catch((e: unknown) => e);
        expect(thrown).toBeInstanceOf(OpenAI.InternalServerError);
        expect(thrown).toMatchObject({ status: 502, code: "upstream_error" });

        // A stream whose first round fails is an HTTP error too, not a 200 stream.
        script = [upstreamError(500, "boom")];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(502);
        expect(streamed.json.error.code).toBe("upstream_error");
        expectNoSecret(streamed);
      });

      it("a provider error naming the key does not pass the key on", async () => {
        const key = seeded.owner.key;
        script = [
          upstreamError(
            401,
            `Incorrect API key provided: ${SECRET}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            { code: "invalid_api_key" },
          ),
        ];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        script = [upstreamError(429, `Rate limit reached for key ${SECRET}`)];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(502);
        expectNoSecret(streamed);
      });

      it("a failure in a later round is 502 without a stream, and response.failed at the end of a stream", async () => {
        const key = seeded.owner.key;
        script = [
          toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)),
          upstreamError(500, `Key ${SECRET} rejected`),
        ];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        expectNoSecret(response);

        script = [
          toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)),
          upstreamError(500, `Key ${SECRET} rejected`),
        ];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        expectNoSecret(streamed);
        const events = parseSse(streamed.text);
        expect(events.map((e) => e.data.type)).toEqual([
          "response.created",
          "response.in_progress",
          "response.failed",
        ]);
        expect(events.at(-1)!.data.response).toMatchObject({
          status: "failed",
          error: { code: "upstream_error" },
        });

        // The official client's helper reports the failed response.
        script = [
          toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)),
          upstreamError(500, "late failure"),
        ];
        const final = await client(key)
          .responses.stream({ model: "gpt-4o-mini", input: "x" })
          .finalResponse();
        expect(final.status).toBe("failed");
        expect(final.error).toMatchObject({ code: "upstream_error" });
      });

      it("a provider that cuts its stream off ends the answer with response.failed (upstream_error)", async () => {
        script = [stream({ deltas: ["partial", " answer", " never"], dropAfter: 3 })];
        const streamed = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        const events = parseSse(streamed.text);
        expect(
          events.filter((e) => e.data.type === "response.output_text.delta").map((e) => e.data.delta),
        ).toEqual(["partial", " answer"]);
        const last = events.at(-1)!.data;
        expect(last.type).toBe("response.failed");
        expect(last.response.status).toBe("failed");
        expect(last.response.error, "a provider breaking off is the provider's failure").toMatchObject({
          code: "upstream_error",
        });
      });

      it("a later round without a head in time is 504 upstream_timeout (no stream) or response.failed (stream)", async () => {
        const key = seeded.owner.key;
        const before = fake.requests.length;
        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), hang()];
        const response = await post(key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(504);
        expect(response.json.error).toMatchObject({ type: "api_error", code: "upstream_timeout" });
        expectNoSecret(response);
        const stuck = since(before)[1]!;
        expect(await eventually(async () => stuck.aborted, Boolean, 5_000)).toBe(true);

        script = [toolRound([{ id: "call_1", name: "workspace", args: {} }], usageOf(10, 1)), hang()];
        const streamed = await post(key, { model: "gpt-4o-mini", input: "x", stream: true });
        expect(streamed.status).toBe(200);
        const last = parseSse(streamed.text).at(-1)!.data;
        expect(last.type).toBe("response.failed");
        expect(last.response.error).toMatchObject({ code: "upstream_timeout" });
      });

      it("a provider answer that is not JSON is 502 upstream_error", async () => {
        script = [completion({ raw: '{"id": "chatcmpl-cut", "choi' })];
        const response = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x" });
        expect(response.status).toBe(502);
        expect(response.json.error.code).toBe("upstream_error");
        // A completion without a message is no answer either.
        script = [completion({ raw: JSON.stringify({ ...completionBody(), choices: [] }) })];
        const empty = await post(seeded.owner.key, { model: "gpt-4o-mini", input: "x" });
        expect(empty.status).toBe(502);
      });
    });
  },
  { AI_UPSTREAM_URL: fake.url, AI_UPSTREAM_API_KEY: SECRET, AI_UPSTREAM_TIMEOUT_MS: "1500" },
);
