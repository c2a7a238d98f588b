import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createSchema, createYoga, type Plugin } from "graphql-yoga";
import { afterAll, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { guarded } from "../../server/http/guard.ts";
import { newRequestState } from "../../server/http/request-state.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("guarded plugins", () => {
  const failing: Plugin = {
    onRequest({ url }) {
      if (url.pathname === "/sync") throw new Error("thrown in onRequest");
      if (url.pathname === "/async") return Promise.reject(new Error("rejected in onRequest"));
    },
    onResponse({ request }) {
      if (new URL(request.url).pathname === "/graphql") throw new Error("thrown in onResponse");
    },
  };
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: "type Query { ok: Boolean }",
      resolvers: { Query: { ok: () => true } },
    }),
    plugins: guarded([failing]),
    logging: false,
  });
  // The request's state in Yoga's server context, as server/runtime/server.ts hands it in.
  const fetch = (path: string) =>
    yoga.fetch(
      `http://localhost${path}`,
      { headers: { accept: "application/json" } },
      { state: newRequestState() },
    );
  let stderr: MockInstance;
  const logged = () => stderr.mock.calls.map((call) => String(call[0])).join("");
  beforeAll(() => {
    stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  });
  afterAll(() => stderr.mockRestore());

  it.each(["/sync", "/async"])(
    "a request hook that fails (%s) ends the request with the API's 500, never a stack trace",
    async (path) => {
      const res = await fetch(path);
      expect(res.status).toBe(500);
      expect(res.headers.get("content-type")).toMatch(/application\/json/);
      const body = await res.json();
      expect(body.error).toMatchObject({
        type: "api_error",
        code: "internal_error",
        request_id: expect.stringMatching(/^req_/),
      });
      expect(JSON.stringify(body)).not.toMatch(/rejected|thrown|\bat\s/);
      // The cause is in the log, under the request id the caller was given.
      expect(logged()).toContain(body.error.request_id);
      expect(logged()).toMatch(path === "/sync" ? /thrown in onRequest/ : /rejected in onRequest/);
    },
  );

  it("a response hook that fails leaves the response as it was", async () => {
    const res = await fetch("/graphql?query=%7Bok%7D");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { ok: true } });
    expect(logged()).toContain("thrown in onResponse");
  });
});

describe("process guards", () => {
  it("an uncaught exception or rejection is logged and the process carries on", () => {
    const script = `
      const { installProcessGuards } = await import("./server/runtime/process-guards.ts");
      installProcessGuards();
      setTimeout(() => { throw new Error("boom in a timer"); }, 5);
      setTimeout(() => { Promise.reject(new Error("nobody caught me")); }, 10);
      setTimeout(() => { console.log("still serving"); process.exit(0); }, 50);`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, KONTOR_LOG: "info" },
      timeout: 30_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("still serving");
    expect(run.stderr).toContain("boom in a timer");
    expect(run.stderr).toContain("nobody caught me");
  });
});
