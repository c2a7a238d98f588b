import type { DocumentNode, GraphQLSchema } from "graphql";
import type { Context } from "../../schema/context.ts";
import { type CatalogTool, toolCatalog } from "../tools/catalog.ts";
import type { JsonSchema } from "../tools/json-schema.ts";
import { capResult, runCatalogTool, type ToolResult, toolError } from "../tools/run.ts";
import { allows, type ScopeRequirement } from "../tools/scopes.ts";

export type { JsonSchema } from "../tools/json-schema.ts";
export { capResult, TOOL_OUTPUT_MAX_BYTES, type ToolError, type ToolResult } from "../tools/run.ts";
export type { ScopeRequirement } from "../tools/scopes.ts";

/** One read-only tool over the workspace: a Query field of the REST view, run as the caller. */
export interface ToolDefinition {
  /** The GraphQL field's name (`leads`, `lead`, `workspace`): also the function name the model calls. */
  name: string;
  description: string;
  /** JSON Schema of the arguments: an object with `additionalProperties: false`. */
  parameters: JsonSchema;
  scopes: ScopeRequirement;
  /** A query selecting exactly what the field's REST route answers, with one variable per argument. */
  document: DocumentNode;
}

/** Resources whose data is not the workspace's business (configuration, traffic, identities, the audit log): never tools. */
const NOT_BUSINESS_DATA = new Set(["webhooks", "logs", "agents", "audit"]);

const resourceOf = (scope: string) => scope.split(".")[0]!;

interface Built {
  definitions: ToolDefinition[];
  byName: Map<string, CatalogTool>;
}

const built = new WeakMap<GraphQLSchema, Built>();

function build(schema: GraphQLSchema): Built {
  const cached = built.get(schema);
  if (cached) return cached;
  const result: Built = { definitions: [], byName: new Map() };
  for (const tool of toolCatalog(schema)) {
    if (tool.kind !== "query") continue;
    if (tool.scopes.some((clause) => clause.some((scope) => NOT_BUSINESS_DATA.has(resourceOf(scope)))))
      continue;
    result.definitions.push({
      name: tool.field,
      description: tool.description,
      parameters: tool.parameters,
      scopes: tool.scopes,
      document: tool.document,
    });
    result.byName.set(tool.field, tool);
  }
  built.set(schema, result);
  return result;
}

/**
 * The workspace's read-only tools for `/v1/responses`: the queries of the tool catalog
 * (server/tools/catalog.ts), except those guarded by a webhooks, logs, agents or audit scope.
 * Built once per schema; a new resource's queries become tools by being in the schema.
 */
export function workspaceTools(schema: GraphQLSchema): ToolDefinition[] {
  return build(schema).definitions;
}

/** The tools a credential holding `scopes` may call (a tool without a requirement is always there). */
export function toolsFor(
  definitions: readonly ToolDefinition[],
  scopes: ReadonlySet<string>,
): ToolDefinition[] {
  return definitions.filter((definition) => allows(definition.scopes, scopes));
}

/**
 * Runs a tool as the caller (server/tools/run.ts) and caps what the model reads. Never throws for
 * the model's mistakes or the caller's lack of scope: they come back as `{ok: false, error}`.
 */
export async function runTool(
  definition: ToolDefinition,
  args: unknown,
  context: Context,
  schema: GraphQLSchema,
): Promise<ToolResult> {
  const tool = build(schema).byName.get(definition.name);
  if (!tool)
    return {
      ok: false,
      error: { code: "unknown_tool", message: `There is no tool named '${definition.name}'.` },
    };
  const result = await runCatalogTool(tool, args, context, schema);
  if (!result.ok) return { ok: false, error: toolError(result.error) };
  return capResult(result);
}
