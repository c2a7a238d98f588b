import { buildOperationNodeForField } from "@graphql-tools/utils";
import { type DocumentNode, type GraphQLSchema, Kind, OperationTypeNode } from "graphql";
import { createSofa } from "sofa-api";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../../schema/lib/cursor.ts";
import { restView } from "../../schema/lib/rest.ts";
import type { Resource } from "../../schema/lib/scopes.ts";
import { isListRoute } from "../rest/operations.ts";
import { type RouteEntry, routeTable } from "../rest/view.ts";
import { argumentsSchema, type JsonSchema, outputSchema } from "./json-schema.ts";
import { fieldScopes, type ScopeRequirement } from "./scopes.ts";

/** The areas tools are grouped in (`/mcp?toolsets=crm,invoicing`), named in docs/api/mcp.md. */
export const TOOL_AREAS = [
  "crm",
  "invoicing",
  "inventory",
  "projects",
  "storage",
  "webhooks",
  "logs",
  "agents",
] as const;
export type ToolArea = (typeof TOOL_AREAS)[number];

/** A scope's resource (`leads` of `leads.read`) → its area: a new resource of the catalog fails to compile until it has one. */
const AREA_OF: Record<Resource | "payments" | "audit", ToolArea> = {
  clients: "crm",
  leads: "crm",
  invoices: "invoicing",
  payments: "invoicing",
  inventory: "inventory",
  projects: "projects",
  storage: "storage",
  webhooks: "webhooks",
  logs: "logs",
  audit: "logs",
  agents: "agents",
};

/** Mutations that remove or end something for good: deletes, voids and revocations. */
const DESTRUCTIVE = /^(delete|remove|void|revoke)[A-Z]/;
/** Mutations that a repeat leaves as the first made it: an update, a delete, a state change. */
const IDEMPOTENT = /^(update|delete|remove|send|void|accept|decline|revoke)[A-Z]/;

/** The hints MCP clients read before calling (a host may run read-only tools without asking). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint: boolean;
  openWorldHint: false;
}

/** One tool: a Query or Mutation field with a REST route, run as the caller. */
export interface CatalogTool {
  /** The GraphQL field (`leads`, `createLead`). */
  field: string;
  /** The snake_case tool name: `list_leads`, `get_lead`, `create_lead`, `record_payment`. */
  name: string;
  kind: "query" | "mutation";
  /** The route's summary, for people (`Create a lead`). */
  title: string;
  description: string;
  /** Its toolset (a ToolArea); undefined for the workspace summary, which is in every one. */
  area: string | undefined;
  scopes: ScopeRequirement;
  /** JSON Schema of the arguments: an object with `additionalProperties: false`. */
  parameters: JsonSchema;
  /** JSON Schema of the answer: what the REST route answers. */
  output: JsonSchema;
  annotations: ToolAnnotations;
  /** A document selecting exactly what the field's REST route answers, one variable per argument. */
  document: DocumentNode;
  /** Its REST route: arguments are checked as the route checks them. */
  route: RouteEntry;
  /** The largest page of a list; undefined for anything else. */
  maxLimit: number | undefined;
}

const snake = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

function toolName(field: string, kind: CatalogTool["kind"], list: boolean): string {
  if (kind === "mutation") return snake(field);
  return `${list ? "list" : "get"}_${snake(field)}`;
}

function annotations(field: string, kind: CatalogTool["kind"]): ToolAnnotations {
  if (kind === "query") return { readOnlyHint: true, idempotentHint: true, openWorldHint: false };
  return {
    readOnlyHint: false,
    destructiveHint: DESTRUCTIVE.test(field),
    idempotentHint: IDEMPOTENT.test(field),
    openWorldHint: false,
  };
}

const built = new WeakMap<GraphQLSchema, CatalogTool[]>();

/**
 * Every tool of the schema, in schema order: one per Query and Mutation field that has a REST
 * route and whose scopes are known before it runs. Built once per schema; a new resource's
 * fields become tools by being in the schema. Both the AI responses (server/ai/tools.ts, queries
 * only) and the MCP server (server/mcp/tools.ts) take their tools from here.
 *
 * @example toolCatalog(schema).find((tool) => tool.name === "create_lead")?.annotations
 * // → { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false }
 */
export function toolCatalog(schema: GraphQLSchema): CatalogTool[] {
  const cached = built.get(schema);
  if (cached) return cached;
  const view = restView(schema);
  const queryName = view.getQueryType()?.name;
  // Sofa builds each route's operation with these rules; the tools select what REST answers.
  const sofa = createSofa({ basePath: "/v1", schema: view });
  const tools: CatalogTool[] = [];
  for (const route of routeTable(view)) {
    const field = route.field;
    const scopes = fieldScopes(field);
    // A rule only known at run time cannot say who may see the tool: such a field is no tool.
    if (!scopes) continue;
    const kind = route.key.startsWith(`${queryName}.`) ? "query" : "mutation";
    const list = isListRoute(route);
    // 1–100 on every list (docs/api/pagination.md): a page of large items stops early by itself.
    const maxLimit = list ? MAX_LIMIT : undefined;
    const parameters = argumentsSchema(field.args);
    const limit = (parameters.properties as Record<string, JsonSchema>).limit;
    if (limit && maxLimit !== undefined) {
      Object.assign(limit, {
        minimum: 1,
        maximum: maxLimit,
        description: `How many objects a page holds: 1–${maxLimit}, default ${Math.min(DEFAULT_LIMIT, maxLimit)}.`,
      });
    }
    const operation = buildOperationNodeForField({
      schema: view,
      kind: kind === "query" ? OperationTypeNode.QUERY : OperationTypeNode.MUTATION,
      field: field.name,
      models: sofa.models,
      ignore: sofa.ignore,
      circularReferenceDepth: sofa.depthLimit,
    });
    const resource = scopes[0]?.[0]?.split(".")[0];
    tools.push({
      field: field.name,
      name: toolName(field.name, kind, list),
      kind,
      title: route.route.summary,
      description:
        field.description ?? `${route.route.summary} (${route.route.method} /v1${route.route.path}).`,
      // A resource with no area of its own (a new one) makes one under its own name.
      area: resource ? (AREA_OF[resource as keyof typeof AREA_OF] ?? resource) : undefined,
      scopes,
      parameters,
      output: outputSchema(view, operation),
      annotations: annotations(field.name, kind),
      document: { kind: Kind.DOCUMENT, definitions: [operation] },
      route,
      maxLimit,
    });
  }
  built.set(schema, tools);
  return tools;
}
