import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/** The official clients a Kontor MCP test connects with: v2 in its default (2025, `initialize`) mode and pinned to 2026-07-28, and v1. */
export const CLIENTS = ["v2", "v2-modern", "v1"] as const;
export type ClientKind = (typeof CLIENTS)[number];

/** What the tests call on any of the clients (their methods share these names and shapes). */
export interface McpClient {
  listTools(params?: { cursor?: string }): Promise<{ tools: any[]; nextCursor?: string }>;
  callTool(params: { name: string; arguments?: Record<string, unknown> }): Promise<any>;
  listResources(): Promise<{ resources: any[] }>;
  readResource(params: { uri: string }): Promise<{ contents: any[] }>;
  close(): Promise<void>;
}

/**
 * Connects an official MCP client to `url` (`{host}/mcp`, with any query) with `key` as its bearer
 * token: returns the connected client.
 */
export async function connect(kind: ClientKind, url: string, key: string | undefined): Promise<McpClient> {
  const requestInit = key ? { headers: { Authorization: `Bearer ${key}` } } : {};
  const info = { name: `kontor-test-${kind}`, version: "1.0.0" };
  if (kind === "v1") {
    const client = new ClientV1(info);
    await client.connect(new TransportV1(new URL(url), { requestInit }));
    return client as unknown as McpClient;
  }
  const client = new ClientV2(
    info,
    kind === "v2-modern" ? { versionNegotiation: { mode: { pin: "2026-07-28" } } } : {},
  );
  await client.connect(new TransportV2(new URL(url), { requestInit }));
  return client as unknown as McpClient;
}

/** Every tool of the list, following nextCursor: returns the tools and how many pages it took. */
export async function allTools(client: McpClient): Promise<{ tools: any[]; pages: number }> {
  const tools: any[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools);
    cursor = page.nextCursor;
    pages++;
  } while (cursor && pages < 20);
  return { tools, pages };
}
