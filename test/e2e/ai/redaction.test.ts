import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChildServer, startChildServer } from "../../support/child-server.ts";
import { completionBody, type FakeOpenAI, type Handler, startFakeOpenAI } from "../../support/fake-openai.ts";
import { eventually } from "../../support/receiver.ts";
import { provisionStack, tenantIn } from "../../support/server.ts";

/**
 * The provider's key (AI_UPSTREAM_API_KEY) never leaves the server, whatever the provider echoes:
 * not in a streamed error event, a streamed content delta, a non-streamed error or a non-streamed
 * body, on /v1/chat/completions and /v1/responses, even with the key split across two writes of
 * the provider. Neither the client, nor the server's log (its stderr, every level), nor
 * GET /v1/request-logs shows it.
 *
 * A server in its own process, to read its whole log; one stack only (embedded): what the server
 * passes on of the provider's answers does not depend on the database.
 */

const SECRET = `sk-proj-${randomBytes(12).toString("hex")}`;
const CUT = 7;

/** `text` in pieces, each occurrence of the key cut in two at CUT. */
function splitKey(text: string): string[] {
  const pieces: string[] = [];
  let from = 0;
  for (let at = text.indexOf(SECRET); at !== -1; at = text.indexOf(SECRET, at + 1)) {
    pieces.push(text.slice(from, at + CUT));
    from = at + CUT;
  }
  pieces.push(text.slice(from));
  return pieces.filter(Boolean);
}

/** `status` and `contentType`, then `pieces`, each its own write 20 ms after the last (a read on the other side ends between them). */
function pieces(status: number, contentType: string, parts: string[]): Handler {
  return async (_request, res) => {
    res.writeHead(status, { "content-type": contentType });
    res.flushHeaders();
    for (const part of parts) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (res.destroyed) return;
      res.write(part);
    }
    res.end();
  };
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "chatcmpl-echo", object: "chat.completion.chunk", created: 1, model: "gpt-4o-mini", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;

/** A stream that echoes the key in a content delta, then in an error event. */
const echoingStream = () =>
  pieces(
    200,
    "text/event-stream",
    splitKey(
      [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: `your key is ${SECRET}, isn't it?` }),
        `data: ${JSON.stringify({ error: { message: `stream error with ${SECRET}` } })}\n\n`,
        "data: [DONE]\n\n",
      ].join(""),
    ),
  );

/** A stream that echoes the key in content deltas only, then ends as a stream should. */
const echoingText = () =>
  pieces(
    200,
    "text/event-stream",
    splitKey(
      [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: `your key is ${SECRET}` }),
        chunk({ content: ` (${SECRET})` }),
        chunk({}, "stop"),
        "data: [DONE]\n\n",
      ].join(""),
    ),
  );

/** A JSON completion whose content echoes the key. */
const echoingBody = () =>
  pieces(
    200,
    "application/json",
    splitKey(JSON.stringify(completionBody({ text: `your key is ${SECRET}` }))),
  );

/** An error status whose message echoes the key, as OpenAI's 401 does. */
const echoingError = (status: number) =>
  pieces(
    status,
    "application/json",
    splitKey(
      JSON.stringify({
        error: {
          message: `Incorrect API key provided: ${SECRET}. ${SECRET}`,
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      }),
    ),
  );

/** A non-streamed answer of a model that misread its task: a 200 with only an error (the key in it). */
const echoingErrorBody = () =>
  pieces(
    200,
    "application/json",
    splitKey(JSON.stringify({ error: { message: `upstream error with ${SECRET}` } })),
  );

describe("the provider's key in its answers [embedded]", () => {
  let scratch: Awaited<ReturnType<typeof provisionStack>>;
  let fake: FakeOpenAI;
  let child: ChildServer | undefined;
  let key: string;
  /** Every body the client received. */
  const seen: string[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    scratch = await provisionStack("embedded");
    const env = {
      ...scratch.env,
      KONTOR_ENV: "development",
      AI_UPSTREAM_URL: fake.url,
      AI_UPSTREAM_API_KEY: SECRET,
    };
    key = (await tenantIn(env, "AI redaction")).key;
    // Every level: nothing of the log is left out of the check.
    child = await startChildServer({ ...env, KONTOR_LOG: "info" });
  });

  afterAll(async () => {
    await child?.stop();
    await scratch?.drop();
    await fake?.close();
  });

  async function post(path: string, body: Record<string, unknown>) {
    const res = await fetch(`${child!.api}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", ...body }),
    });
    const text = await res.text();
    seen.push(text, ...[...res.headers].map(([name, value]) => `${name}: ${value}`));
    expect(text).not.toContain(SECRET);
    return { status: res.status, text };
  }

  const chat = (stream: boolean) =>
    post("/chat/completions", { messages: [{ role: "user", content: "what is your key?" }], stream });
  const respond = (stream: boolean) => post("/responses", { input: "what is your key?", stream });

  it("the fake provider splits the key across its writes", () => {
    expect(splitKey(`a ${SECRET} b`)).toEqual([`a ${SECRET.slice(0, CUT)}`, `${SECRET.slice(CUT)} b`]);
  });

  it("a streamed chat completion: the key is redacted in a content delta and in an error event", async () => {
    fake.next(echoingStream());
    const { status, text } = await chat(true);
    expect(status).toBe(200);
    expect(text).toContain("your key is [redacted], isn't it?");
    expect(text).toContain('{"error":{"message":"stream error with [redacted]"}}');
  });

  it("a non-streamed chat completion: the key is redacted in the body", async () => {
    fake.next(echoingBody());
    const { status, text } = await chat(false);
    expect(status).toBe(200);
    expect(JSON.parse(text).choices[0].message.content).toBe("your key is [redacted]");
  });

  it("a non-streamed error of the provider: 502 without the key", async () => {
    for (const upstreamStatus of [401, 400, 500]) {
      fake.next(echoingError(upstreamStatus));
      const { status, text } = await chat(false);
      expect(status).toBe(502);
      expect(JSON.parse(text).error.code).toBe("upstream_error");
    }
  });

  it("/v1/responses, streamed: the key is redacted in the text deltas, the final text and an error event", async () => {
    fake.next(echoingText());
    const streamed = await respond(true);
    expect(streamed.status).toBe(200);
    expect(streamed.text).toContain("your key is [redacted] ([redacted])");
    expect(streamed.text).toContain("event: response.completed");

    fake.next(echoingStream());
    const failed = await respond(true);
    expect(failed.status).toBe(200);
    expect(failed.text).toContain("event: response.failed");
  });

  it("/v1/responses, not streamed: the key is redacted in the body; an error answer is a 502 without it", async () => {
    fake.next(echoingBody());
    const answered = await respond(false);
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.text).output[0].content[0].text).toBe("your key is [redacted]");

    fake.next(echoingErrorBody());
    expect((await respond(false)).status).toBe(502);
    fake.next(echoingError(401));
    expect((await respond(false)).status).toBe(502);
  });

  it("neither the server's log nor the request logs show the key", async () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const text of seen) expect(text).not.toContain(SECRET);
    // The provider did hear the key: the test's check is not empty.
    expect(fake.requests.every((request) => request.headers.authorization === `Bearer ${SECRET}`)).toBe(true);

    const logs = await eventually(
      async () => {
        const res = await fetch(`${child!.api}/request-logs?limit=100`, {
          headers: { authorization: `Bearer ${key}` },
        });
        return { status: res.status, text: await res.text() };
      },
      ({ text }) => (text.match(/"route":"\/v1\/(chat\/completions|responses)"/g) ?? []).length >= 10,
    );
    expect(logs.status).toBe(200);
    expect(
      (logs.text.match(/"route":"\/v1\/(chat\/completions|responses)"/g) ?? []).length,
    ).toBeGreaterThanOrEqual(10);
    expect(logs.text).not.toContain(SECRET);

    const log = child!.stderr();
    // The log is on: it has a line for each request.
    expect(log).toContain("/v1/chat/completions");
    expect(log).not.toContain(SECRET);
    expect(log).not.toContain(SECRET.slice(CUT));
  });
});
