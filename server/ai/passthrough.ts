import { isApiError } from "../../schema/lib/errors.ts";
import { EventSplitter, MAX_ERROR_BYTES, readAnswer } from "./limits.ts";
import { tokenCount } from "./tokens.ts";
import { upstreamError } from "./upstream.ts";

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

/**
 * `usage` of a chat completion (or of a stream's last chunk) as tokens in and out, each a count
 * Kontor can record (tokenCount: `1e308` is clamped, `-5` counts 0); null when neither is a number.
 */
export function chatUsage(value: unknown): Usage | null {
  const usage = (value as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } } | null)?.usage;
  if (!usage || (typeof usage.prompt_tokens !== "number" && typeof usage.completion_tokens !== "number"))
    return null;
  return {
    input_tokens: tokenCount(usage.prompt_tokens),
    output_tokens: tokenCount(usage.completion_tokens),
  };
}

/** A short, plain message from a provider's error body, or null: nothing else of it is passed on. */
export function upstreamMessage(text: string): string | null {
  try {
    const message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (
      typeof message === "string" &&
      message.length <= 500 &&
      !/bearer|api[_ -]?key|sk-[a-z0-9]/i.test(message)
    )
      return message;
  } catch {
    // not JSON
  }
  return null;
}

/** The provider refused the request itself (400, 404, 422): the caller's input, as a 400 the caller can read. */
export async function providerFailure(response: Response): Promise<Error> {
  // Its message is all that is read of it: a longer body is not read to its end.
  const text = await readAnswer(response, MAX_ERROR_BYTES).catch(() => "");
  const message = upstreamMessage(text);
  const status = response.status;
  const detail = message ? `: ${message}` : "";
  return upstreamError(`The AI provider answered ${status}${detail}`);
}

/**
 * Passes a chat-completion event stream through as it arrives, event by event. The last chunk's
 * `usage` is read on the way (Kontor asks for it) and dropped when the client did not ask for it.
 * An event longer than MAX_EVENT_CHARS ends the stream with an error event.
 */
export function passStream(
  body: ReadableStream<Uint8Array>,
  keepUsage: boolean,
  done: (usage: Usage | null) => void,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const events = new EventSplitter();
  let usage: Usage | null = null;
  let finished = false;
  let enqueued = 0;
  const finish = () => {
    if (finished) return;
    finished = true;
    done(usage);
  };
  const forward = (event: string, controller: ReadableStreamDefaultController<Uint8Array>) => {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data && data !== "[DONE]") {
      try {
        const chunk = JSON.parse(data) as { choices?: unknown[] };
        const found = chatUsage(chunk);
        if (found) {
          usage = found;
          // The usage-only chunk (no choices) exists because Kontor asked for it.
          if (!keepUsage && Array.isArray(chunk.choices) && chunk.choices.length === 0) return;
          if (!keepUsage) {
            delete (chunk as { usage?: unknown }).usage;
            controller.enqueue(encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`));
            enqueued++;
            return;
          }
        }
      } catch {
        // not JSON: passed on as it came
      }
    }
    controller.enqueue(encoder.encode(`${event}\n\n`));
    enqueued++;
  };
  const reader = body.getReader();
  // Pulled, not piped: a read only happens when the client takes the last one, and whatever
  // ends the stream (its end, an error, the client leaving) gives the coding slot back. A read
  // that completes no event (half an event, or the dropped usage chunk) reads on: a pull that
  // enqueues nothing is never called again.
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const before = enqueued;
      try {
        while (enqueued === before) {
          const { done: ended, value } = await reader.read();
          if (ended) {
            for (const event of events.push(decoder.decode())) forward(event, controller);
            const rest = events.end();
            if (rest.trim()) forward(rest, controller);
            finish();
            controller.close();
            return;
          }
          for (const event of events.push(decoder.decode(value, { stream: true })))
            forward(event, controller);
        }
      } catch (failure) {
        // The provider broke off (or the client left, which aborted it), or sent an event past the
        // limit: the stream ends with an error event, as OpenAI's do, rather than hanging or
        // tearing the connection down, and the provider's answer is read no further.
        finish();
        void reader.cancel().catch(() => {});
        const message = isApiError(failure) ? failure.message : "The AI provider broke off the stream.";
        const error = { error: { type: "api_error", code: "upstream_error", message } };
        try {
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(error)}\n\n`));
          controller.close();
        } catch {
          // already closed by a cancel
        }
      }
    },
    async cancel(reason) {
      finish();
      await reader.cancel(reason).catch(() => {});
    },
  });
}
