import { printSchema } from "graphql";
import { schema } from "../../schema/index.ts";
import { restView } from "../../schema/lib/rest.ts";
import { renderGuide } from "../agents/guide.ts";
import { buildOpenApi, type OpenApiExtension } from "../rest/openapi.ts";
import { routeTable } from "../rest/view.ts";
import { baseUrl, type Config } from "../runtime/config.ts";
import { type McpResource, once } from "./resources.ts";

/**
 * The documents of the MCP server's `resources/read`: what `/v1/openapi.json`, the committed SDL and
 * `/auth.md` serve, made from the same code.
 */
export function mcpResources(config: Config, openApiExtensions: OpenApiExtension[]): McpResource[] {
  return [
    {
      uri: "kontor://openapi.json",
      name: "openapi.json",
      title: "Kontor REST API (OpenAPI 3.1)",
      description: "Every /v1 route with its parameters, bodies, responses and error codes.",
      mimeType: "application/json",
      text: once(() =>
        JSON.stringify(buildOpenApi(routeTable(restView(schema)), config, openApiExtensions), null, 2),
      ),
    },
    {
      uri: "kontor://schema.graphql",
      name: "schema.graphql",
      title: "Kontor GraphQL schema (SDL)",
      description: "The schema every tool, REST route and GraphQL query is made from.",
      mimeType: "application/graphql",
      text: once(() => `${printSchema(schema)}\n`),
    },
    {
      uri: "kontor://auth.md",
      name: "auth.md",
      title: "How an agent registers and gets tokens",
      description: "The agent-registration protocol of this deployment, step by step, with its real URLs.",
      mimeType: "text/markdown",
      text: once(() => renderGuide({ hostUrl: config.publicUrl, baseUrl: baseUrl(config) })),
    },
  ];
}
