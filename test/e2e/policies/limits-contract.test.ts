import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import { MAX_BODY_BYTES } from "../../../server/http/request-body.ts";
import { type Fixtures, type OpenApiDoc, pool, resolve, type Schema } from "../../support/bad-input.ts";
import { call } from "../../support/http.ts";
import { type LimitCase, type LimitRequest, limitCasesFor } from "../../support/limit-cases.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";
import { stacks } from "../../support/stacks.ts";
import { sweepFixtures } from "../../support/sweep-fixtures.ts";

/**
 * The OpenAPI document's limits are the enforced ones: for every `maxLength` and `maxItems` of every
 * path parameter, query parameter and body field (nested ones too), a value at the limit is not
 * refused for its length, and one character (or item) more is 400 `validation_failed` naming that
 * input. The document is generated from schema/lib/limits.ts; this checks the server reads the
 * same numbers. REST only, on one stack: the limits do not depend on the database.
 */

const stack = stacks()[0]!;
const CONCURRENCY = 6;
/** Bodies in OpenAI's own shapes, checked and forwarded to the AI provider (server/ai): bound by the body limit, not field by field. */
const OPENAI_BODIES = new Set(["POST /chat/completions", "POST /responses"]);

interface Answer {
  status: number;
  code?: string;
  param?: string;
  message?: string;
}

/** One more try when the connection was reset before any answer (a kept-alive socket the server had just closed, on a loaded machine). */
async function once<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return run();
  }
}

/** A refusal because of the input's size: its own validation_failed speaking of length, or the body or URL limit. */
const refusedForLength = (answer: Answer, param: string) =>
  answer.status === 413 ||
  answer.status === 414 ||
  (answer.status === 400 &&
    answer.param === param &&
    /at most|characters|too long|longer than|items/i.test(answer.message ?? ""));

/** Every input the document leaves unbounded: a string that is not an enum or a format, a list. */
function unbounded(doc: OpenApiDoc, schema: Schema, path: string, out: string[], depth = 0): void {
  const s = resolve(doc, schema);
  if (s.type === "string" && !s.enum && !s.format && s.maxLength === undefined) out.push(path);
  if (s.type === "array" && s.maxItems === undefined) out.push(path);
  if (depth > 4) return;
  if (s.type === "object")
    for (const [key, property] of Object.entries(s.properties ?? {}))
      unbounded(doc, property, `${path}.${key}`, out, depth + 1);
  if (s.type === "array" && s.items) unbounded(doc, s.items, `${path}[0]`, out, depth + 1);
}

describe(`the OpenAPI document's limits are the enforced ones [${stack}]`, () => {
  let server: TestServer;
  let receiver: Receiver;
  let doc: OpenApiDoc;
  let fixtures: Fixtures;
  let cases: LimitCase[];
  const keys: string[] = [];
  let turn = 0;

  async function send(request: LimitRequest): Promise<Answer> {
    const url = `${server.api}${request.path}${request.query ? `?${request.query}` : ""}`;
    const headers: Record<string, string> = { authorization: `Bearer ${keys[turn++ % keys.length]}` };
    if (request.body !== undefined) headers["content-type"] = request.contentType ?? "application/json";
    const response = await once(() => fetch(url, { method: request.method, headers, body: request.body }));
    const text = await response.text();
    let error: { code?: string; param?: string; message?: string } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      // not JSON (a download): no error to read
    }
    return { status: response.status, code: error?.code, param: error?.param, message: error?.message };
  }

  beforeAll(async () => {
    server = await startTestServer(stack);
    receiver = await startReceiver();
    const tenant = await server.tenant({ plan: "max" });
    keys.push(tenant.key, (await server.key(tenant.workspaceId, [...SCOPES])).key);
    const document = await call<OpenApiDoc>("GET", `${server.api}/openapi.json`);
    expect(document.status).toBe(200);
    doc = document.body;
    const request = (method: string, path: string, body?: unknown) =>
      once(() => call(method, server.api + path, { key: tenant.key, body }));
    fixtures = await sweepFixtures({
      doc,
      request,
      prisma: server.running.db.prisma,
      workspaceId: tenant.workspaceId,
      receiverUrl: receiver.url("/limits"),
      label: "limits",
    });
    cases = fixtures.endpoints.flatMap((endpoint) => limitCasesFor(fixtures, endpoint));
  });

  afterAll(async () => {
    await receiver?.close();
    await server?.close();
  });

  it("bounds every text and list input of every operation", () => {
    const open: string[] = [];
    for (const endpoint of fixtures.endpoints) {
      for (const param of [...endpoint.pathParams, ...endpoint.queryParams])
        unbounded(doc, param.schema, `${endpoint.label} ${param.name}`, open);
      const json = endpoint.body?.schema;
      if (json && !OPENAI_BODIES.has(endpoint.label)) unbounded(doc, json, `${endpoint.label} body`, open);
    }
    expect(open).toEqual([]);
    expect(cases.length).toBeGreaterThan(100);
  });

  it("accepts each input at its maxLength or maxItems, and refuses one more with validation_failed naming it", async () => {
    const failures: string[] = [];
    const label = (c: LimitCase) => `${c.endpoint.label} ${c.where} ${c.param} (${c.kind} ${c.max})`;
    await pool(cases, CONCURRENCY, async (c) => {
      // Past the body limit (content_base64): the body's 413 bites first, so the field's bound can never refuse what the body carries.
      if (c.max >= MAX_BODY_BYTES) return;
      const at = await send(await c.request(c.max));
      if (at.status >= 500 || refusedForLength(at, c.param))
        failures.push(`${label(c)}: at the limit → ${at.status} ${at.code} ${at.param} ${at.message}`);
      const over = await send(await c.request(c.max + 1));
      if (over.status !== 400 || over.code !== "validation_failed" || over.param !== c.param) {
        failures.push(`${label(c)}: one more → ${over.status} ${over.code} ${over.param} ${over.message}`);
      }
    });
    expect(failures).toEqual([]);
  }, 120_000);
});
