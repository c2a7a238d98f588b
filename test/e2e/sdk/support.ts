import { APIError, type ClientOptions, Kontor } from "@kontor/sdk";
import { expect } from "vitest";
import { checkAgainstOpenApi } from "../../support/openapi-check.ts";
import type { TestServer } from "../../support/server.ts";

/** What the SDK suites against a live server share (client, namespaces, errors). */

export const REQUEST_ID = /^req_[0-9A-Z]{26}$/;

/** A fetch that checks every `/v1` answer against the served OpenAPI document, then hands it on unread. */
export const checkedFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (!new URL(url).pathname.startsWith("/v1/")) return response;
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) return response;
  const method = (init?.method ?? "GET").toUpperCase();
  const bytes = new Uint8Array(await response.arrayBuffer());
  await checkAgainstOpenApi(method, url, {
    status: response.status,
    headers: response.headers,
    text: new TextDecoder().decode(bytes),
  });
  const empty = method === "HEAD" || [204, 304].includes(response.status);
  return new Response(empty ? null : bytes, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
};

/** An answer's error, or a failure when it succeeded. */
export async function failure(promise: Promise<unknown>): Promise<APIError> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!("error" in outcome))
    throw new Error(`expected an error, got ${JSON.stringify(outcome.value).slice(0, 300)}`);
  expect(outcome.error).toBeInstanceOf(APIError);
  return outcome.error as APIError;
}

/** A client of the suite's server for `apiKey`, whose every answer is checked by `checkedFetch`: called inside `e2e(...)` with its server getter. */
export function sdkFor(server: () => TestServer) {
  return (apiKey: string, options: ClientOptions = {}) =>
    new Kontor({ apiKey, baseUrl: server().api, fetch: checkedFetch, maxRetries: 0, ...options });
}
