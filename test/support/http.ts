import type { ClientRequest } from "node:http";
import { checkAgainstOpenApi } from "./openapi-check.ts";

/**
 * A thin fetch wrapper for REST calls: JSON in, status + headers + parsed JSON out. Every answer
 * from under /v1 is checked against the server's OpenAPI document (a mismatch throws).
 */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function call<T = any>(
  method: string,
  url: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["content-type"] ??= "application/json";
  }
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  await checkAgainstOpenApi(method, url, { status: response.status, headers: response.headers, text });
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** A REST client bound to one server and key. */
export function rest(api: string, key?: string) {
  return {
    get: <T = any>(path: string, headers?: Record<string, string>) =>
      call<T>("GET", api + path, { key, headers }),
    post: <T = any>(path: string, body?: unknown) => call<T>("POST", api + path, { key, body }),
    patch: <T = any>(path: string, body?: unknown) => call<T>("PATCH", api + path, { key, body }),
    delete: <T = any>(path: string) => call<T>("DELETE", api + path, { key }),
  };
}

/** A raw request: status, headers, text and the parsed JSON (null when the body is not JSON). */
export async function raw(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const text = await response.text();
  await checkAgainstOpenApi(init.method ?? "GET", url, {
    status: response.status,
    headers: response.headers,
    text,
  });
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON: json stays null
  }
  return { status: response.status, headers: response.headers, text, json };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/** Collects a node:http response as the OpenAPI check wants it. */
export function answerOf(req: ClientRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("error", reject);
      res.on("end", () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers))
          if (typeof value === "string") headers.set(name, value);
        resolve({ status: res.statusCode!, headers, text });
      });
    });
  });
}
