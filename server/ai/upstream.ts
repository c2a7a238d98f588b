import { ApiError } from "../../schema/lib/errors.ts";
import { Redactor } from "./redact.ts";

/** An OpenAI-compatible provider (AI_UPSTREAM_URL, e.g. `https://host/v1`, and AI_UPSTREAM_API_KEY). */
export interface ChatUpstream {
  /**
   * POSTs `body` as JSON (`JSON.stringify`: the object Kontor checked, never a client's bytes) to `{upstream}/chat/completions` and resolves with the upstream's response,
   * whatever its status, once its head has arrived (the body may still be streaming). A refused
   * connection or a broken exchange is 502 `upstream_error`; no head within the time-out is 504
   * `upstream_timeout`; `signal` (the client going away) aborts it.
   */
  chat(body: Record<string, unknown>, signal: AbortSignal): Promise<Response>;
}

export const upstreamError = (message: string) => new ApiError(502, "api_error", "upstream_error", message);
export const upstreamTimeout = (seconds: number) =>
  new ApiError(
    504,
    "api_error",
    "upstream_timeout",
    `The AI provider did not answer within ${seconds} s. Retry later.`,
  );
export const aiUnavailable = () =>
  new ApiError(
    503,
    "api_error",
    "ai_unavailable",
    "AI is not configured on this server (no AI_UPSTREAM_URL).",
    { headers: { "Retry-After": "60" } },
  );

/**
 * The provider over HTTP. Its answers come back with the key (AI_UPSTREAM_API_KEY) taken out of
 * every byte of their bodies, before anything reads them: whatever Kontor passes on or logs of an
 * answer, streamed or not, cannot hold it, even where the provider echoes it.
 */
export class HttpUpstream implements ChatUpstream {
  private readonly redactor: Redactor | undefined;

  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string | undefined,
    private readonly timeoutMs: number,
  ) {
    this.redactor = apiKey ? new Redactor(apiKey) : undefined;
  }

  async chat(body: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    const streaming = body.stream === true;
    // The time-out is for the head: a stream may then run as long as the model writes.
    const head = new AbortController();
    const timer = setTimeout(() => head.abort(), this.timeoutMs);
    try {
      const answer = await fetch(`${this.baseUrl.replace(/\/+$/, "")}/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: streaming ? "text/event-stream" : "application/json",
          ...(this.apiKey && { authorization: `Bearer ${this.apiKey}` }),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.any([signal, head.signal]),
      });
      return this.redactor ? this.redactor.response(answer) : answer;
    } catch (error) {
      if (signal.aborted) throw error;
      if (head.signal.aborted) throw upstreamTimeout(Math.round(this.timeoutMs / 1000));
      // The cause names an errno at most: never the key, which travels only in a header.
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw upstreamError(`The AI provider could not be reached${cause ? ` (${cause})` : ""}. Retry later.`);
    } finally {
      clearTimeout(timer);
    }
  }
}
