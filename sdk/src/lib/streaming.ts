/**
 * A server-sent-event stream (`stream: true` on the AI routes): iterate it with `for await` for
 * each event's parsed `data`, until `data: [DONE]` or the end of the body.
 */
export class Stream<Event> implements AsyncIterable<Event> {
  /** The HTTP response the events arrive in. */
  readonly response: Response;
  readonly #controller: AbortController | undefined;

  constructor(response: Response, controller?: AbortController) {
    this.response = response;
    this.#controller = controller;
  }

  /**
   * Stops reading and closes the connection.
   *
   * @example
   * ```ts
   * const stream = await kontor.chat.completions.create({ ...params, stream: true });
   * setTimeout(() => stream.abort(), 5_000);
   * ```
   */
  abort(): void {
    this.#controller?.abort();
    void this.response.body?.cancel().catch(() => {});
  }

  /**
   * Each event of the stream (server-sent events, parsed from JSON), until the server ends it or `abort()`.
   *
   * @example
   * ```ts
   * for await (const event of await kontor.responses.create({ ...params, stream: true })) {
   *   if (event.type === "response.output_text.delta") process.stdout.write(event.delta);
   * }
   * ```
   */
  async *[Symbol.asyncIterator](): AsyncGenerator<Event, void, undefined> {
    const body = this.response.body;
    if (!body) return;
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let data: string[] = [];
    let done = false;
    try {
      while (!done) {
        const chunk = await reader.read();
        if (chunk.done) {
          buffer += decoder.decode();
          done = true;
        } else {
          buffer += decoder.decode(chunk.value, { stream: true });
        }
        const lines = buffer.split(/\r\n|\r|\n/);
        // The last piece may be an unfinished line, unless the body has ended.
        buffer = done ? "" : (lines.pop() ?? "");
        for (const line of done ? [...lines, ""] : lines) {
          if (line === "") {
            if (data.length === 0) continue;
            const text = data.join("\n");
            data = [];
            if (text === "[DONE]") return;
            yield JSON.parse(text) as Event;
          } else if (line.startsWith("data:")) {
            data.push(line.slice(line.charAt(5) === " " ? 6 : 5));
          }
          // `event:`, `id:`, `retry:` and comments carry nothing the parsed data does not.
        }
      }
    } finally {
      reader.releaseLock();
      if (!done) void body.cancel().catch(() => {});
    }
  }
}
