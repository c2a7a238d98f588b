import { buildOperationNodeForField } from "@graphql-tools/utils";
import { type GraphQLSchema, type OperationDefinitionNode, OperationTypeNode } from "graphql";
import { createSofa } from "sofa-api";
import type { RouteEntry } from "./view.ts";

/** The operation Sofa runs for each route (every field of the REST type, models as `{id}`), by route key. */
export function sofaOperations(
  view: GraphQLSchema,
  table: RouteEntry[],
): Map<string, OperationDefinitionNode> {
  const sofa = createSofa({ schema: view, basePath: "/v1" });
  const operations = new Map<string, OperationDefinitionNode>();
  for (const entry of table) {
    const [typeName, fieldName] = entry.key.split(".") as [string, string];
    const kind =
      typeName === view.getQueryType()?.name ? OperationTypeNode.QUERY : OperationTypeNode.MUTATION;
    operations.set(
      entry.key,
      buildOperationNodeForField({
        schema: view,
        kind,
        field: fieldName,
        models: sofa.models,
        ignore: sofa.ignore,
        circularReferenceDepth: sofa.depthLimit,
      }),
    );
  }
  return operations;
}

/** Whether a route is a list: its field pages with `limit` (1–100 on every list, docs/api/pagination.md). */
export const isListRoute = (entry: RouteEntry) => entry.field.args.some((arg) => arg.name === "limit");
