import { randomBytes } from "node:crypto";
import type autocannon from "autocannon";

/** The requests the bench sends (bench/run.ts measures them one kind at a time, bench/soak.ts mixed). */

export type Kind = "get" | "graphql" | "mcp" | "list" | "post";
export const KIND_LABEL: Record<Kind, string> = {
  get: "GET /v1/leads/{id}",
  graphql: "POST /graphql lead(id)",
  mcp: "POST /mcp tools/call get_lead",
  list: "GET /v1/leads",
  post: "POST /v1/leads",
};

/** The body of every measured create: a few fields of each kind, so validation and mapping have work. */
export const POST_BODY = JSON.stringify({
  full_name: "Grace Brewster Hopper",
  company_name: "Eckert–Mauchly",
  email: "Grace@Example.com",
  source: "bench",
  stage: "contacted",
  priority: "high",
  estimated_value: 2500.5,
  expected_close_date: "2027-03-01",
});

/** The headers of an MCP request over Streamable HTTP. */
export const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};

/** The JSON-RPC body of `tools/call get_lead` for `leadId`. */
export const mcpCall = (leadId: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "get_lead", arguments: { id: leadId } },
  });

/** The `structuredContent` of an MCP answer, sent as JSON or as one server-sent event. */
export function mcpStructured(text: string): unknown {
  const data = text.trimStart().startsWith("{")
    ? text
    : (text
        .split("\n")
        .find((line) => line.startsWith("data:"))
        ?.slice(5) ?? "null");
  return (JSON.parse(data) as { result?: { structuredContent?: unknown } } | null)?.result?.structuredContent;
}

export interface Fixture {
  keys: string[];
  leadId: string;
  query: string;
}

export function requestOf(kind: Kind, fx: Fixture): autocannon.Request {
  let next = Math.floor(Math.random() * fx.keys.length);
  const auth = () => `Bearer ${fx.keys[next++ % fx.keys.length]}`;
  const run = randomBytes(4).toString("hex");
  let n = 0;
  switch (kind) {
    case "get":
      return {
        method: "GET",
        path: `/v1/leads/${fx.leadId}`,
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: auth() } }),
      };
    case "list":
      return {
        method: "GET",
        path: "/v1/leads",
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: auth() } }),
      };
    case "graphql":
      return {
        method: "POST",
        path: "/graphql",
        body: JSON.stringify({ query: fx.query }),
        setupRequest: (req) => ({
          ...req,
          headers: { ...req.headers, authorization: auth(), "content-type": "application/json" },
        }),
      };
    case "mcp":
      // A stateless 2025-era call, as any client sends after its handshake (which may have reached another process).
      return {
        method: "POST",
        path: "/mcp",
        body: mcpCall(fx.leadId),
        setupRequest: (req) => ({
          ...req,
          headers: { ...req.headers, authorization: auth(), ...MCP_HEADERS },
        }),
      };
    case "post":
      return {
        method: "POST",
        path: "/v1/leads",
        body: POST_BODY,
        setupRequest: (req) => ({
          ...req,
          headers: {
            ...req.headers,
            authorization: auth(),
            "content-type": "application/json",
            "idempotency-key": `bench-${run}-${n++}`,
          },
        }),
      };
  }
}

export async function call(
  url: string,
  path: string,
  key: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${url}${path}`, {
    method: init.method ?? "GET",
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.body && { "content-type": "application/json" }),
      ...init.headers,
    },
    ...(init.body && { body: init.body }),
  });
  return { status: res.status, text: await res.text() };
}

/** What the reads read: one lead with every field set, and 40 more so a list of 20 has a next page. */
export async function createFixture(url: string, keys: string[]): Promise<Fixture & { fields: string[] }> {
  const created = await call(url, "/v1/leads", keys[0]!, {
    method: "POST",
    body: JSON.stringify({
      full_name: "Ada Lovelace",
      company_name: "Analytical Engines",
      email: "ada@example.com",
      phone: "+44 20 7946 0018",
      source: "referral",
      notes: "Wants the difference engine, then the analytical one.",
      stage: "qualified",
      priority: "urgent",
      estimated_value: 1200,
      currency: "GBP",
      expected_close_date: "2027-06-30",
      next_follow_up_at: "2027-01-04T09:30:00Z",
      last_contacted_at: "2026-11-20T16:45:12.345Z",
    }),
  });
  if (created.status !== 201) throw new Error(`could not create the lead: ${created.text}`);
  const lead = JSON.parse(created.text) as Record<string, unknown>;
  for (let i = 0; i < 40; i++) {
    const more = await call(url, "/v1/leads", keys[(i % Math.max(1, keys.length - 1)) + 1] ?? keys[0]!, {
      method: "POST",
      body: JSON.stringify({
        first_name: `Lead ${i}`,
        last_name: i % 2 ? "Bench" : null,
        email: `lead${i}@example.com`,
        estimated_value: i * 10,
      }),
    });
    if (more.status !== 201) throw new Error(`could not create the leads for the list: ${more.text}`);
  }
  // The GraphQL read selects exactly the fields the REST representation has.
  const fields = Object.keys(lead);
  return {
    keys,
    leadId: String(lead.id),
    query: `query { lead(id: "${String(lead.id)}") { ${fields.join(" ")} } }`,
    fields,
  };
}
