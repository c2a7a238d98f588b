import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  type ErrorBody,
  type GraphQLErrorEntry,
  statusOfGraphQLError,
} from "./errors.js";
import { type CodingPlanInfo, codingPlanInfo, type RateLimitInfo, rateLimitInfo } from "./headers.js";

export type HttpMethod = "GET" | "POST" | "PATCH" | "DELETE" | "HEAD";

/** Per-call options, the last argument of every method. */
export interface RequestOptions {
  /** Milliseconds one attempt may take before it is abandoned (and retried); overrides the client's `timeout`. */
  timeout?: number;
  /** How many times to retry a failed attempt; overrides the client's `maxRetries`. */
  maxRetries?: number;
  /** Aborts the request (and its retries). */
  signal?: AbortSignal;
  /** Extra headers; `null` removes one the SDK would send. */
  headers?: Record<string, string | null | undefined>;
  /**
   * The `Idempotency-Key` of a POST. By default the SDK makes one per call and sends it with every
   * retry of that call, so a retried create never creates twice; pass your own to make a call
   * repeatable across processes.
   */
  idempotencyKey?: string;
}

/** An answer with the response it came in. */
export interface WithResponse<T> {
  data: T;
  /** The HTTP response (its body has been read, unless the method returns the response itself). */
  response: Response;
  /** `X-Request-Id` (`req_…`). */
  requestId: string | null;
  /** The `X-RateLimit-*` headers. */
  rateLimit: RateLimitInfo | null;
  /** The `x-codingplan-*` headers (AI routes metered by the coding plan). */
  codingPlan: CodingPlanInfo | null;
}

/**
 * What every method returns: a promise of the result that also offers `.withResponse()`, for the
 * raw `Response`, the request id and the rate-limit headers.
 */
export class APIPromise<T> extends Promise<T> {
  #result: Promise<WithResponse<T>>;

  constructor(result: Promise<WithResponse<T>>) {
    super((resolve) => resolve(null as T));
    this.#result = result;
  }

  /**
   * Derived promises (`then`, `catch`, `finally`) are plain promises: only the method's own promise has `withResponse()`.
   *
   * @example
   * ```ts
   * const promise = kontor.leads.retrieve("lead_…").then((lead) => lead.id);
   * // `promise` is a plain Promise<string>, not an APIPromise
   * ```
   */
  static override get [Symbol.species]() {
    return Promise;
  }

  /**
   * The result with the HTTP response, its request id and its rate-limit headers.
   *
   * @example
   * ```ts
   * const { data: lead, requestId, rateLimit } = await kontor.leads.retrieve("lead_…").withResponse();
   * console.log(requestId, rateLimit?.remaining);
   * ```
   */
  withResponse(): Promise<WithResponse<T>> {
    return this.#result;
  }

  /**
   * The HTTP response alone.
   *
   * @example
   * ```ts
   * const response = await kontor.leads.retrieve("lead_…").asResponse();
   * console.log(response.headers.get("x-request-id"));
   * ```
   */
  asResponse(): Promise<Response> {
    return this.#result.then((result) => result.response);
  }

  /**
   * Resolves with the result (`await` does the same).
   *
   * @example
   * ```ts
   * kontor.leads.retrieve("lead_…").then((lead) => console.log(lead.email));
   * ```
   */
  // biome-ignore lint/suspicious/noThenProperty: an APIPromise is awaited like the Promise it extends.
  override then<TResult1 = T, TResult2 = never>(
    onfulfilled?: ((value: T) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    return this.#result.then((result) => result.data).then(onfulfilled, onrejected);
  }

  /**
   * Handles a failed call (an `APIError` subclass, or a connection, time-out or abort error).
   *
   * @example
   * ```ts
   * kontor.leads.retrieve("lead_missing").catch((error) => error instanceof NotFoundError ? null : Promise.reject(error));
   * ```
   */
  override catch<TResult = never>(
    onrejected?: ((reason: unknown) => TResult | PromiseLike<TResult>) | null,
  ): Promise<T | TResult> {
    return this.then(undefined, onrejected);
  }

  /**
   * Runs `onfinally` when the call settles, either way.
   *
   * @example
   * ```ts
   * kontor.leads.list().finally(() => spinner.stop());
   * ```
   */
  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.#result.then((result) => result.data).finally(onfinally);
  }
}

/** How an answer's body is read. */
export type ParseAs =
  /** JSON (an empty body is null). */
  | "json"
  /** Not read: the method returns the `Response` (the time-out stops once the headers arrived). */
  | "response"
  /** GraphQL-over-HTTP: JSON with `data` and `errors`, at any status. */
  | "graphql";

export type BodyValue = Blob | ArrayBuffer | ArrayBufferView | ReadableStream<Uint8Array> | string;

export interface RequestSpec {
  method: HttpMethod;
  /** Relative to `baseUrl` (`/leads/lead_…`), or an absolute URL. */
  path: string;
  query?: Record<string, unknown> | undefined;
  /** A JSON body. */
  body?: unknown;
  /** A body sent as it is (raw uploads). */
  rawBody?: BodyValue | undefined;
  contentType?: string | undefined;
  parseAs?: ParseAs;
  /** Statuses that are answers rather than errors (besides 2xx). */
  okStatuses?: number[];
  /** Sends an `Idempotency-Key` (default: every POST). */
  idempotent?: boolean;
  options?: RequestOptions | undefined;
}

export interface CoreOptions {
  apiKey: string;
  baseUrl: string;
  maxRetries: number;
  timeout: number;
  fetch: typeof fetch;
  defaultHeaders: Record<string, string>;
  /** The longest `Retry-After` (seconds) the SDK waits for by itself; a longer one is thrown. */
  maxRetryAfter: number;
}

/**
 * A fresh idempotency key (a UUID v4 where `crypto.randomUUID` exists).
 *
 * @example
 * ```ts
 * const key = newIdempotencyKey();
 * await kontor.invoices.create(params, { idempotencyKey: key }); // safe to repeat with the same key
 * ```
 */
export function newIdempotencyKey(): string {
  const cryptoApi = (globalThis as { crypto?: Crypto }).crypto;
  if (typeof cryptoApi?.randomUUID === "function") return `kontor-sdk-${cryptoApi.randomUUID()}`;
  const bytes = new Uint8Array(16);
  if (typeof cryptoApi?.getRandomValues === "function") cryptoApi.getRandomValues(bytes);
  else for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(Math.random() * 256);
  return `kontor-sdk-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * A query string from parameters: undefined and null are left out, arrays repeat the name.
 *
 * @example
 * ```ts
 * queryString({ stage: "won", tag: ["a", "b"], cursor: undefined }); // "?stage=won&tag=a&tag=b"
 * ```
 */
export function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return "";
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) search.append(key, String(item));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new APIUserAbortError());
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new APIUserAbortError());
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/**
 * Milliseconds `Retry-After` (or `retry-after-ms`) asks for; null when absent or unreadable.
 *
 * @example
 * ```ts
 * retryAfterMs(new Headers({ "retry-after": "2" })); // 2000
 * ```
 */
export function retryAfterMs(headers: Headers): number | null {
  const ms = Number(headers.get("retry-after-ms") ?? "");
  if (headers.has("retry-after-ms") && Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get("retry-after");
  if (value === null) return null;
  const seconds = Number(value);
  if (value.trim() !== "" && Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

/**
 * Exponential back-off with jitter: about 0.5 s, 1 s, 2 s, … up to 8 s, each up to 25 % shorter.
 *
 * @example
 * ```ts
 * backoffMs(0); // about 375–500
 * backoffMs(3); // about 3000–4000
 * ```
 */
export function backoffMs(retry: number): number {
  const base = Math.min(500 * 2 ** retry, 8_000);
  return base * (1 - Math.random() * 0.25);
}

const isRetriableBody = (body: BodyValue | undefined) =>
  !(typeof ReadableStream !== "undefined" && body instanceof ReadableStream);

/** Whether a failed answer is worth another attempt. */
function retriable(error: APIError): boolean {
  if (error instanceof APIConnectionError) return true;
  const status = error.status ?? 0;
  if (status === 409) return error.code === "idempotency_in_progress";
  return status === 429 || status >= 500;
}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text.trim() === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorOf(status: number, body: unknown, headers: Headers): APIError {
  if (typeof body === "object" && body !== null) {
    const error = (body as { error?: unknown }).error;
    if (typeof error === "object" && error !== null)
      return APIError.generate(status, error as ErrorBody, undefined, headers);
    // OAuth-shaped errors (`{"error": "invalid_token", "error_description": …}`).
    if (typeof error === "string") {
      const description = (body as { error_description?: unknown }).error_description;
      return APIError.generate(
        status,
        { code: error, message: typeof description === "string" ? description : undefined },
        undefined,
        headers,
      );
    }
    const errors = (body as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      const first = errors[0] as GraphQLErrorEntry;
      return APIError.generate(status, { ...first.extensions, message: first.message }, undefined, headers, {
        graphqlErrors: errors as GraphQLErrorEntry[],
      });
    }
  }
  const text = typeof body === "string" && body ? body.slice(0, 500) : undefined;
  return APIError.generate(status, undefined, text ?? `The server answered ${status}.`, headers);
}

export class BaseClient {
  /** The options this client was made with (after the environment fallbacks). */
  protected readonly core: CoreOptions;

  constructor(core: CoreOptions) {
    this.core = core;
  }

  /**
   * The API's `{base_url}` every REST path is relative to (without a trailing slash).
   *
   * @example
   * ```ts
   * new Kontor({ apiKey, baseUrl: "https://kontor.example.com/v1/" }).baseUrl; // "https://kontor.example.com/v1"
   * ```
   */
  get baseUrl(): string {
    return this.core.baseUrl;
  }

  /**
   * How many times a failed attempt is retried by default (`RequestOptions.maxRetries` overrides it per call).
   *
   * @example
   * ```ts
   * new Kontor({ apiKey }).maxRetries; // 2
   * ```
   */
  get maxRetries(): number {
    return this.core.maxRetries;
  }

  /**
   * Milliseconds one attempt may take by default (`RequestOptions.timeout` overrides it per call).
   *
   * @example
   * ```ts
   * new Kontor({ apiKey, timeout: 10_000 }).timeout; // 10000
   * ```
   */
  get timeout(): number {
    return this.core.timeout;
  }

  /**
   * Runs one call (with its retries) and reads its answer.
   *
   * @example
   * ```ts
   * // A route the SDK has no method for yet:
   * const answer = await kontor.request<{ ok: boolean }>({ method: "GET", path: "/workspace" });
   * ```
   */
  request<T>(spec: RequestSpec): APIPromise<T> {
    return new APIPromise<T>(this.run<T>(spec));
  }

  protected url(path: string, query?: Record<string, unknown>): string {
    const absolute = /^https?:\/\//i.test(path)
      ? path
      : `${this.core.baseUrl.replace(/\/+$/, "")}${path.startsWith("/") ? "" : "/"}${path}`;
    return `${absolute}${queryString(query)}`;
  }

  private headersFor(spec: RequestSpec, idempotencyKey: string | undefined): Headers {
    const headers = new Headers();
    headers.set("authorization", `Bearer ${this.core.apiKey}`);
    headers.set("accept", spec.parseAs === "response" ? "*/*" : "application/json");
    if (spec.body !== undefined) headers.set("content-type", "application/json");
    else if (spec.rawBody !== undefined)
      headers.set("content-type", spec.contentType ?? "application/octet-stream");
    if (idempotencyKey) headers.set("idempotency-key", idempotencyKey);
    for (const [name, value] of Object.entries(this.core.defaultHeaders)) headers.set(name, value);
    for (const [name, value] of Object.entries(spec.options?.headers ?? {})) {
      if (value === null) headers.delete(name);
      else if (value !== undefined) headers.set(name, value);
    }
    return headers;
  }

  private async run<T>(spec: RequestSpec): Promise<WithResponse<T>> {
    const options = spec.options ?? {};
    const maxRetries = isRetriableBody(spec.rawBody)
      ? Math.max(0, options.maxRetries ?? this.core.maxRetries)
      : 0;
    const timeout = options.timeout ?? this.core.timeout;
    const idempotent = spec.idempotent ?? spec.method === "POST";
    // One key for the call, sent with every attempt: the server runs it once and replays the answer.
    const idempotencyKey = idempotent ? (options.idempotencyKey ?? newIdempotencyKey()) : undefined;
    const url = this.url(spec.path, spec.query);
    const headers = this.headersFor(spec, idempotencyKey);
    const body = spec.body !== undefined ? JSON.stringify(spec.body) : spec.rawBody;
    const userSignal = options.signal;

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = maxRetries - attempt;
      if (userSignal?.aborted) throw new APIUserAbortError();
      const controller = new AbortController();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeout);
      const onUserAbort = () => controller.abort();
      userSignal?.addEventListener("abort", onUserAbort, { once: true });
      const settle = () => {
        clearTimeout(timer);
        userSignal?.removeEventListener("abort", onUserAbort);
      };

      let failure: APIError;
      try {
        const init: RequestInit & { duplex?: "half" } = {
          method: spec.method,
          headers,
          signal: controller.signal,
        };
        if (body !== undefined) init.body = body as BodyInit;
        if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) init.duplex = "half";
        const response = await this.core.fetch.call(globalThis, url, init);
        const answered = (data: unknown): WithResponse<T> => ({
          data: data as T,
          response,
          requestId: response.headers.get("x-request-id"),
          rateLimit: rateLimitInfo(response.headers),
          codingPlan: codingPlanInfo(response.headers),
        });

        if (spec.parseAs === "graphql") {
          const json = await readJson(response);
          settle();
          const result = json as { data?: unknown; errors?: GraphQLErrorEntry[] } | null;
          if (
            response.ok &&
            result &&
            typeof result === "object" &&
            !(Array.isArray(result.errors) && result.errors.length > 0)
          ) {
            return answered(result);
          }
          failure = this.graphqlError(response, json);
        } else if (response.ok || spec.okStatuses?.includes(response.status)) {
          if (spec.parseAs === "response") {
            // The body is the caller's to read: the time-out ends here, the caller's signal still aborts it.
            clearTimeout(timer);
            return answered(response);
          }
          const data = spec.method === "HEAD" ? null : await readJson(response);
          settle();
          return answered(data);
        } else {
          const json = await readJson(response);
          settle();
          failure = errorOf(response.status, json, response.headers);
        }
      } catch (error) {
        settle();
        if (userSignal?.aborted) throw new APIUserAbortError();
        if (error instanceof APIError) throw error;
        failure = timedOut
          ? new APITimeoutError(timeout)
          : new APIConnectionError({
              cause: error,
              message: `Connection error: ${String((error as Error)?.message ?? error)}`,
            });
      }

      if (retriesLeft <= 0 || !retriable(failure)) throw failure;
      const asked = failure.status === undefined ? null : retryAfterMs(failure.headers);
      if (asked !== null && asked > this.core.maxRetryAfter * 1000) throw failure;
      // Honour Retry-After (never sooner), else back off exponentially with jitter.
      const wait = asked !== null ? asked + Math.random() * 100 : backoffMs(attempt);
      await sleep(wait, userSignal);
    }
  }

  private graphqlError(response: Response, json: unknown): APIError {
    const result = (typeof json === "object" && json !== null ? json : {}) as {
      data?: unknown;
      errors?: GraphQLErrorEntry[];
    };
    const errors = Array.isArray(result.errors) ? result.errors : [];
    const first = errors[0];
    if (!first) return errorOf(response.status, json, response.headers);
    const extensions: ErrorBody = { ...first.extensions, message: first.message };
    const status = response.ok ? statusOfGraphQLError(extensions) : response.status;
    return APIError.generate(status, extensions, undefined, response.headers, {
      graphqlErrors: errors,
      data: result.data ?? undefined,
    });
  }
}
