import { connect } from "node:net";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { call, raw } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const REQUEST_ID = /^req_[0-9A-Za-z]+$/;
const STACK = /\bat .*\(|node_modules|TypeError|\.ts:\d+/;
const MODERN = "application/graphql-response+json";

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
}

/** Decodes an HTTP/1.1 chunked body. */
function unchunk(body: string): string {
  let out = "";
  let rest = body;
  for (;;) {
    const end = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, end), 16);
    if (!size) return out;
    out += rest.slice(end + 2, end + 2 + size);
    rest = rest.slice(end + 2 + size + 2);
  }
}

/**
 * Writes `head` (the request line and headers, `\n` for CRLF, a blank line added) as is on a TCP
 * connection and reads the answer until the server closes it: the tests send `Connection: close`,
 * and every refusal closes.
 */
function exchange(port: number, head: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () =>
      socket.write(`${head.trim().replaceAll("\n", "\r\n")}\r\n\r\n`),
    );
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const message = Buffer.concat(chunks).toString("utf8");
      const split = message.indexOf("\r\n\r\n");
      if (split < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(message)}`));
      const [statusLine, ...lines] = message.slice(0, split).split("\r\n");
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(":")).toLowerCase(),
          line.slice(line.indexOf(":") + 1).trim(),
        ]),
      );
      const body = message.slice(split + 4);
      const text = headers["transfer-encoding"] === "chunked" ? unchunk(body) : body;
      let json: any = null;
      try {
        json = JSON.parse(text);
      } catch {
        // not JSON: json stays null
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, text, json });
    });
  });
}

/** 400 `bad_request` in the REST error shape, its request id the header's, and nothing of a stack. */
function expectBadRequest(res: RawAnswer, message?: RegExp) {
  expect(res.status, res.text).toBe(400);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.json).toEqual({
    error: {
      type: "invalid_request_error",
      code: "bad_request",
      message: expect.any(String),
      request_id: expect.stringMatching(REQUEST_ID),
    },
  });
  expect(res.headers["x-request-id"]).toBe(res.json.error.request_id);
  if (message) expect(res.json.error.message).toMatch(message);
  expect(res.text).not.toMatch(STACK);
}

/** The error lines the server writes to stderr while `body` runs (KONTOR_LOG=silent keeps them). */
function errorLines() {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stderr, "write").mockImplementation(((chunk: string | Uint8Array) => {
    lines.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
    return true;
  }) as typeof process.stderr.write);
  return {
    spy,
    errors: () =>
      lines
        .join("")
        .split("\n")
        .filter((line) => line.trim().startsWith("{"))
        .map((line) => JSON.parse(line) as { level: string; msg: string })
        .filter((entry) => entry.level === "error"),
  };
}

e2e("HTTP edges", (server) => {
  let tenant: Tenant;
  let port: number;
  let host: string;

  beforeAll(async () => {
    tenant = await server().tenant();
    port = Number(new URL(server().url).port);
    host = `127.0.0.1:${port}`;
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  describe("request targets (raw TCP)", () => {
    it("an absolute-form target naming this server is served as its path", async () => {
      for (const [target, body] of [
        [`http://${host}/v1/workspace`, { object: "workspace", id: tenant.workspaceId }],
        [`HTTP://${host.toUpperCase()}/v1/workspace`, { object: "workspace", id: tenant.workspaceId }],
        [`http://${host}/graphql?query=%7B__typename%7D`, { data: { __typename: "Query" } }],
      ] as const) {
        const res = await exchange(
          port,
          `GET ${target} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
        );
        expect(res.status, `${target}: ${res.text}`).toBe(200);
        expect(res.json).toMatchObject(body);
        expect(res.headers["x-request-id"]).toMatch(REQUEST_ID);
      }
      // HTTP/1.0 may leave Host out: the target's authority stands for it.
      const old = await exchange(
        port,
        `GET http://${host}/v1/workspace HTTP/1.0\nAuthorization: Bearer ${tenant.key}`,
      );
      expect(old.status, old.text).toBe(200);
      expect(old.json).toMatchObject({ object: "workspace", id: tenant.workspaceId });
    });

    it("an absolute-form target for another host, scheme or with user info → 400 bad_request (not a proxy)", async () => {
      for (const target of [
        "http://kontor.example/v1/workspace",
        `http://${host}.example/v1/workspace`,
        `http://127.0.0.1:${port + 1}/v1/workspace`,
        `http://user@${host}/v1/workspace`,
        `ftp://${host}/v1/workspace`,
        `https://[::1/v1/workspace`,
      ]) {
        const res = await exchange(
          port,
          `GET ${target} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
        );
        expectBadRequest(res);
      }
      const post = await exchange(
        port,
        `POST http://kontor.example/graphql HTTP/1.1\nHost: ${host}\nContent-Type: application/json\nContent-Length: 2\n\n{}`,
      );
      expectBadRequest(post, /not a proxy/);
    });

    it("OPTIONS * → 204 with Allow; `*` with any other method → 400 bad_request", async () => {
      const options = await exchange(port, `OPTIONS * HTTP/1.1\nHost: ${host}\nConnection: close`);
      expect(options.status).toBe(204);
      expect(options.headers.allow!.split(", ")).toEqual(
        expect.arrayContaining(["GET", "HEAD", "POST", "PATCH", "DELETE", "OPTIONS"]),
      );
      expect(options.headers["x-request-id"]).toMatch(REQUEST_ID);
      expect(options.text).toBe("");
      for (const method of ["GET", "DELETE", "PATCH"]) {
        expectBadRequest(
          await exchange(
            port,
            `${method} * HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
          ),
          /OPTIONS/,
        );
      }
      expectBadRequest(
        await exchange(
          port,
          `POST * HTTP/1.1\nHost: ${host}\nContent-Type: application/json\nContent-Length: 2\n\n{}`,
        ),
      );
    });

    it("CONNECT → 400 bad_request, not a closed connection", async () => {
      expectBadRequest(await exchange(port, `CONNECT ${host} HTTP/1.1\nHost: ${host}`), /not a proxy/);
    });
  });

  describe("Host (raw TCP)", () => {
    it("an HTTP/1.1 request without Host → 400 bad_request with a request id, not Node's bare 400", async () => {
      for (const head of [
        `GET /v1/workspace HTTP/1.1\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
        "GET /graphql?query=%7B__typename%7D HTTP/1.1\nConnection: close",
        'POST /v1/leads HTTP/1.1\nContent-Type: application/json\nContent-Length: 20\n\n{"first_name":"Ada"}',
      ]) {
        expectBadRequest(await exchange(port, head), /Host/);
      }
    });

    it("two Host headers, or one that is no host → 400 bad_request", async () => {
      for (const hosts of [
        [host, host],
        [host, "kontor.example"],
        ["a b"],
        ["[::1"],
        ["kontor.example/v1"],
        ["user@kontor.example"],
        [""],
        ["%zz"],
        [`${host}:x`],
      ]) {
        const lines = hosts.map((value) => `Host: ${value}`).join("\n");
        expectBadRequest(
          await exchange(
            port,
            `GET /v1/workspace HTTP/1.1\n${lines}\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
          ),
        );
      }
    });

    it("HTTP/1.0 without Host is served", async () => {
      const res = await exchange(port, `GET /v1/workspace HTTP/1.0\nAuthorization: Bearer ${tenant.key}`);
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({ object: "workspace", id: tenant.workspaceId });
      expect(res.headers["x-request-id"]).toMatch(REQUEST_ID);
    });

    it("a request with Host is served as before (IPv4, name, IPv6 literal)", async () => {
      for (const value of [
        host,
        `localhost:${port}`,
        `LOCALHOST:${port}`,
        `[::1]:${port}`,
        "kontor.example",
      ]) {
        const res = await exchange(
          port,
          `GET /v1/workspace HTTP/1.1\nHost: ${value}\nAuthorization: Bearer ${tenant.key}\nConnection: close`,
        );
        expect(res.status, `${value}: ${res.text}`).toBe(200);
      }
    });
  });

  describe("GraphQL parameters", () => {
    const get = (search: string, accept = "application/json") =>
      raw(`${server().url}/graphql?query=${encodeURIComponent("{ __typename }")}&${search}`, {
        headers: { authorization: `Bearer ${tenant.key}`, accept },
      });
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });

    function expectRequestError(
      res: Awaited<ReturnType<typeof raw>>,
      code: string,
      param: string,
      label: string,
    ) {
      expect(res.status, `${label}: ${res.text}`).toBe(400);
      expect(res.json.data, label).toBeUndefined();
      expect(res.json.errors, label).toHaveLength(1);
      expect(res.json.errors[0].extensions, label).toEqual({
        code,
        type: "invalid_request_error",
        param,
        request_id: res.headers.get("x-request-id"),
      });
    }

    it("GET variables or extensions that are not JSON → 400 invalid_json naming the parameter, nothing logged as unhandled", async () => {
      const log = errorLines();
      for (const accept of ["application/json", MODERN]) {
        for (const name of ["variables", "extensions"]) {
          for (const value of ["{", '{"a":', "nope", "{'a':1}"]) {
            expectRequestError(
              await get(`${name}=${encodeURIComponent(value)}`, accept),
              "invalid_json",
              name,
              `${accept} ${name}=${value}`,
            );
          }
        }
      }
      log.spy.mockRestore();
      expect(log.errors()).toEqual([]);
    });

    it("GET variables or extensions that are JSON but not an object → 400 validation_failed naming the parameter", async () => {
      for (const accept of ["application/json", MODERN]) {
        for (const name of ["variables", "extensions"]) {
          for (const value of ["1", "[]", '"x"', "true"]) {
            expectRequestError(
              await get(`${name}=${encodeURIComponent(value)}`, accept),
              "validation_failed",
              name,
              `${accept} ${name}=${value}`,
            );
          }
        }
      }
    });

    it("POST parameters of the wrong type → 400 validation_failed naming the parameter", async () => {
      const cases: [string, unknown][] = [
        ["variables", "x"],
        ["variables", [1]],
        ["variables", 5],
        ["variables", true],
        ["extensions", "x"],
        ["extensions", []],
        ["extensions", 0],
        ["query", 5],
        ["query", { a: 1 }],
        ["operationName", []],
        ["operationName", 1],
      ];
      for (const accept of ["application/json", MODERN]) {
        for (const [name, value] of cases) {
          const res = await post({ query: "{ __typename }", [name]: value }, { accept });
          expectRequestError(res, "validation_failed", name, `${accept} ${name}: ${JSON.stringify(value)}`);
        }
      }
    });

    it("null, empty and object parameters are accepted", async () => {
      for (const search of [
        "variables=null",
        "extensions=null",
        "variables=",
        "variables=%7B%7D",
        "extensions=%7B%22a%22%3A1%7D",
      ]) {
        const res = await get(search, MODERN);
        expect(res.status, `${search}: ${res.text}`).toBe(200);
        expect(res.json).toEqual({ data: { __typename: "Query" } });
      }
      const res = await post({
        query: "{ __typename }",
        variables: null,
        extensions: {},
        operationName: null,
      });
      expect(res.json).toEqual({ data: { __typename: "Query" } });
    });

    it("a body that is not JSON, or not an object → 400 in the API's codes", async () => {
      for (const [body, code] of [
        ["{", "invalid_json"],
        ["", "invalid_json"],
        ["5", "validation_failed"],
        ['"query"', "validation_failed"],
        ["null", "validation_failed"],
      ] as const) {
        const res = await post(body, { accept: MODERN });
        expect(res.status, `${body}: ${res.text}`).toBe(400);
        expect(res.json.errors[0].extensions).toMatchObject({
          code,
          type: "invalid_request_error",
          request_id: res.headers.get("x-request-id"),
        });
      }
    });
  });

  describe("GraphQL request errors by Accept", () => {
    it("an operation the schema cannot run (a subscription) → 400 under application/graphql-response+json, 200 under application/json", async () => {
      for (const [accept, status] of [
        [MODERN, 400],
        ["application/json", 200],
        [`${MODERN}, application/json;q=0.9`, 400],
      ] as const) {
        for (const query of ["subscription { leads }", "subscription Watch { anything }"]) {
          const byPost = await raw(`${server().url}/graphql`, {
            method: "POST",
            headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", accept },
            body: JSON.stringify({ query }),
          });
          const byGet = await raw(`${server().url}/graphql?query=${encodeURIComponent(query)}`, {
            headers: { authorization: `Bearer ${tenant.key}`, accept },
          });
          for (const res of [byPost, byGet]) {
            expect(res.status, `${accept} ${query}: ${res.text}`).toBe(status);
            expect(res.json.data).toBeUndefined();
            expect(res.json.errors[0].extensions).toMatchObject({
              code: "validation_failed",
              type: "invalid_request_error",
              request_id: res.headers.get("x-request-id"),
            });
          }
        }
      }
    });

    it("a field error is still data: 200 under either type", async () => {
      for (const accept of [MODERN, "application/json"]) {
        const res = await raw(`${server().url}/graphql`, {
          method: "POST",
          headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", accept },
          body: JSON.stringify({ query: '{ lead(id: "lead_01J00000000000000000000000") { id } }' }),
        });
        expect(res.status).toBe(200);
        expect(res.json.data).toEqual({ lead: null });
        expect(res.json.errors[0].extensions).not.toHaveProperty("http");
      }
    });
  });

  describe("media types on /graphql", () => {
    const post = (headers: Record<string, string>) =>
      raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, ...headers },
        body: JSON.stringify({ query: "{ __typename }" }),
      });

    it("Content-Type is case-insensitive, parameters included", async () => {
      for (const type of [
        "APPLICATION/JSON",
        "Application/Json",
        "application/JSON; CHARSET=UTF-8",
        "application/json ; charset=utf-8",
        "application/json;charset=UTF-8",
      ]) {
        const res = await post({ "content-type": type });
        expect(res.status, `${type}: ${res.text}`).toBe(200);
        expect(res.json).toEqual({ data: { __typename: "Query" } });
      }
      // REST already took it so.
      const lead = await call("POST", `${server().api}/leads`, {
        key: tenant.key,
        body: { first_name: "Upper" },
        headers: { "content-type": "APPLICATION/JSON" },
      });
      expect(lead.status).toBe(201);
    });

    it("every refused type is a 415 with a JSON body and a request id", async () => {
      for (const type of [
        "text/plain",
        "TEXT/PLAIN",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/graphql",
        "application/jsonx",
        "",
      ]) {
        const res = await post(type ? { "content-type": type } : {});
        expect(res.status, `${type}: ${res.text}`).toBe(415);
        expect(res.headers.get("content-type")).toMatch(/^application\/json/);
        expect(res.json.errors[0].extensions).toEqual({
          code: "unsupported_media_type",
          type: "invalid_request_error",
          request_id: res.headers.get("x-request-id"),
        });
      }
    });

    it("an Accept no response type satisfies → 406 not_acceptable with a JSON body", async () => {
      for (const accept of ["text/csv", "application/xml", "application/json; charset=latin1"]) {
        const res = await post({ "content-type": "application/json", accept });
        expect(res.status, `${accept}: ${res.text}`).toBe(406);
        expect(res.json.errors[0].extensions).toEqual({
          code: "not_acceptable",
          type: "invalid_request_error",
          request_id: res.headers.get("x-request-id"),
        });
      }
    });
  });
});
