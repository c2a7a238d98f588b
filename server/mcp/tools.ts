import type { Tool } from "@modelcontextprotocol/server";
import type { GraphQLSchema } from "graphql";
import { ApiError, validationFailed } from "../../schema/lib/errors.ts";
import { type CatalogTool, TOOL_AREAS, toolCatalog } from "../tools/catalog.ts";
import type { JsonSchema } from "../tools/json-schema.ts";
import { allows } from "../tools/scopes.ts";

/** What `/mcp?toolsets=…&read_only=…` narrows the tools to. */
export interface ToolNarrowing {
  /** Undefined: every area. */
  toolsets: ReadonlySet<string> | undefined;
  readOnly: boolean;
}

/** Tools in one page of `tools/list`: an all-scopes key's list comes in two pages. */
export const TOOLS_PAGE_SIZE = 50;

/** The argument every write tool takes, as the `Idempotency-Key` header works for REST. */
export const IDEMPOTENCY_KEY_ARGUMENT = "idempotency_key";

const IDEMPOTENCY_KEY_SCHEMA: JsonSchema = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  pattern: "^[\\x20-\\x7e]+$",
  description:
    "Makes a retry safe: the same key with the same arguments within 24 hours answers the first call's result instead of running again (1–255 printable ASCII characters).",
};

/**
 * Reads `?toolsets=` (a comma-separated list of areas) and `?read_only=true|false` of the `/mcp`
 * URL; anything else in them is a 400 naming the parameter.
 *
 * @example toolNarrowing(new URL("http://h/mcp?toolsets=crm,invoicing&read_only=true"))
 * // → { toolsets: Set {"crm", "invoicing"}, readOnly: true }
 */
export function toolNarrowing(url: URL, schema: GraphQLSchema): ToolNarrowing {
  for (const name of url.searchParams.keys()) {
    if (name !== "toolsets" && name !== "read_only")
      throw validationFailed(name, `Unknown query parameter '${name}': /mcp takes toolsets and read_only.`);
    if (url.searchParams.getAll(name).length > 1)
      throw validationFailed(name, `${name} was sent more than once.`);
  }
  const readOnlyParam = url.searchParams.get("read_only");
  if (readOnlyParam !== null && readOnlyParam !== "true" && readOnlyParam !== "false")
    throw validationFailed("read_only", "read_only must be true or false.");
  const toolsetsParam = url.searchParams.get("toolsets");
  let toolsets: Set<string> | undefined;
  if (toolsetsParam !== null) {
    const known = new Set<string>([...TOOL_AREAS, ...areasOf(schema)]);
    toolsets = new Set(toolsetsParam.split(",").map((part) => part.trim()));
    const unknown = [...toolsets].filter((area) => !known.has(area));
    if (unknown.length > 0 || toolsets.size === 0)
      throw validationFailed(
        "toolsets",
        `toolsets takes a comma-separated list of ${[...known].join(", ")}; got '${toolsetsParam}'.`,
      );
  }
  return { toolsets, readOnly: readOnlyParam === "true" };
}

const areasOf = (schema: GraphQLSchema) =>
  toolCatalog(schema).flatMap((tool) => (tool.area === undefined ? [] : [tool.area]));

/**
 * The tools this server offers a credential holding `scopes`, in catalog order: those its scopes
 * allow, in the chosen toolsets (the workspace summary is in every one), only reads when read-only.
 */
export function offeredTools(
  schema: GraphQLSchema,
  scopes: ReadonlySet<string>,
  narrowing: ToolNarrowing,
): CatalogTool[] {
  return narrowedTools(schema, narrowing).filter((tool) => allows(tool.scopes, scopes));
}

/** The tools a call may name: those of the toolsets and read-only choice, whatever the scopes (a missing scope is the call's error). */
export function narrowedTools(schema: GraphQLSchema, narrowing: ToolNarrowing): CatalogTool[] {
  return toolCatalog(schema).filter(
    (tool) =>
      (!narrowing.readOnly || tool.kind === "query") &&
      (narrowing.toolsets === undefined || tool.area === undefined || narrowing.toolsets.has(tool.area)),
  );
}

/** A catalog tool as `tools/list` describes it. */
export function describeTool(tool: CatalogTool): Tool {
  const inputSchema =
    tool.kind === "mutation"
      ? {
          ...tool.parameters,
          properties: {
            ...(tool.parameters.properties as Record<string, JsonSchema>),
            [IDEMPOTENCY_KEY_ARGUMENT]: IDEMPOTENCY_KEY_SCHEMA,
          },
        }
      : tool.parameters;
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema as Tool["inputSchema"],
    outputSchema: tool.output as Tool["outputSchema"],
    annotations: { title: tool.title, ...tool.annotations },
  };
}

const invalidCursor = () =>
  new ApiError(400, "invalid_request_error", "validation_failed", "The cursor is not one tools/list gave.", {
    param: "cursor",
  });

/**
 * One page of `tools`: the first TOOLS_PAGE_SIZE after `cursor` (the name of the last tool of
 * the page before, encoded), and the cursor of the next page when there is one.
 */
export function pageOf<T extends { name: string }>(
  tools: readonly T[],
  cursor: string | undefined,
): { page: T[]; nextCursor: string | undefined } {
  let start = 0;
  if (cursor !== undefined) {
    const after = Buffer.from(cursor, "base64url").toString("utf8");
    const index = tools.findIndex((tool) => tool.name === after);
    if (index < 0) throw invalidCursor();
    start = index + 1;
  }
  const page = tools.slice(start, start + TOOLS_PAGE_SIZE);
  const more = start + TOOLS_PAGE_SIZE < tools.length;
  return {
    page,
    nextCursor: more ? Buffer.from(page[page.length - 1]!.name, "utf8").toString("base64url") : undefined,
  };
}
