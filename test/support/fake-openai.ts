import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * An OpenAI-compatible provider on loopback for the AI routes' tests. Every request is recorded
 * (raw body, parsed JSON, whether the caller went away before the answer was finished); each
 * request is answered by the next queued handler, else by the default one.
 */

export interface FakeRequest {
  method: string;
  /** The path and query as received (`/v1/chat/completions`). */
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received. */
  body: string;
  /** The parsed body, or null when it is not JSON. */
  json: any;
  /** The caller closed the exchange before the answer was finished. */
  aborted: boolean;
  /** The answer was sent completely. */
  finished: boolean;
  /** Resolves when the exchange is over: `true` if the caller aborted it, `false` if the answer was finished. */
  settled: Promise<boolean>;
  at: number;
}

export type Handler = (request: FakeRequest, res: ServerResponse) => void | Promise<void>;

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1`: what AI_UPSTREAM_URL takes. */
  url: string;
  requests: FakeRequest[];
  /** Queues a handler for the next request (handlers queue up in order). */
  next(handler: Handler): void;
  /** The handler for requests no queued handler is waiting for (default: a small completion). */
  setDefault(handler: Handler): void;
  /** Resolves with the `index`-th request (0-based) once it has arrived (bounded wait). */
  request(index: number, timeoutMs?: number): Promise<FakeRequest>;
  close(): Promise<void>;
}

/** A promise the test opens when it wants the fake to go on. */
export interface Gate {
  promise: Promise<void>;
  open(): void;
  readonly opened: boolean;
}

export function gate(): Gate {
  let open!: () => void;
  let opened = false;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return {
    promise,
    open: () => {
      opened = true;
      open();
    },
    get opened() {
      return opened;
    },
  };
}

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export const usageOf = (prompt: number, completion: number): ChatUsage => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

let sequence = 0;
const completionId = () => `chatcmpl-fake${++sequence}`;
const CREATED = 1_760_000_000;

/** A chat.completion object as OpenAI answers it. */
export function completionBody(
  options: { text?: string; usage?: ChatUsage | null; model?: string; extra?: Record<string, unknown> } = {},
) {
  return {
    id: completionId(),
    object: "chat.completion",
    created: CREATED,
    model: options.model ?? "gpt-4o-mini-2024-07-18",
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: options.text ?? "Hello!", refusal: null },
        logprobs: null,
        finish_reason: "stop",
      },
    ],
    ...(options.usage !== null && { usage: options.usage ?? usageOf(9, 3) }),
    system_fingerprint: "fp_fake",
    ...options.extra,
  };
}

const writeRaw = (res: ServerResponse, text: string) => {
  if (!res.destroyed && !res.writableEnded) res.write(text);
};

/** A JSON completion: 200 with `completionBody(options)`, or `options.raw` byte for byte. */
export function completion(
  options: {
    text?: string;
    usage?: ChatUsage | null;
    model?: string;
    extra?: Record<string, unknown>;
    raw?: string;
  } = {},
): Handler {
  return (_request, res) => {
    const text = options.raw ?? JSON.stringify(completionBody(options));
    res.writeHead(200, {
      "content-type": "application/json",
      "x-request-id": "req_upstream_fake",
      "openai-processing-ms": "12",
    });
    res.end(text);
  };
}

export interface StreamOptions {
  /** The content deltas, one chunk each (after a first chunk with the role). */
  deltas: string[];
  /** The usage of the final usage chunk, sent when the request asked for it (stream_options.include_usage). */
  usage?: ChatUsage;
  model?: string;
  /** Hold the stream after this many events (the role chunk counts as the first) until `gate` opens. */
  holdAfter?: number;
  gate?: Promise<void>;
  /** The provider's pace: this long between writes (default: the next turn of the event loop). */
  gapMs?: number;
  /** Each event in two writes, `gapMs` apart (a read on the other side may then end mid-event). */
  splitEvents?: boolean;
  /** Send `usage: null` on every chunk when usage was asked for, as OpenAI does. */
  nullUsage?: boolean;
  /** Cut the connection (no end, no [DONE]) after writing this many events. */
  dropAfter?: number;
  /** Called with each event's text right after it was written. */
  onEvent?: (event: string, index: number) => void;
}

/** The events (each `data: …\n\n`) a stream handler writes for `request`. */
export function streamEvents(request: FakeRequest, options: StreamOptions): string[] {
  const id = completionId();
  const model = options.model ?? "gpt-4o-mini-2024-07-18";
  const wantsUsage = request.json?.stream_options?.include_usage === true;
  const base = {
    id,
    object: "chat.completion.chunk",
    created: CREATED,
    model,
    system_fingerprint: "fp_fake",
  };
  const nullUsage = wantsUsage && options.nullUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...nullUsage,
  });
  const events = [
    chunk({ role: "assistant", content: "", refusal: null }, null),
    ...options.deltas.map((content) => chunk({ content }, null)),
    chunk({}, "stop"),
  ].map((value) => `data: ${JSON.stringify(value)}\n\n`);
  if (wantsUsage)
    events.push(
      `data: ${JSON.stringify({ ...base, choices: [], usage: options.usage ?? usageOf(9, 3) })}\n\n`,
    );
  events.push("data: [DONE]\n\n");
  return events;
}

/** An SSE chat-completion stream; its pace is the test's when `holdAfter` and `gate` are given. */
export function stream(options: StreamOptions): Handler {
  return async (request, res) => {
    const events = streamEvents(request, options);
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    res.flushHeaders();
    const pace = () =>
      new Promise((resolve) => (options.gapMs ? setTimeout(resolve, options.gapMs) : setImmediate(resolve)));
    for (const [index, event] of events.entries()) {
      if (options.dropAfter !== undefined && index === options.dropAfter) return void res.socket?.destroy();
      if (options.holdAfter !== undefined && index === options.holdAfter && options.gate) {
        await Promise.race([options.gate, request.settled]);
      }
      if (res.destroyed) return;
      if (options.splitEvents) {
        const half = Math.floor(event.length / 2);
        writeRaw(res, event.slice(0, half));
        await pace();
        writeRaw(res, event.slice(half));
      } else writeRaw(res, event);
      options.onEvent?.(event, index);
      // Each event its own write on the wire: the next one leaves on a later turn of the loop.
      await pace();
    }
    if (!res.destroyed) res.end();
  };
}

/** An error status with OpenAI's error body. */
export function error(
  status: number,
  message: string,
  options: { type?: string; code?: string | null; param?: string | null } = {},
): Handler {
  return (_request, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        error: {
          message,
          type: options.type ?? "invalid_request_error",
          param: options.param ?? null,
          code: options.code ?? null,
        },
      }),
    );
  };
}

/** `text` with `status` (default 200) and a content type that need not be honest. */
export function garbage(
  text = "<html><body>502 Bad Gateway</body></html>",
  options: { status?: number; contentType?: string } = {},
): Handler {
  return (_request, res) => {
    res.writeHead(options.status ?? 200, { "content-type": options.contentType ?? "text/html" });
    res.end(text);
  };
}

/** Never answers: not even the head. */
export function hang(): Handler {
  return () => {};
}

/** Sends a 200 head (and `partial`, if given), then never finishes the body. */
export function headThenHang(options: { contentType?: string; partial?: string } = {}): Handler {
  return (_request, res) => {
    res.writeHead(200, { "content-type": options.contentType ?? "application/json" });
    res.flushHeaders();
    if (options.partial) res.write(options.partial);
  };
}

/** Sends a 200 head and `partial`, then cuts the connection. */
export function headThenDrop(options: { contentType?: string; partial?: string } = {}): Handler {
  return (_request, res) => {
    res.writeHead(200, { "content-type": options.contentType ?? "application/json" });
    res.flushHeaders();
    res.write(options.partial ?? '{"id": "chatcmpl-cut", "object": "chat.comp', () => res.socket?.destroy());
  };
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: FakeRequest[] = [];
  const queue: Handler[] = [];
  let fallback: Handler = completion();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let settle!: (aborted: boolean) => void;
    const record: FakeRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: "",
      json: null,
      aborted: false,
      finished: false,
      settled: new Promise<boolean>((resolve) => (settle = resolve)),
      at: Date.now(),
    };
    // The response's close before its end is the caller leaving (a request's own 'close' only means its body was read).
    res.on("close", () => {
      if (res.writableFinished) record.finished = true;
      else record.aborted = true;
      settle(record.aborted);
    });
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", () => {});
    res.on("error", () => {});
    req.on("end", () => {
      record.body = Buffer.concat(chunks).toString("utf8");
      try {
        record.json = JSON.parse(record.body);
      } catch {
        record.json = null;
      }
      requests.push(record);
      const handler = queue.shift() ?? fallback;
      Promise.resolve()
        .then(() => handler(record, res))
        .catch((failure: unknown) => {
          if (res.headersSent) return void res.destroy();
          res.writeHead(500, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              error: {
                message: `fake handler failed: ${String(failure)}`,
                type: "server_error",
                param: null,
                code: null,
              },
            }),
          );
        });
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    next: (handler) => void queue.push(handler),
    setDefault: (handler) => void (fallback = handler),
    async request(index, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length <= index) {
        if (Date.now() > deadline)
          throw new Error(
            `the fake provider got ${requests.length} requests, not ${index + 1}, within ${timeoutMs} ms`,
          );
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return requests[index]!;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
