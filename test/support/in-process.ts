import { GraphQLClient } from "graphql-request";
import { afterAll, beforeAll, describe } from "vitest";
import type { GraphQLResult } from "./graphql.ts";
import type { ApiResponse } from "./http.ts";
import { checkAgainstOpenApi } from "./openapi-check.ts";
import { startTestServer, type TestServer } from "./server.ts";

/**
 * Plugin-level suites (test/plugins/): the server's Yoga app answers through `running.fetch`
 * (server/runtime/server.ts), in-process, without TCP, on the embedded stack only. For what a
 * plugin does with a request — limits, body decoding, validation, error shapes — where neither the
 * socket nor the difference between the two databases is what is tested; those stay end-to-end
 * (test/support/suite.ts `e2e`, over TCP, on both stacks). The server still listens (its URL is the
 * requests' origin, and the OpenAPI check fetches the document from it once); the tests' own
 * requests never touch the socket.
 *
 * The REST and GraphQL helpers below take the same arguments as test/support/http.ts and
 * graphql.ts, plus the function that answers the request (last, defaulting to the global `fetch`,
 * i.e. over TCP); every /v1 answer is checked against the OpenAPI document as http.ts does.
 *
 * @example
 * inProcess("GraphQL limits", (server) => {
 *   it("refuses a deep query", async () => {
 *     const { key } = await server().tenant();
 *     const res = await raw(`${server().url}/graphql`, { method: "POST", headers: { authorization: `Bearer ${key}` }, body }, server().fetch);
 *     const api = rest(server().api, key, server().fetch);
 *     expect((await api.get("/leads")).status).toBe(200);
 *   });
 * });
 */

/** Answers one request: `running.fetch` in-process, or the global `fetch` over TCP. */
export type Fetcher = (request: Request) => Promise<Response>;

const overTcp: Fetcher = (request) => fetch(request);

/** A TestServer (test/support/server.ts) plus `fetch`, its `running.fetch` bound. */
export interface InProcessServer extends TestServer {
  fetch: Fetcher;
}

/**
 * Declares a suite once, on the embedded stack (whatever KONTOR_TEST_STACKS says), named
 * `${name} [in-process]`. `body` receives a getter for the server (started before the suite's
 * tests, closed after them); `env` is passed to its config as `e2e`'s is.
 */
export function inProcess(
  name: string,
  body: (server: () => InProcessServer) => void,
  env: NodeJS.ProcessEnv = {},
) {
  describe(`${name} [in-process]`, () => {
    let server: InProcessServer | undefined;
    beforeAll(async () => {
      const started = await startTestServer("embedded", env);
      server = { ...started, fetch: (request) => started.running.fetch(request) };
    });
    afterAll(async () => {
      await server?.close();
    });
    body(() => {
      if (!server) throw new Error("server not started");
      return server;
    });
  });
}

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** test/support/http.ts `call` through `fetcher`: JSON in, status + headers + parsed JSON out; /v1 answers checked. */
export async function call<T = any>(
  method: string,
  url: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
  fetcher: Fetcher = overTcp,
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetcher(new Request(url, { method, headers, body }));
  const text = await response.text();
  await checkAgainstOpenApi(method, url, { status: response.status, headers: response.headers, text });
  const json = text ? parsed(text) : null;
  return {
    status: response.status,
    headers: response.headers,
    body: (json === undefined ? text : json) as T,
  };
}

/** test/support/http.ts `rest` through `fetcher`: a REST client bound to one server and key. */
export function rest(api: string, key?: string, fetcher: Fetcher = overTcp) {
  return {
    get: <T = any>(path: string, headers?: Record<string, string>) =>
      call<T>("GET", api + path, { key, headers }, fetcher),
    post: <T = any>(path: string, body?: unknown) => call<T>("POST", api + path, { key, body }, fetcher),
    patch: <T = any>(path: string, body?: unknown) => call<T>("PATCH", api + path, { key, body }, fetcher),
    delete: <T = any>(path: string) => call<T>("DELETE", api + path, { key }, fetcher),
  };
}

/** test/support/http.ts `raw` through `fetcher`: status, headers, text and the parsed JSON (null when not JSON); /v1 answers checked. */
export async function raw(url: string, init: RequestInit = {}, fetcher: Fetcher = overTcp) {
  const response = await fetcher(new Request(url, init));
  const text = await response.text();
  await checkAgainstOpenApi(init.method ?? "GET", url, {
    status: response.status,
    headers: response.headers,
    text,
  });
  const json: any = parsed(text) ?? null;
  return { status: response.status, headers: response.headers, text, json };
}

/** test/support/graphql.ts `graphql` through `fetcher`: partial data and errors handed back, never thrown. */
export function graphql(url: string, key: string, fetcher: Fetcher = overTcp) {
  const client = new GraphQLClient(`${url}/graphql`, {
    headers: { authorization: `Bearer ${key}` },
    errorPolicy: "all",
    fetch: (input, init) => fetcher(new Request(input, init)),
  });
  return async <T = any>(query: string, variables?: Record<string, unknown>): Promise<GraphQLResult<T>> => {
    try {
      const result = await client.rawRequest<T>(query, variables);
      return { data: result.data, errors: result.errors as GraphQLResult["errors"], status: result.status };
    } catch (error) {
      const response = (error as { response?: GraphQLResult<T> }).response;
      if (!response?.errors) throw error;
      return { data: response.data, errors: response.errors, status: response.status };
    }
  };
}
