/** One document an MCP client may read: its URI, what it is, and its text (made once, on first read). */
export interface McpResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  text: () => string;
}

/** Makes `make` run once, on first use. */
export function once(make: () => string): () => string {
  let made: string | undefined;
  return () => (made ??= make());
}

/**
 * `resources/list` over a fixed set of documents (docs/api/mcp.md): the
 * OpenAPI document, the GraphQL SDL and the agents' guide, as the deployment serves them.
 *
 * @example listResources(resources) // → { resources: [{ uri: "kontor://openapi.json", name, title, description, mimeType }, …] }
 */
export function listResources(resources: readonly McpResource[]) {
  return {
    resources: resources.map(({ uri, name, title, description, mimeType }) => ({
      uri,
      name,
      title,
      description,
      mimeType,
    })),
  };
}
