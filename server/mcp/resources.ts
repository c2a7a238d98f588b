import { ResourceNotFoundError } from "@modelcontextprotocol/server";

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
 * `resources/list` and `resources/read` over a fixed set of documents (docs/api/mcp.md): the
 * OpenAPI document, the GraphQL SDL and the agents' guide, as the deployment serves them.
 *
 * @example read(resources, "kontor://schema.graphql") // → { contents: [{ uri, mimeType: "application/graphql", text: "type Query …" }] }
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

export function readResource(resources: readonly McpResource[], uri: string) {
  const resource = resources.find((candidate) => candidate.uri === uri);
  if (!resource) throw new ResourceNotFoundError(uri, `There is no resource ${uri}: see resources/list.`);
  return { contents: [{ uri, mimeType: resource.mimeType, text: resource.text() }] };
}
