import { describe, expect, it } from "vitest";
import { granted, JWT_BEARER_GRANT_TYPE, registerAnonymous, tokenClient } from "../../support/agent-flow.ts";
import { raw } from "../../support/http.ts";
import { e2e } from "../../support/suite.ts";
import { useWorkspace } from "../../support/workspace.ts";
import { allTools, connect } from "./support.ts";

/**
 * `/mcp` over HTTP (docs/api/mcp.md): how a client that knows only the URL finds out how to
 * authenticate, which origins and methods are served, and what malformed requests get: a clear
 * error, never a 5xx, nothing written.
 */

/** The JSON-RPC message of an answer, sent as JSON or as one server-sent event. */
function rpcOf(res: { text: string; json: any }): any {
  if (res.json) return res.json;
  const data = res.text
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).trim());
  expect(data, res.text.slice(0, 200)).toHaveLength(1);
  return JSON.parse(data[0]!);
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};

e2e(
  "mcp: transport",
  (server) => {
    const { tenant, api } = useWorkspace(server);
    const post = (body: unknown, headers: Record<string, string> = {}, path = "/mcp") =>
      raw(`${server().url}${path}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tenant.key}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });

    describe("discovery from the URL alone", () => {
      it("answers 401 naming the MCP resource's metadata, which names the authorization server", async () => {
        const res = await raw(`${server().url}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify(INITIALIZE),
        });
        expect(res.status).toBe(401);
        expect(res.json.error).toMatchObject({ type: "authentication_error", code: "unauthenticated" });
        const challenge = res.headers.get("www-authenticate")!;
        expect(challenge).toBe(
          `Bearer resource_metadata="${server().url}/.well-known/oauth-protected-resource/mcp"`,
        );
        const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
        const metadata = await raw(metadataUrl);
        expect(metadata.status).toBe(200);
        expect(metadata.json).toMatchObject({
          resource: `${server().url}/mcp`,
          authorization_servers: [server().url],
          bearer_methods_supported: ["header"],
        });
        const authorizationServer = await raw(
          `${metadata.json.authorization_servers[0]}/.well-known/oauth-authorization-server`,
        );
        expect(authorizationServer.status).toBe(200);
        expect(authorizationServer.json.issuer).toBe(server().url);
        expect(authorizationServer.json.token_endpoint).toBe(`${server().url}/oauth2/token`);

        const invalid = await post(INITIALIZE, { authorization: "Bearer ktr_live_not_a_key" });
        expect(invalid.status).toBe(401);
        expect(invalid.headers.get("www-authenticate")).toBe(
          `Bearer resource_metadata="${server().url}/.well-known/oauth-protected-resource/mcp", error="invalid_token"`,
        );
      });

      it("serves the root protected-resource document, describing the deployment", async () => {
        const root = await raw(`${server().url}/.well-known/oauth-protected-resource`);
        expect(root.status).toBe(200);
        expect(root.json).toMatchObject({ resource: server().url, authorization_servers: [server().url] });
      });

      it("serves an agent token from the auth.md flow like an API key", async () => {
        const agent = await registerAnonymous(server(), "MCP agent");
        const token = granted(
          await tokenClient(server().url)(JWT_BEARER_GRANT_TYPE, { assertion: agent.identity_assertion }),
        ).access_token;
        const client = await connect("v2", `${server().url}/mcp`, token);
        try {
          const names = (await allTools(client)).tools.map((tool) => tool.name);
          // A sandbox agent holds the pre-claim scopes: its tools are exactly theirs.
          expect(names).toContain("create_lead");
          expect(names).not.toContain("list_agent_registrations");
          const created = await client.callTool({
            name: "create_lead",
            arguments: { first_name: "By agent" },
          });
          expect(created.structuredContent).toMatchObject({ object: "lead", first_name: "By agent" });
        } finally {
          await client.close();
        }
      });
    });

    describe("origins and methods", () => {
      it("refuses another site's Origin with 403 and serves its own and the allowed ones", async () => {
        const foreign = await post(INITIALIZE, { origin: "http://evil.example" });
        expect(foreign.status).toBe(403);
        expect(foreign.json.error).toMatchObject({ type: "permission_error", code: "origin_not_allowed" });
        // Also before any credential: the page learns nothing about keys.
        const anonymous = await raw(`${server().url}/mcp`, {
          method: "POST",
          headers: { origin: "http://evil.example", "content-type": "application/json" },
          body: JSON.stringify(INITIALIZE),
        });
        expect(anonymous.status).toBe(403);
        for (const origin of [new URL(server().url).origin, "https://tools.example.com"]) {
          const res = await post(INITIALIZE, { origin });
          expect(res.status, origin).toBe(200);
          expect(rpcOf(res).result.serverInfo).toMatchObject({ name: "kontor" });
        }
      });

      it("answers GET and DELETE with 405 Allow: POST", async () => {
        for (const method of ["GET", "DELETE", "PUT"]) {
          const res = await raw(`${server().url}/mcp`, {
            method,
            headers: { authorization: `Bearer ${tenant.key}`, accept: "text/event-stream" },
          });
          expect(res.status, method).toBe(405);
          expect(res.headers.get("allow")).toBe("POST");
          expect(res.json.error.code).toBe("method_not_allowed");
        }
      });
    });

    describe("bad input", () => {
      it("answers malformed JSON-RPC with a JSON-RPC error, never a 5xx, and writes nothing", async () => {
        const before = (await api.get("/leads?limit=100")).body.data.length;
        const cases: [string, unknown][] = [
          ["not JSON", "{nope"],
          ["not a request", { hello: "world" }],
          ["no method", { jsonrpc: "2.0", id: 1 }],
          ["a batch", [INITIALIZE, { ...INITIALIZE, id: 2 }]],
          ["an empty batch", []],
          [
            "tools/call without a name",
            { jsonrpc: "2.0", id: 3, method: "tools/call", params: { arguments: { first_name: "X" } } },
          ],
          [
            "a write in a batch",
            [
              {
                jsonrpc: "2.0",
                id: 4,
                method: "tools/call",
                params: { name: "create_lead", arguments: { first_name: "Batched" } },
              },
            ],
          ],
        ];
        for (const [name, body] of cases) {
          const res = await post(body);
          expect(res.status, `${name}: ${res.text.slice(0, 200)}`).toBeLessThan(500);
          expect(rpcOf(res).error, name).toMatchObject({
            code: expect.any(Number),
            message: expect.any(String),
          });
        }
        expect((await api.get("/leads?limit=100")).body.data.length).toBe(before);
      });

      it("refuses what Streamable HTTP does not allow, and takes a notification with 202", async () => {
        const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "list_leads" } };
        const jsonOnly = await post(call, { accept: "application/json" });
        expect(jsonOnly.status).toBe(406);
        expect(rpcOf(jsonOnly).error.message).toMatch(/^Not Acceptable/);
        const text = await post(call, { "content-type": "text/plain" });
        expect(text.status).toBe(415);
        expect(rpcOf(text).error.message).toMatch(/Content-Type must be application\/json/);
        const notRpc = await post({ jsonrpc: "1.0", id: 1, method: "tools/list" });
        expect(notRpc.status).toBe(400);
        expect([-32700, -32600]).toContain(rpcOf(notRpc).error.code);
        expect(rpcOf(notRpc).error.message).toMatch(/JSON-RPC/);
        const notification = await post({ jsonrpc: "2.0", method: "notifications/initialized" });
        expect(notification.status).toBe(202);
        expect(notification.text).toBe("");
        // A JSON-RPC response posted by a client (to a request the server never sent) has nothing to answer.
        expect((await post({ jsonrpc: "2.0", id: 99, result: {} })).status).toBe(202);
      });

      it("answers a protocol version it does not speak with one it does, and refuses it in the header", async () => {
        const res = await post({
          ...INITIALIZE,
          params: { ...INITIALIZE.params, protocolVersion: "1999-01-01" },
        });
        // A 2025-era server answers initialize with a version it speaks instead (the client then decides).
        expect(res.status).toBe(200);
        const version = rpcOf(res).result.protocolVersion;
        expect(version).toMatch(/^20\d\d-\d\d-\d\d$/);
        expect(version).not.toBe("1999-01-01");
        const header = await post(
          { jsonrpc: "2.0", id: 9, method: "tools/list", params: {} },
          { "mcp-protocol-version": "1999-01-01" },
        );
        expect(header.status).toBe(400);
      });

      it("answers a body over the route's limit with 413, and unknown URL parameters with 400", async () => {
        const huge = await post({
          jsonrpc: "2.0",
          id: 5,
          method: "tools/call",
          params: { name: "create_lead", arguments: { first_name: "x".repeat(26 * 1024 * 1024) } },
        });
        expect(huge.status).toBe(413);
        expect(huge.json.error.code).toBe("payload_too_large");
        const toolsets = await post(INITIALIZE, {}, "/mcp?toolsets=crm,nonsense");
        expect(toolsets.status).toBe(400);
        expect(toolsets.json.error).toMatchObject({ code: "validation_failed", param: "toolsets" });
        const other = await post(INITIALIZE, {}, "/mcp?read_only=maybe");
        expect(other.json.error).toMatchObject({ code: "validation_failed", param: "read_only" });
        const unknown = await post(INITIALIZE, {}, "/mcp?debug=1");
        expect(unknown.json.error).toMatchObject({ code: "validation_failed", param: "debug" });
      });
    });
  },
  { KONTOR_MCP_ALLOWED_ORIGINS: "https://tools.example.com" },
);
