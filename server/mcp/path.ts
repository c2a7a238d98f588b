/** Where the MCP server answers (docs/api/mcp.md). */
export const MCP_PATH = "/mcp";

/** The RFC 9728 document of the MCP resource, which its 401 challenge names. */
export const MCP_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";
