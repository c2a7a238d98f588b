import http from "node:http";
import https from "node:https";
import { StringDecoder } from "node:string_decoder";
import {
  checkWebhookTarget,
  guardedLookup,
  hostAddress,
  type LookupAll,
  parseWebhookUrl,
  UrlNotAllowedError,
} from "./url-policy.ts";

export type SendError =
  | "timeout"
  | "connection_refused"
  | "dns_failure"
  | "address_not_allowed"
  | "tls_error"
  | "connection_reset"
  | "invalid_url"
  | "network_error";

/**
 * One delivery attempt. `ok` means a 2xx status arrived within timeoutMs. `error` is null for a
 * response read to its end (or to maxBodyBytes); when the body is cut short after the status
 * arrived (it stalled past timeoutMs: "timeout", or the connection dropped: "connection_reset"),
 * status, ok and the bytes read are kept and `error` says why the body is partial: the receiver
 * has already answered, and a retry would deliver the event twice.
 */
export interface SendResult {
  ok: boolean;
  status: number | null;
  body: string | null;
  /** Whole milliseconds from the call to the response headers, or to the failure. */
  durationMs: number;
  error: SendError | null;
  errorMessage: string | null;
}

export interface SendOptions {
  timeoutMs: number;
  production: boolean;
  lookup?: LookupAll;
  /** How much of the response body is kept; default 2048. */
  maxBodyBytes?: number;
}

export const USER_AGENT = "Kontor-Webhooks/1.0";
export const DEFAULT_MAX_BODY_BYTES = 2048;

interface Agents {
  "http:": http.Agent;
  "https:": https.Agent;
}

/**
 * Node's HTTP client leaves a socket without any 'error' listener at several hand-offs (its
 * sources mark them with TODOs), and a socket error emitted then kills the process. The one that
 * happens: a receiver answers (413, 400…) and then closes while a large body is still being
 * written. The failed write calls the request's finish callback with the EPIPE error, which
 * `onFinish` ignores, so 'finish' is emitted, `requestOnFinish` hands the socket back to the pool
 * (removing the request's 'error' listener), and the EPIPE 'error' queued by the same failure is
 * emitted on a socket nobody listens to. Every socket our pools create therefore keeps a listener
 * of its own for its whole life; the failures it absorbs reach the request as well, or concern a
 * socket no request uses any more.
 */
const absorbSocketError = () => {};

class GuardedHttpAgent extends http.Agent {
  override createConnection(
    ...args: Parameters<http.Agent["createConnection"]>
  ): ReturnType<http.Agent["createConnection"]> {
    const socket = super.createConnection(...args);
    socket?.on("error", absorbSocketError);
    return socket;
  }
}

class GuardedHttpsAgent extends https.Agent {
  override createConnection(
    ...args: Parameters<https.Agent["createConnection"]>
  ): ReturnType<https.Agent["createConnection"]> {
    const socket = super.createConnection(...args);
    socket?.on("error", absorbSocketError);
    return socket;
  }
}

// Keep-alive pools carry the address policy in their `lookup` (agent options override request
// options in node:http), so pools are never shared between policies: one per production flag,
// and per injected lookup so a test's or operator's resolver never reuses another's sockets.
const defaultPools = new Map<boolean, Agents>();
const injectedPools = new WeakMap<LookupAll, Map<boolean, Agents>>();

function agentsFor(options: SendOptions): Agents {
  let pools = defaultPools;
  if (options.lookup) {
    pools = injectedPools.get(options.lookup) ?? new Map<boolean, Agents>();
    injectedPools.set(options.lookup, pools);
  }
  let agents = pools.get(options.production);
  if (!agents) {
    const policy = { production: options.production, ...(options.lookup ? { lookup: options.lookup } : {}) };
    const pool = { keepAlive: true, maxSockets: 64, lookup: guardedLookup(policy) };
    agents = { "http:": new GuardedHttpAgent(pool), "https:": new GuardedHttpsAgent(pool) };
    pools.set(options.production, agents);
  }
  return agents;
}

function requestHeaders(headers: Record<string, string>, contentLength: number): Record<string, string> {
  const out: Record<string, string> = {};
  let hasUserAgent = false;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === "content-type" || lower === "content-length") continue;
    if (lower === "user-agent") hasUserAgent = true;
    out[name] = value;
  }
  if (!hasUserAgent) out["User-Agent"] = USER_AGENT;
  out["Content-Type"] = "application/json";
  out["Content-Length"] = String(contentLength);
  return out;
}

const DNS_CODES = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_FAIL",
  "EAI_NONAME",
  "ENODATA",
  "ESERVFAIL",
  "ENONAME",
]);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|EPROTO$)|CERT|^UNABLE_TO_|^INVALID_CA$|^PATH_LENGTH_EXCEEDED$/;

type ErrnoLike = NodeJS.ErrnoException & { errors?: unknown[] };

function classify(error: unknown): { error: SendError; message: string } {
  if (error instanceof UrlNotAllowedError) {
    const kind: SendError =
      error.reason === "blocked_address" || error.reason === "localhost"
        ? "address_not_allowed"
        : error.reason === "unresolvable"
          ? "dns_failure"
          : "invalid_url";
    return { error: kind, message: error.message };
  }
  const e = (error ?? {}) as ErrnoLike;
  // autoSelectFamily reports every failed address in one AggregateError, whose message is empty.
  const inner = (e.errors ?? []) as ErrnoLike[];
  const code = e.code ?? inner[0]?.code ?? "";
  // OpenSSL messages end in a newline.
  const message = (e.message || inner.map((x) => x.message).join("; ") || code || "request failed").trim();
  if (code === "EADDRNOTALLOWED") return { error: "address_not_allowed", message };
  if (code === "ECONNREFUSED") return { error: "connection_refused", message };
  if (code === "ECONNRESET" || code === "EPIPE") return { error: "connection_reset", message };
  if (code === "ETIMEDOUT") return { error: "timeout", message };
  if (DNS_CODES.has(code) || e.syscall === "getaddrinfo") return { error: "dns_failure", message };
  if (TLS_CODE.test(code)) return { error: "tls_error", message };
  return { error: "network_error", message };
}

function failure(durationMs: number, error: SendError, message: string): SendResult {
  return { ok: false, status: null, body: null, durationMs, error, errorMessage: message };
}

interface Attempt {
  result: SendResult;
  /** A pooled socket the receiver had already closed: nothing was answered, one retry is safe. */
  staleSocket: boolean;
}

function attempt(
  target: URL,
  payload: string,
  headers: Record<string, string>,
  options: SendOptions,
  started: number,
): Promise<Attempt> {
  const elapsed = () => Math.round(performance.now() - started);
  const maxBody = Math.max(0, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  return new Promise((resolve) => {
    let req: http.ClientRequest;
    try {
      const transport = target.protocol === "https:" ? https : http;
      req = transport.request(target, {
        method: "POST",
        agent: agentsFor(options)[target.protocol as keyof Agents],
        headers: requestHeaders(headers, Buffer.byteLength(payload)),
      });
    } catch (error) {
      // e.g. a header value with a newline in it
      const { error: kind, message } = classify(error);
      resolve({ result: failure(elapsed(), kind, message), staleSocket: false });
      return;
    }

    let settled = false;
    let status: number | null = null;
    let headersMs = 0;
    const chunks: Buffer[] = [];
    let received = 0;

    const settle = (result: SendResult, staleSocket = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // An answer before the whole body was sent (413 at once…): the rest would be sent for nothing.
      if (!req.writableFinished) req.destroy();
      resolve({ result, staleSocket });
    };
    const answered = (
      bodyEnded: boolean,
      error: SendError | null = null,
      message: string | null = null,
    ): SendResult => {
      const bytes = Buffer.concat(chunks);
      // A cut body may end inside a UTF-8 sequence: StringDecoder.write holds those bytes back.
      const body = bodyEnded ? bytes.toString("utf8") : new StringDecoder("utf8").write(bytes);
      const ok = status !== null && status >= 200 && status < 300;
      return { ok, status, body, durationMs: headersMs, error, errorMessage: message };
    };

    const remaining = Math.max(0, started + options.timeoutMs - performance.now());
    const timer = setTimeout(() => {
      settle(
        status === null
          ? failure(elapsed(), "timeout", `no response within ${options.timeoutMs} ms.`)
          : answered(
              false,
              "timeout",
              `the response body did not end within ${options.timeoutMs} ms; kept the first ${received} bytes.`,
            ),
      );
      req.destroy();
    }, remaining);

    req.on("error", (error: NodeJS.ErrnoException) => {
      if (status !== null) return; // the response's own events report a failure after the headers
      const { error: kind, message } = classify(error);
      const stale = req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE");
      settle(failure(elapsed(), kind, message), stale);
    });

    req.on("response", (res) => {
      status = res.statusCode ?? null;
      headersMs = elapsed();
      const full = () => {
        settle(answered(false));
        res.destroy(); // never download more than we keep
      };
      if (maxBody === 0) return full();
      res.on("data", (chunk: Buffer) => {
        if (settled) return;
        const take = Math.min(chunk.length, maxBody - received);
        chunks.push(take < chunk.length ? chunk.subarray(0, take) : chunk);
        received += take;
        if (received >= maxBody) full();
      });
      res.on("end", () => settle(answered(true)));
      res.on("error", (error) => {
        const { error: kind, message } = classify(error);
        settle(answered(false, kind, message));
      });
      res.on("close", () =>
        settle(answered(false, "connection_reset", "the connection closed before the response body ended.")),
      );
    });

    req.end(payload);
  });
}

/** POSTs a JSON body once, never following redirects. Never throws: every failure is a SendResult. */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  let target: URL;
  try {
    target = parseWebhookUrl(url, options);
    // An IP literal is connected to without any lookup, so guardedLookup never sees it: check it here.
    if (hostAddress(target) !== null) await checkWebhookTarget(target, options);
  } catch (error) {
    const { error: kind, message } = classify(error);
    return failure(Math.round(performance.now() - started), kind, message);
  }
  // Each stale failure discards that pooled socket, and a fresh socket is never stale: this ends.
  for (;;) {
    const { result, staleSocket } = await attempt(target, body, headers, options, started);
    if (!staleSocket || performance.now() - started >= options.timeoutMs) return result;
  }
}
