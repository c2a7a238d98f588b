import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { call, raw, rest } from "../../support/http.ts";
import type { Tenant } from "../../support/server.ts";
import { e2e } from "../../support/suite.ts";

const REQUEST_ID = /^req_[0-9A-Za-z]+$/;
const LIMIT = 25 * 1024 * 1024;

/** The REST error shape of decisions §3, with the body's request id equal to the header's. */
function expectRestError(
  res: { status: number; headers: Headers; body?: any; json?: any },
  status: number,
  type: string,
  code: string,
) {
  const body = res.body ?? res.json;
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body).toMatchObject({
    error: { type, code, message: expect.any(String), request_id: expect.stringMatching(REQUEST_ID) },
  });
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
}

/**
 * POSTs `total` bytes with node:http, either with a Content-Length or chunked, and returns the
 * answer even when the server replies before it has read everything.
 */
function bigPost(url: string, key: string, total: number, chunked: boolean) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }>(
    (resolve, reject) => {
      const head = Buffer.from('{"first_name":"Huge","notes":"');
      const tail = Buffer.from('"}');
      const req = httpRequest(url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          ...(chunked ? { "transfer-encoding": "chunked" } : { "content-length": String(total) }),
        },
      });
      let answered = false;
      req.on("response", (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
        });
        res.on("error", reject);
      });
      req.on("error", (error) => {
        if (!answered) reject(error);
      });
      const filler = Buffer.alloc(1024 * 1024, "x");
      let sent = 0;
      const write = () => {
        req.write(head);
        sent += head.length;
        const pump = () => {
          while (sent < total - tail.length && !answered) {
            const size = Math.min(filler.length, total - tail.length - sent);
            sent += size;
            if (!req.write(filler.subarray(0, size))) return void req.once("drain", pump);
          }
          if (!answered) req.end(tail);
        };
        pump();
      };
      write();
    },
  );
}

/** Declares a huge Content-Length, sends a few bytes, and reads what comes back on the socket. */
function declaredOnly(url: string, key: string, path: string) {
  const { hostname, port } = new URL(url);
  return new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname === "localhost" ? "127.0.0.1" : hostname);
    let data = "";
    socket.on("connect", () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n{"first_name":"Declared"`,
      );
    });
    socket.on("data", (chunk) => {
      data += chunk.toString("utf8");
      const end = data.indexOf("\r\n\r\n");
      if (end >= 0) {
        const length = /content-length:\s*(\d+)/i.exec(data.slice(0, end));
        const complete = length ? data.length - end - 4 >= Number(length[1]) : data.endsWith("\r\n0\r\n\r\n");
        if (complete) {
          socket.destroy();
          resolve(data);
        }
      }
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(data));
    setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, 10_000);
  });
}

/** Decodes an HTTP/1.1 chunked body. */
function dechunk(payload: string): string {
  let out = "";
  let rest = payload;
  for (;;) {
    const line = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, line), 16);
    if (!size) return out;
    out += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

e2e("errors and request ids", (server) => {
  let tenant: Tenant;
  let api: ReturnType<typeof rest>;
  const leadCount = async () => (await api.get("/leads?limit=100")).body.data.length as number;

  beforeAll(async () => {
    tenant = await server().tenant();
    api = rest(server().api, tenant.key);
  });

  describe("X-Request-Id", () => {
    it("is on every kind of response, unique, and equal to the error body's request_id", async () => {
      const lead = (await api.post("/leads", { first_name: "Ider" })).body;
      const auth = { authorization: `Bearer ${tenant.key}` };
      const json = { ...auth, "content-type": "application/json" };
      const cases: [string, () => Promise<{ status: number; headers: Headers; json: any }>, number][] = [
        ["GET success", () => raw(`${server().api}/leads/${lead.id}`, { headers: auth }), 200],
        [
          "POST success",
          () => raw(`${server().api}/leads`, { method: "POST", headers: json, body: '{"first_name":"Id"}' }),
          201,
        ],
        ["401", () => raw(`${server().api}/leads`), 401],
        ["404", () => raw(`${server().api}/leads/lead_01J00000000000000000000000`, { headers: auth }), 404],
        ["404 route", () => raw(`${server().api}/nope`, { headers: auth }), 404],
        ["400", () => raw(`${server().api}/leads`, { method: "POST", headers: json, body: "{" }), 400],
        [
          "403",
          async () =>
            raw(`${server().api}/leads`, {
              headers: { authorization: `Bearer ${(await server().key(tenant.workspaceId, [])).key}` },
            }),
          403,
        ],
        ["405", () => raw(`${server().api}/leads`, { method: "PUT", headers: json, body: "{}" }), 405],
        [
          "413",
          () =>
            raw(`${server().api}/leads`, {
              method: "POST",
              headers: { ...json },
              body: Buffer.alloc(LIMIT + 1, " "),
            }),
          413,
        ],
        [
          "415",
          () =>
            raw(`${server().api}/leads`, {
              method: "POST",
              headers: { ...auth, "content-type": "text/plain" },
              body: "hi",
            }),
          415,
        ],
        ["OPTIONS", () => raw(`${server().api}/leads`, { method: "OPTIONS" }), -1],
        ["well-known", () => raw(`${server().api}/.well-known/oauth-protected-resource`), 200],
        [
          "well-known (RFC 9728 path)",
          () => raw(`${server().url}/.well-known/oauth-protected-resource/v1`),
          200,
        ],
        ["openapi.json", () => raw(`${server().api}/openapi.json`), 200],
        [
          "GraphQL",
          () =>
            raw(`${server().url}/graphql`, {
              method: "POST",
              headers: json,
              body: '{"query":"{ workspace { id } }"}',
            }),
          200,
        ],
        [
          "GraphQL 401",
          () =>
            raw(`${server().url}/graphql`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: '{"query":"{ workspace { id } }"}',
            }),
          401,
        ],
        [
          "GraphQL syntax error",
          () =>
            raw(`${server().url}/graphql`, {
              method: "POST",
              headers: { ...json, accept: "application/graphql-response+json" },
              body: '{"query":"{ workspace {"}',
            }),
          400,
        ],
        [
          "GraphQL field error",
          () =>
            raw(`${server().url}/graphql`, {
              method: "POST",
              headers: json,
              body: '{"query":"{ lead(id: \\"lead_x\\") { id } }"}',
            }),
          200,
        ],
        ["top-level 404", () => raw(`${server().url}/no-such-page`, { headers: auth }), 404],
      ];
      const seen = new Set<string>();
      for (const [label, run, status] of cases) {
        const res = await run();
        if (status > 0) expect(res.status, label).toBe(status);
        else expect(res.status, label).toBeLessThan(500);
        const id = res.headers.get("x-request-id");
        expect(id, label).toMatch(REQUEST_ID);
        expect(seen.has(id!), `${label}: ids are unique`).toBe(false);
        seen.add(id!);
        if (res.json?.error) expect(res.json.error.request_id, label).toBe(id);
        if (res.json?.errors)
          for (const error of res.json.errors) expect(error.extensions.request_id, label).toBe(id);
      }
    });
  });

  describe("request bodies", () => {
    it.each([
      ["POST", "/leads"],
      ["PATCH", "/leads/:id"],
      ["POST", "/clients"],
    ])("%s %s: malformed JSON → 400 invalid_json, nothing written", async (method, path) => {
      const lead = (await api.post("/leads", { first_name: "Target" })).body;
      const before = await api.get("/leads?limit=100");
      const clientsBefore = await api.get("/clients?limit=100");
      for (const body of [
        '{"first_name": ',
        "{first_name: 'x'}",
        '{"first_name":"A",}',
        "nul",
        '{"first_name":"A"} trailing',
      ]) {
        const res = await call(method, `${server().api}${path.replace(":id", lead.id)}`, {
          key: tenant.key,
          raw: body,
          headers: { "content-type": "application/json" },
        });
        expectRestError(res, 400, "invalid_request_error", "invalid_json");
      }
      expect((await api.get("/leads?limit=100")).body).toEqual(before.body);
      expect((await api.get("/clients?limit=100")).body).toEqual(clientsBefore.body);
    });

    it.each([
      ["an array", '[{"first_name":"A"}]'],
      ["a string", '"first_name"'],
      ["a number", "42"],
      ["null", "null"],
      ["true", "true"],
    ])("a JSON body that is %s → 400 validation_failed, nothing written", async (_label, body) => {
      const lead = (await api.post("/leads", { first_name: "Shape" })).body;
      const before = await api.get("/leads?limit=100");
      for (const [method, path] of [
        ["POST", "/leads"],
        ["PATCH", `/leads/${lead.id}`],
      ] as const) {
        const res = await call(method, `${server().api}${path}`, {
          key: tenant.key,
          raw: body,
          headers: { "content-type": "application/json" },
        });
        expectRestError(res, 400, "invalid_request_error", "validation_failed");
      }
      expect((await api.get("/leads?limit=100")).body).toEqual(before.body);
    });

    it.each([
      ["text/plain", '{"first_name":"Plain"}'],
      ["text/plain; charset=utf-8", '{"first_name":"Plain"}'],
      ["application/x-www-form-urlencoded", "first_name=Form"],
      [
        "multipart/form-data; boundary=x",
        '--x\r\nContent-Disposition: form-data; name="first_name"\r\n\r\nMulti\r\n--x--\r\n',
      ],
    ])(
      "Content-Type %s on POST and PATCH → 415 unsupported_media_type, nothing written",
      async (type, body) => {
        const lead = (await api.post("/leads", { first_name: "Media" })).body;
        const before = await api.get("/leads?limit=100");
        for (const [method, path] of [
          ["POST", "/leads"],
          ["PATCH", `/leads/${lead.id}`],
          ["POST", "/clients"],
        ] as const) {
          const res = await call(method, `${server().api}${path}`, {
            key: tenant.key,
            raw: body,
            headers: { "content-type": type },
          });
          expectRestError(res, 415, "invalid_request_error", "unsupported_media_type");
        }
        expect((await api.get("/leads?limit=100")).body).toEqual(before.body);
        expect((await api.get(`/leads/${lead.id}`)).body).toEqual(lead);
      },
    );

    it("a body over 25 MiB with Content-Length → 413 payload_too_large, nothing written", async () => {
      const before = await leadCount();
      const res = await bigPost(`${server().api}/leads`, tenant.key, LIMIT + 1024, false);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "payload_too_large",
        request_id: res.headers["x-request-id"],
      });
      expect(res.headers["x-request-id"]).toMatch(REQUEST_ID);
      expect(await leadCount()).toBe(before);
    });

    it("a chunked body over 25 MiB (no Content-Length) → 413 payload_too_large, nothing written", async () => {
      const before = await leadCount();
      const res = await bigPost(`${server().api}/leads`, tenant.key, LIMIT + 1024, true);
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        code: "payload_too_large",
        request_id: res.headers["x-request-id"],
      });
      expect(await leadCount()).toBe(before);
    });

    it("a declared Content-Length over 25 MiB is refused before the body is read", async () => {
      const before = await leadCount();
      const answer = await declaredOnly(server().url, tenant.key, "/v1/leads");
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      const [head, payload] = [
        answer.slice(0, answer.indexOf("\r\n\r\n")),
        answer.slice(answer.indexOf("\r\n\r\n") + 4),
      ];
      const body = JSON.parse(/transfer-encoding:\s*chunked/i.test(head) ? dechunk(payload) : payload);
      expect(body.error).toMatchObject({
        code: "payload_too_large",
        request_id: expect.stringMatching(REQUEST_ID),
      });
      expect(answer).toMatch(new RegExp(`x-request-id: ${body.error.request_id}`, "i"));
      expect(await leadCount()).toBe(before);
    });

    it("GraphQL bodies over 25 MiB are refused the same way", async () => {
      const before = await leadCount();
      const res = await bigPost(`${server().url}/graphql`, tenant.key, LIMIT + 1024, true);
      expect(res.status).toBe(413);
      expect(res.body.errors?.[0]?.extensions).toMatchObject({
        code: "payload_too_large",
        request_id: res.headers["x-request-id"],
      });
      expect(await leadCount()).toBe(before);
    });

    it("a body just under the limit is not refused for its size", async () => {
      const res = await call("POST", `${server().api}/leads`, {
        key: tenant.key,
        raw: `{"first_name":"Spacious"}${" ".repeat(2 * 1024 * 1024)}`,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(201);
    });
  });

  describe("routing", () => {
    it.each(["/nope", "/leads/lead_x/unknown", "/lead", "/v2/leads", "/leads/lead_x/convert/extra"])(
      "unknown route /v1%s → 404 not_found",
      async (path) => {
        for (const method of ["GET", "POST"]) {
          const res = await call(method, `${server().api}${path}`, {
            key: tenant.key,
            body: method === "POST" ? {} : undefined,
          });
          expectRestError(res, 404, "invalid_request_error", "not_found");
        }
      },
    );

    it.each([
      ["PUT", "/leads", ["GET", "POST"]],
      ["DELETE", "/leads", ["GET", "POST"]],
      ["PATCH", "/leads", ["GET", "POST"]],
      ["POST", "/leads/lead_01J00000000000000000000000", ["GET", "PATCH", "DELETE"]],
      ["PUT", "/clients/cli_01J00000000000000000000000", ["GET", "PATCH", "DELETE"]],
      ["GET", "/leads/lead_01J00000000000000000000000/convert", ["POST"]],
      ["POST", "/workspace", ["GET"]],
    ])("%s %s → 405 with Allow", async (method, path, allowed) => {
      const before = await leadCount();
      const res = await call(method, `${server().api}${path}`, {
        key: tenant.key,
        body: method === "GET" ? undefined : { first_name: "Wrong" },
      });
      expect(res.status).toBe(405);
      expect(res.body.error).toMatchObject({
        type: "invalid_request_error",
        request_id: res.headers.get("x-request-id"),
      });
      const allow = res.headers
        .get("allow")!
        .split(",")
        .map((m) => m.trim())
        .sort();
      expect(allow).toEqual([...allowed].sort());
      expect(await leadCount()).toBe(before);
    });

    it("an unknown top-level path → 404 in the error shape", async () => {
      for (const path of ["/no-such-page", "/v1leads", "/api/v1/leads"]) {
        const res = await call("GET", `${server().url}${path}`, { key: tenant.key });
        expectRestError(res, 404, "invalid_request_error", "not_found");
      }
    });

    it("an unknown top-level path is a 404 without a credential too (only {base_url} is a protected resource)", async () => {
      const res = await call("GET", `${server().url}/no-such-page`);
      expectRestError(res, 404, "invalid_request_error", "not_found");
      expect(res.headers.get("www-authenticate")).toBeNull();
    });
  });

  describe("unexpected exceptions", () => {
    /** Runs `body` with the leads table renamed away, capturing stderr. */
    async function withBrokenLeads<T>(body: (stderr: () => string) => Promise<T>): Promise<T> {
      const prisma = server().running.db.prisma;
      const lines: string[] = [];
      const spy = vi.spyOn(process.stderr, "write").mockImplementation(((chunk: string | Uint8Array) => {
        lines.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
        return true;
      }) as typeof process.stderr.write);
      await prisma.$executeRawUnsafe("alter table leads rename to leads_x");
      try {
        return await body(() => lines.join(""));
      } finally {
        await prisma.$executeRawUnsafe("alter table leads_x rename to leads");
        spy.mockRestore();
      }
    }

    function loggedErrors(stderr: string) {
      return stderr
        .split("\n")
        .filter((line) => line.trim().startsWith("{"))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.level === "error");
    }

    const LEAKS = [
      /relation/i,
      /does not exist/i,
      /leads_x/,
      /\bselect\b/i,
      /\bfrom\b.*"/i,
      /prisma/i,
      /postgres|pglite/i,
      /\.ts:\d+/,
      /\bat\s+\S+\s+\(/,
      /stack/i,
      /"public"/,
    ];

    it("REST → 500 api_error internal_error with no internals in the body, logged with the request id", async () => {
      const lead = (await api.post("/leads", { first_name: "Broken" })).body;
      await withBrokenLeads(async (stderr) => {
        for (const [method, path, body] of [
          ["GET", "/leads", undefined],
          ["GET", `/leads/${lead.id}`, undefined],
          ["POST", "/leads", { first_name: "Lost" }],
          ["PATCH", `/leads/${lead.id}`, { notes: "lost" }],
        ] as const) {
          const res = await call(method, `${server().api}${path}`, { key: tenant.key, body });
          expect(res.status, `${method} ${path}`).toBe(500);
          expect(res.body).toEqual({
            error: {
              type: "api_error",
              code: "internal_error",
              message: expect.any(String),
              request_id: res.headers.get("x-request-id"),
            },
          });
          expect(res.body.error.request_id).toMatch(REQUEST_ID);
          const text = JSON.stringify(res.body);
          for (const leak of [...LEAKS, /leads/i]) expect(text, `${method} ${path}`).not.toMatch(leak);

          const logged = loggedErrors(stderr()).filter(
            (entry) => entry.request_id === res.body.error.request_id,
          );
          expect(logged.length, `${method} ${path}: logged with its request id`).toBeGreaterThanOrEqual(1);
          expect(JSON.stringify(logged)).toMatch(/leads/);
        }
      });
      // Healthy again, and the failed writes left nothing behind.
      const after = await api.get(`/leads/${lead.id}`);
      expect(after.status).toBe(200);
      expect(after.body.notes).toBeNull();
      expect((await api.get("/leads?search=Lost")).body.data).toEqual([]);
    });

    it("GraphQL → internal_error in extensions with no internals, logged with the request id", async () => {
      await withBrokenLeads(async (stderr) => {
        for (const query of [
          `{ leads { data { id } } }`,
          `mutation { createLead(first_name: "Lost") { id } }`,
        ]) {
          const res = await raw(`${server().url}/graphql`, {
            method: "POST",
            headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
            body: JSON.stringify({ query }),
          });
          expect(res.status).toBeLessThan(600);
          expect(res.json.errors).toHaveLength(1);
          const id = res.headers.get("x-request-id");
          expect(res.json.errors[0].extensions).toMatchObject({
            code: "internal_error",
            type: "api_error",
            request_id: id,
          });
          expect(Object.keys(res.json.errors[0].extensions).sort()).toEqual(["code", "request_id", "type"]);
          for (const leak of LEAKS) expect(res.text, query).not.toMatch(leak);
          expect(loggedErrors(stderr()).some((entry) => entry.request_id === id)).toBe(true);
        }
      });
      expect((await api.get("/leads?search=Lost")).body.data).toEqual([]);
    });
  });

  describe("GraphQL errors", () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      raw(`${server().url}/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json", ...headers },
        body,
      });

    function expectCoded(res: { headers: Headers; json: any }, code?: string | RegExp) {
      expect(res.json.errors?.length, JSON.stringify(res.json)).toBeGreaterThanOrEqual(1);
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(REQUEST_ID);
      for (const error of res.json.errors) {
        expect(typeof error.message).toBe("string");
        expect(error.extensions.request_id).toBe(id);
        expect(typeof error.extensions.code).toBe("string");
        if (typeof code === "string") expect(error.extensions.code).toBe(code);
        else if (code) expect(error.extensions.code).toMatch(code);
      }
      return res.json.errors[0];
    }

    // GraphQL over HTTP: a request error is 400 for application/graphql-response+json, 200 for legacy application/json.
    const MODERN = { accept: "application/graphql-response+json" };

    it("a syntax error", async () => {
      for (const [headers, status] of [
        [MODERN, 400],
        [{ accept: "application/json" }, 200],
      ] as const) {
        const res = await post(JSON.stringify({ query: "{ leads { data { id }" }), headers);
        expect(res.status).toBe(status);
        expect(res.json.data).toBeUndefined();
        const error = expectCoded(res, /^[a-z_]+$/);
        expect(error.extensions.type).toBe("invalid_request_error");
        expect(error.message).toMatch(/Syntax Error/);
      }
    });

    it("an unknown field", async () => {
      for (const [headers, status] of [
        [MODERN, 400],
        [{ accept: "application/json" }, 200],
      ] as const) {
        const res = await post(JSON.stringify({ query: "{ leads { data { id shoe_size } } }" }), headers);
        expect(res.status).toBe(status);
        expect(res.json.data).toBeUndefined();
        const error = expectCoded(res, /^[a-z_]+$/);
        expect(error.message).toMatch(/shoe_size/);
      }
    });

    it("a wrong variable type", async () => {
      const res = await post(
        JSON.stringify({
          query: "query ($id: ID!) { lead(id: $id) { id } }",
          variables: { id: { nested: true } },
        }),
        MODERN,
      );
      expect(res.status).toBe(400);
      expectCoded(res, /^[a-z_]+$/);
    });

    it("a malformed JSON request → invalid_json, as on REST, without parser internals", async () => {
      const res = await post('{"query": ');
      expect(res.status).toBe(400);
      const error = expectCoded(res, "invalid_json");
      expect(error.extensions.type).toBe("invalid_request_error");
      expect(error.extensions).not.toHaveProperty("originalError");
    });

    it("not_found", async () => {
      const res = await post(
        JSON.stringify({ query: '{ lead(id: "lead_01J00000000000000000000000") { id } }' }),
      );
      expect(res.status).toBe(200);
      expect(res.json.data).toEqual({ lead: null });
      const error = expectCoded(res, "not_found");
      expect(error.extensions.type).toBe("invalid_request_error");
      expect(error.path).toEqual(["lead"]);
    });

    it("validation_failed, with nothing written", async () => {
      const before = await leadCount();
      const res = await post(JSON.stringify({ query: 'mutation { createLead(first_name: "  ") { id } }' }));
      expect(res.status).toBe(200);
      const error = expectCoded(res, "validation_failed");
      expect(error.extensions).toMatchObject({ type: "invalid_request_error", param: "first_name" });
      const limit = await post(JSON.stringify({ query: "{ leads(limit: 0) { data { id } } }" }));
      expect(expectCoded(limit, "validation_failed").extensions.param).toBe("limit");
      expect(await leadCount()).toBe(before);
    });

    it("no extension leaks an http status or a stack", async () => {
      const res = await post(
        JSON.stringify({ query: '{ lead(id: "lead_01J00000000000000000000000") { id } }' }),
      );
      expect(res.json.errors[0].extensions).not.toHaveProperty("http");
      expect(res.json.errors[0].extensions).not.toHaveProperty("stacktrace");
      expect(res.text).not.toMatch(/\.ts:\d+/);
    });
  });
});
