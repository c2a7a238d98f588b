import { describe, expect, it } from "vitest";
import { isApiError } from "../../schema/lib/errors.ts";
import { AnswerBudget, EventSplitter, readAnswer } from "../../server/ai/limits.ts";

/** A body of `count` chunks of `size` bytes, counting how many were pulled and whether it was cancelled. */
function body(count: number, size: number) {
  const state = { pulled: 0, cancelled: false };
  const chunk = new Uint8Array(size).fill(0x78);
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (state.pulled++ === count) return controller.close();
      controller.enqueue(chunk);
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { response: new Response(stream), state };
}

describe("readAnswer", () => {
  it("reads an answer up to the limit", async () => {
    const { response } = body(4, 1024);
    expect(await readAnswer(response, 4096)).toBe("x".repeat(4096));
  });

  it("stops reading past the limit: 502 upstream_error, the rest not read", async () => {
    const { response, state } = body(1000, 1024);
    const error = await readAnswer(response, 4096).catch((e: unknown) => e);
    expect(isApiError(error) && error.status === 502 && error.code === "upstream_error").toBe(true);
    expect((error as Error).message).toMatch(/larger than 4 KiB/);
    expect(state.pulled).toBeLessThan(10);
    expect(state.cancelled).toBe(true);
  });
});

describe("EventSplitter", () => {
  it("splits on blank lines, whatever the pieces, \\r\\n included", () => {
    const text = "data: a\n\ndata: b\r\n\r\ndata: c\n\n: comment\r\n\r\ndata: d";
    for (let cut = 0; cut <= text.length; cut++) {
      for (let cut2 = cut; cut2 <= text.length; cut2 += 3) {
        const splitter = new EventSplitter();
        const events = [
          ...splitter.push(text.slice(0, cut)),
          ...splitter.push(text.slice(cut, cut2)),
          ...splitter.push(text.slice(cut2)),
        ];
        expect([...events, splitter.end()]).toEqual([
          "data: a",
          "data: b",
          "data: c",
          ": comment",
          "data: d",
        ]);
      }
    }
  });

  it("refuses an event longer than its limit, however it arrives", () => {
    const splitter = new EventSplitter(100);
    expect(splitter.push("data: ".padEnd(60, "x"))).toEqual([]);
    expect(() => splitter.push("x".repeat(60))).toThrow(/longer than 100 characters/);
    // Events under the limit pass, however many there are.
    const many = new EventSplitter(100);
    expect(many.push("data: ok\n\n".repeat(1000))).toHaveLength(1000);
  });
});

describe("AnswerBudget", () => {
  it("takes up to its limit, then throws 502 upstream_error", () => {
    const budget = new AnswerBudget(10);
    budget.take(6);
    budget.take(4);
    expect(() => budget.take(1)).toThrow(/larger than 10 bytes/);
  });
});
