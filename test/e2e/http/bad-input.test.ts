import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "../../../schema/lib/scopes.ts";
import {
  type Answer,
  type Case,
  casesFor,
  describeFailure,
  type Fixtures,
  type OpenApiDoc,
  pool,
  problemsOf,
  SLOW_MS,
  send,
} from "../../support/bad-input.ts";
import { call } from "../../support/http.ts";
import { type Receiver, startReceiver } from "../../support/receiver.ts";
import { e2e } from "../../support/suite.ts";
import { sweepFixtures } from "../../support/sweep-fixtures.ts";

/**
 * Every operation of /v1/openapi.json, fed malformed ids, query strings and bodies generated from
 * the document itself, so a route added later is swept without touching this file. Each answer
 * must be a JSON 2xx or 4xx with X-Request-Id, errors in the API's shape, no stack trace, in time.
 */

const CONCURRENCY = 8;
const MAX_CASES = 5_000;
/** Requests given to one key: the max plan allows 1200 a minute, and fixtures share the first key. */
const PER_KEY = 900;

describe("bad-input judge", () => {
  const ok = { expect: "reject" as const, realId: false };
  const answer = (status: number, body: unknown, headers: Record<string, string> = {}, ms = 10): Answer => ({
    status,
    headers: new Headers({ "content-type": "application/json", "x-request-id": "req_01ABC", ...headers }),
    text: typeof body === "string" ? body : JSON.stringify(body),
    ms,
  });
  const error = {
    error: {
      type: "invalid_request_error",
      code: "validation_failed",
      message: "no",
      param: "name",
      request_id: "req_01ABC",
    },
  };

  it("accepts a 4xx in the error shape whose request id matches the header", () => {
    expect(problemsOf(ok, answer(400, error))).toEqual([]);
    expect(problemsOf({ expect: "any", realId: true }, answer(200, { object: "lead" }))).toEqual([]);
  });

  it("flags 5xx, a 2xx where a 4xx was due, a 404 for a real id and rate limiting", () => {
    expect(problemsOf(ok, answer(500, { error: { ...error.error, type: "api_error" } }))).toContain(
      "server error",
    );
    expect(problemsOf(ok, answer(201, { object: "lead" }))).toContain("accepted (a 4xx was due)");
    expect(problemsOf({ expect: "any", realId: true }, answer(404, error))).toContain(
      "404 with a real id: the input never reached validation",
    );
    expect(problemsOf(ok, answer(429, error))).toContain("rate limited: the case was not exercised");
  });

  it("flags a body that is not JSON, a wrong Content-Type and a missing or different request id", () => {
    expect(problemsOf(ok, answer(431, "", { "content-type": "" }))).toEqual(
      expect.arrayContaining(["body is not JSON", 'Content-Type ""']),
    );
    const headerless = answer(400, error);
    headerless.headers.delete("x-request-id");
    expect(problemsOf(ok, headerless)).toContain("X-Request-Id null");
    expect(problemsOf(ok, answer(400, { error: { ...error.error, request_id: "req_OTHER" } }))).toEqual([
      "error.request_id req_OTHER differs from X-Request-Id req_01ABC",
    ]);
    expect(problemsOf(ok, answer(400, { message: "bad" }))).toEqual([
      "error body not {error: {type, code, message, request_id}}",
    ]);
  });

  it("flags stack traces, slow answers and missing answers", () => {
    const stack = {
      error: { ...error.error, message: "boom\n    at resolve (/work/main/schema/resources/lead.ts:12:3)" },
    };
    expect(problemsOf(ok, answer(400, stack))).toContain("stack trace in the body");
    expect(problemsOf(ok, answer(400, error, {}, SLOW_MS + 1))[0]).toMatch(/^answered after \d+ ms/);
    expect(
      problemsOf(ok, {
        status: 0,
        headers: new Headers(),
        text: "",
        ms: 1,
        error: "TypeError ECONNRESET: fetch failed",
      }),
    ).toEqual(["no HTTP answer (TypeError ECONNRESET: fetch failed)"]);
  });
});

e2e("bad input sweep", (server) => {
  let receiver: Receiver;
  let fixtures: Fixtures;
  let cases: Case[];
  const keys: string[] = [];
  let turn = 0;

  /** Round-robin over the keys; a 429 is retried on the next key rather than counted. */
  async function sendCase(c: Case): Promise<Answer> {
    let answer: Answer;
    let tries = 0;
    do answer = await send(server().api, c, keys[turn++ % keys.length]!);
    while (answer.status === 429 && ++tries < keys.length);
    return answer;
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    const tenant = await server().tenant({ plan: "max" });
    keys.push(tenant.key);
    const document = await call<OpenApiDoc>("GET", `${server().api}/openapi.json`);
    expect(document.status).toBe(200);
    const request = (method: string, path: string, body?: unknown) =>
      call(method, server().api + path, { key: tenant.key, body });
    fixtures = await sweepFixtures({
      doc: document.body,
      request,
      prisma: server().running.db.prisma,
      workspaceId: tenant.workspaceId,
      receiverUrl: receiver.url("/sweep"),
      label: "sweep",
    });
    cases = fixtures.endpoints.flatMap((endpoint) => casesFor(fixtures, endpoint));
    const fresh = cases.filter((c) => c.realId && c.endpoint.method === "DELETE").length;
    for (let i = 0; i < Math.ceil((cases.length + fresh) / PER_KEY); i++) {
      keys.push((await server().key(tenant.workspaceId, [...SCOPES])).key);
    }
  });

  afterAll(async () => {
    await receiver?.close();
  });

  it("sweeps every operation of the document with each family of cases that applies to it", () => {
    expect(fixtures.endpoints.length).toBeGreaterThan(10);
    expect(cases.length).toBeLessThanOrEqual(MAX_CASES);
    for (const endpoint of fixtures.endpoints) {
      const mine = cases.filter((c) => c.endpoint === endpoint);
      const families = new Set(mine.map((c) => c.family));
      expect(families.has("path"), `${endpoint.label}: path cases`).toBe(endpoint.pathParams.length > 0);
      expect(families.has("query"), `${endpoint.label}: query cases`).toBe(true);
      expect(families.has("body"), `${endpoint.label}: body cases`).toBe(endpoint.method !== "GET");
      expect(families.has("header"), `${endpoint.label}: header cases`).toBe(
        endpoint.headerParams.length > 0,
      );
      for (const param of endpoint.queryParams) {
        expect(
          mine.some((c) => c.variant.startsWith(`${param.name}=`)),
          `${endpoint.label}: ${param.name}`,
        ).toBe(true);
      }
      const properties = Object.keys(endpoint.body?.schema.properties ?? {});
      for (const property of properties) {
        expect(
          mine.some((c) => c.variant.startsWith(`${property}: `)),
          `${endpoint.label}: ${property}`,
        ).toBe(true);
      }
    }
  });

  it("gives query and body cases real objects: every path id of the fixtures is found", async () => {
    const reads = fixtures.endpoints.filter((e) => e.method === "GET" && e.pathParams.length > 0);
    expect(reads.length).toBeGreaterThan(0);
    for (const endpoint of reads) {
      const res = await call("GET", server().api + (await fixtures.concretePath(endpoint)), { key: keys[0] });
      expect(res.status, `${endpoint.label}: ${JSON.stringify(res.body).slice(0, 200)}`).toBe(200);
    }
  });

  it("answers every malformed variant with a well-formed 4xx, or a clean 2xx where the input may be accepted", async () => {
    expect(cases.length).toBeGreaterThan(0);
    const answers = await pool(cases, CONCURRENCY, sendCase);
    for (const endpoint of fixtures.endpoints) {
      const mine: string[] = [];
      let total = 0;
      cases.forEach((c, index) => {
        if (c.endpoint !== endpoint) return;
        total++;
        const problems = problemsOf(c, answers[index]!);
        if (problems.length > 0) mine.push(describeFailure(c, answers[index]!, problems));
      });
      expect
        .soft(
          mine.length,
          `${endpoint.label}: ${mine.length} of ${total} cases failed\n  ${mine.join("\n  ")}\n`,
        )
        .toBe(0);
    }
  }, 180_000);
});
