import { upstreamError } from "./upstream.ts";

/**
 * How much of the AI provider's answer the server holds at once. A non-streamed answer is read
 * up to MAX_ANSWER_BYTES and no further; a stream is read as its client reads (backpressure), one
 * event at most MAX_EVENT_CHARS long; what a /v1/responses answer gathers (its text and tool-call
 * arguments, over every round) is at most MAX_ANSWER_BYTES characters. Past a limit the answer is
 * a 502 `upstream_error`, or, once a stream has begun, ends with an error event.
 */

/** The largest non-streamed answer (and the most text one /v1/responses answer gathers): 16 MiB. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** The longest stream event, in characters: 1 Mi. */
export const MAX_EVENT_CHARS = 1024 * 1024;
/** How much of a provider's error body is read for its message. */
export const MAX_ERROR_BYTES = 64 * 1024;

const MiB = 1024 * 1024;
const size = (bytes: number) =>
  bytes % MiB === 0 ? `${bytes / MiB} MiB` : bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;

/** 502 upstream_error: the provider's answer is larger than `limit` bytes. */
export const answerTooLarge = (limit = MAX_ANSWER_BYTES) =>
  upstreamError(`The AI provider's answer is larger than ${size(limit)}, the most Kontor reads.`);

/**
 * The body of a non-streamed answer as text (UTF-8), read chunk by chunk up to `limit` bytes:
 * past it, the rest is not read (the exchange is cancelled) and this throws `answerTooLarge`. A
 * body that breaks off is 502 upstream_error too.
 */
export async function readAnswer(response: Response, limit = MAX_ANSWER_BYTES): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>;
    try {
      next = await reader.read();
    } catch {
      throw upstreamError("The AI provider broke off its answer.");
    }
    if (next.done) break;
    length += next.value.byteLength;
    if (length > limit) {
      void reader.cancel().catch(() => {});
      throw answerTooLarge(limit);
    }
    chunks.push(next.value);
  }
  return new TextDecoder().decode(Buffer.concat(chunks));
}

const BOUNDARY = /\r?\n\r?\n/g;

/**
 * Splits an event stream's text into its events (the text between blank lines) as it arrives,
 * holding at most MAX_EVENT_CHARS of an unfinished event: a longer one throws 502 upstream_error.
 */
export class EventSplitter {
  private pending = "";
  /** How far `pending` has been searched for a boundary (a boundary is at most 4 characters). */
  private searched = 0;

  constructor(private readonly maxChars = MAX_EVENT_CHARS) {}

  /** The events `text` completes, in order. */
  push(text: string): string[] {
    this.pending += text;
    const events: string[] = [];
    let start = 0;
    BOUNDARY.lastIndex = Math.max(0, this.searched - 3);
    let end: RegExpExecArray | null;
    while ((end = BOUNDARY.exec(this.pending))) {
      events.push(this.pending.slice(start, end.index));
      start = end.index + end[0].length;
    }
    if (start > 0) this.pending = this.pending.slice(start);
    this.searched = this.pending.length;
    if (this.pending.length > this.maxChars) {
      this.pending = "";
      throw upstreamError(`The AI provider sent a stream event longer than ${this.maxChars} characters.`);
    }
    return events;
  }

  /** What is left once the stream has ended (an event without its blank line, or ""). */
  end(): string {
    const rest = this.pending;
    this.pending = "";
    this.searched = 0;
    return rest;
  }
}

/**
 * What one /v1/responses answer may gather from the provider, over every round: its text and
 * tool-call arguments, MAX_ANSWER_BYTES characters in all. `take` throws `answerTooLarge` past it.
 */
export class AnswerBudget {
  private used = 0;

  constructor(private readonly limit = MAX_ANSWER_BYTES) {}

  take(characters: number): void {
    this.used += characters;
    if (this.used > this.limit) throw answerTooLarge(this.limit);
  }
}
