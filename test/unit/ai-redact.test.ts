import { describe, expect, it } from "vitest";
import { REDACTED, Redactor } from "../../server/ai/redact.ts";

const SECRET = "sk-proj-abc123";

/** `text` through the redactor's stream, cut into pieces at `cuts`. */
async function through(text: string, cuts: number[], secret = SECRET): Promise<string> {
  const bytes = Buffer.from(text);
  const points = [0, ...cuts, bytes.length];
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i + 1 < points.length; i++)
        controller.enqueue(new Uint8Array(bytes.subarray(points[i], points[i + 1])));
      controller.close();
    },
  });
  return new Response(source.pipeThrough(new Redactor(secret).stream())).text();
}

describe("Redactor", () => {
  const samples = [
    `data: {"error":{"message":"stream error with ${SECRET}"}}\n\n`,
    `${SECRET}${SECRET} and sk-proj-abc12 (not it) then sk-sk-proj-abc123 ${SECRET}`,
    `no key at all, but its start: sk-pro`,
    `ünïcödé ${SECRET} ✓`,
  ];

  it("replaces every occurrence, wherever the stream is cut (each cut, each pair of cuts)", async () => {
    for (const text of samples) {
      const expected = text.split(SECRET).join(REDACTED);
      const length = Buffer.byteLength(text);
      for (let a = 1; a < length; a++) {
        expect(await through(text, [a])).toBe(expected);
        for (let b = a + 1; b < Math.min(length, a + SECRET.length + 2); b++)
          expect(await through(text, [a, b])).toBe(expected);
      }
    }
  });

  it("replaces it in one-byte chunks", async () => {
    for (const text of samples) {
      const cuts = Array.from({ length: Buffer.byteLength(text) - 1 }, (_, i) => i + 1);
      expect(await through(text, cuts)).toBe(text.split(SECRET).join(REDACTED));
    }
  });

  it("holds back nothing but what could begin the key: an event's end is passed on at once", async () => {
    const redactor = new Redactor(SECRET);
    const transform = redactor.stream();
    const writer = transform.writable.getWriter();
    const reader = transform.readable.getReader();
    void writer.write(Buffer.from("data: one\n\n"));
    expect(Buffer.from((await reader.read()).value!).toString()).toBe("data: one\n\n");
    void writer.write(Buffer.from("data: sk-pr"));
    expect(Buffer.from((await reader.read()).value!).toString()).toBe("data: ");
    void writer.write(Buffer.from("ize\n\n"));
    expect(Buffer.from((await reader.read()).value!).toString()).toBe("sk-prize\n\n");
  });

  it("redacts a response's body and drops the length that no longer holds", async () => {
    const body = JSON.stringify({ error: { message: `Incorrect API key provided: ${SECRET}` } });
    const answer = new Redactor(SECRET).response(
      new Response(body, {
        status: 401,
        headers: { "content-type": "application/json", "content-length": String(body.length) },
      }),
    );
    expect(answer.status).toBe(401);
    expect(answer.headers.get("content-length")).toBeNull();
    expect(await answer.text()).toBe(
      JSON.stringify({ error: { message: `Incorrect API key provided: ${REDACTED}` } }),
    );
  });
});
