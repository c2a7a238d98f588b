import { AgentAuthError } from "./errors.js";
import type { FetchLike } from "./options.js";

/** The small HTTP and JSON helpers the agent flow's requests share. */

/** Whether a parsed JSON value is an object (not null, not an array). */
export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A JSON object from a body's text; undefined for anything else (an OAuth answer is always an object).
 *
 * @example
 * ```ts
 * parseObject('{"error":"slow_down"}'); // { error: "slow_down" }
 * parseObject("[1]"); // undefined
 * ```
 */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A scope parameter as the protocol sends it: space-separated. */
export const scopeString = (scope: string | string[] | undefined) =>
  Array.isArray(scope) ? scope.join(" ") : scope;

/**
 * `error: error_description` of an OAuth error body, else `fallback`.
 *
 * @example
 * ```ts
 * describe({ error: "invalid_grant", error_description: "The code expired." }, "fallback"); // "invalid_grant: The code expired."
 * ```
 */
export function describe(body: Record<string, unknown> | undefined, fallback: string): string {
  const description = typeof body?.error_description === "string" ? body.error_description : undefined;
  const code = typeof body?.error === "string" ? body.error : undefined;
  return code ? `${code}: ${description ?? fallback}` : fallback;
}

/**
 * A timer that the signal aborts (rejecting with the signal's reason): the default wait between polls.
 *
 * @example
 * ```ts
 * await abortableSleep(5_000, AbortSignal.timeout(1_000)); // rejects after 1 s with the TimeoutError
 * ```
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A JSON document that `url` answers with 200, or undefined (discovery tries the next candidate).
 *
 * @example
 * ```ts
 * const metadata = await getJson(fetch, "https://kontor.example.com/.well-known/oauth-protected-resource/v1");
 * ```
 */
export async function getJson(
  fetchImpl: FetchLike,
  url: string,
): Promise<Record<string, unknown> | undefined> {
  const response = await fetchImpl(url, { headers: { accept: "application/json" } });
  const text = await response.text();
  if (response.status !== 200) return undefined;
  return parseObject(text);
}

/**
 * POSTs JSON and returns the 200 answer's object; anything else throws the server's OAuth error.
 *
 * @example
 * ```ts
 * const registration = await postJson(fetch, identityEndpoint, { type: "anonymous" });
 * ```
 */
export async function postJson(
  fetchImpl: FetchLike,
  url: string,
  body: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const response = await fetchImpl(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = parseObject(text);
  if (response.status !== 200 || !parsed) {
    const code = typeof parsed?.error === "string" ? parsed.error : "invalid_response";
    throw new AgentAuthError(code, describe(parsed, `${url} answered ${response.status}.`), {
      status: response.status,
      ...(parsed && { body: parsed }),
    });
  }
  return parsed;
}
