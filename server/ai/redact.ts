/** What stands in for the provider's key wherever the provider echoed it. */
export const REDACTED = "[redacted]";

const viewOf = (chunk: Uint8Array) => Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Takes a secret (AI_UPSTREAM_API_KEY) out of what the provider sends, before anything reads it:
 * every occurrence becomes `[redacted]`, in a stream as it flows. The end of a chunk that could be
 * the start of the secret is held until the next chunk tells, so a secret split across two chunks
 * is caught too; nothing else is held (an event's last bytes are not delayed).
 */
export class Redactor {
  private readonly needle: Buffer;
  private readonly replacement = Buffer.from(REDACTED);

  constructor(secret: string) {
    if (!secret) throw new Error("Redactor needs a secret");
    this.needle = Buffer.from(secret, "utf8");
  }

  /** A transform that passes bytes on without the secret, holding at most its length less one. */
  stream(): TransformStream<Uint8Array, Uint8Array> {
    let held: Buffer | undefined;
    return new TransformStream<Uint8Array, Uint8Array>({
      transform: (chunk, controller) => {
        const input = held ? Buffer.concat([held, chunk]) : viewOf(chunk);
        let from = 0;
        const parts: Buffer[] = [];
        for (let at = input.indexOf(this.needle); at !== -1; at = input.indexOf(this.needle, from)) {
          parts.push(input.subarray(from, at), this.replacement);
          from = at + this.needle.length;
        }
        const keep = this.startOfPartial(input, from);
        held = keep < input.length ? Buffer.from(input.subarray(keep)) : undefined;
        if (from === 0 && keep === input.length) return controller.enqueue(input);
        parts.push(input.subarray(from, keep));
        const out = Buffer.concat(parts);
        if (out.length > 0) controller.enqueue(out);
      },
      flush: (controller) => {
        if (held) controller.enqueue(held);
        held = undefined;
      },
    });
  }

  /** `response` with its body passed through `stream()` (and without the length that no longer holds). */
  response(response: Response): Response {
    if (!response.body) return response;
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    // fetch has already decoded the body.
    headers.delete("content-encoding");
    return new Response(response.body.pipeThrough(this.stream()), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }

  /** Where the longest end of `input` (from `from` on) that begins the secret starts; `input.length` if none does. */
  private startOfPartial(input: Buffer, from: number): number {
    const first = this.needle[0];
    for (let i = Math.max(from, input.length - this.needle.length + 1); i < input.length; i++) {
      if (input[i] === first && input.subarray(i).equals(this.needle.subarray(0, input.length - i))) return i;
    }
    return input.length;
  }
}
