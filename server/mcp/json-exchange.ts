import {
  isInitializeRequest,
  isJsonContentType,
  type JSONRPCMessage,
  ProtocolErrorCode,
  parseJSONRPCMessage,
  type Server,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Transport,
} from "@modelcontextprotocol/server";

/** An HTTP answer as data: the status and the JSON body (`null`: none). */
export interface ExchangeAnswer {
  status: number;
  body: unknown;
}

/** JSON-RPC's first implementation-defined server error, which the SDK's transport answers HTTP refusals with. */
const SERVER_ERROR = -32000;

/** A JSON-RPC error answered over HTTP, as the SDK's Streamable HTTP transport words it. */
const rpcError = (status: number, code: number, message: string): ExchangeAnswer => ({
  status,
  body: { jsonrpc: "2.0", error: { code, message }, id: null },
});

const isAnswer = (message: JSONRPCMessage) => "id" in message && ("result" in message || "error" in message);

/**
 * The SDK's `Transport` for one HTTP exchange: the message of the request goes to the server, and
 * the answer to it (the only message a stateless JSON exchange sends) resolves `answer`.
 */
class ExchangeTransport implements Transport {
  onmessage?: Transport["onmessage"];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  supportedProtocolVersions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
  readonly answer: Promise<JSONRPCMessage>;
  #answered!: (message: JSONRPCMessage) => void;

  constructor() {
    this.answer = new Promise((resolve) => {
      this.#answered = resolve;
    });
  }
  async start(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    // Notifications and requests of the server's own (progress, logging) have no channel here.
    if (isAnswer(message)) this.#answered(message);
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
  setSupportedProtocolVersions(versions: string[]): void {
    this.supportedProtocolVersions = versions;
  }
}

/**
 * Serves one 2025-era Streamable HTTP request (the message already parsed, `undefined` when the
 * body was not JSON) statelessly with `server`, answering JSON rather than a server-sent event
 * (which every 2025 client accepts). It answers as the SDK's `WebStandardStreamableHTTPServerTransport`
 * does in its stateless JSON mode (406 without both media types in Accept, 415 for a body that is not
 * JSON, 400 -32700 for what is not one JSON-RPC message, 400 for an `MCP-Protocol-Version` the server
 * does not speak, 202 for a notification), without the stream machinery that mode still builds:
 * a third of the SDK's cost per call, measured in docs/performance.md.
 *
 * @example const { status, body } = await serveJsonExchange(request, parsed, serverFor(state))
 */
export async function serveJsonExchange(
  request: Request,
  body: unknown,
  server: Server,
): Promise<ExchangeAnswer> {
  const accept = request.headers.get("accept");
  if (!accept?.includes("application/json") || !accept.includes("text/event-stream"))
    return rpcError(
      406,
      SERVER_ERROR,
      "Not Acceptable: Client must accept both application/json and text/event-stream",
    );
  if (!isJsonContentType(request.headers.get("content-type")))
    return rpcError(415, SERVER_ERROR, "Unsupported Media Type: Content-Type must be application/json");
  if (body === undefined) return rpcError(400, ProtocolErrorCode.ParseError, "Parse error: Invalid JSON");
  let message: JSONRPCMessage;
  try {
    message = parseJSONRPCMessage(body);
  } catch {
    return rpcError(400, ProtocolErrorCode.ParseError, "Parse error: Invalid JSON-RPC message");
  }
  const transport = new ExchangeTransport();
  await server.connect(transport);
  const version = request.headers.get("mcp-protocol-version");
  if (
    !isInitializeRequest(message) &&
    version !== null &&
    !transport.supportedProtocolVersions.includes(version)
  )
    return rpcError(
      400,
      SERVER_ERROR,
      `Bad Request: Unsupported protocol version: ${version} (supported versions: ${transport.supportedProtocolVersions.join(", ")})`,
    );
  transport.onmessage?.(message, { request });
  if (!("method" in message && "id" in message)) return { status: 202, body: null };
  return { status: 200, body: await transport.answer };
}
