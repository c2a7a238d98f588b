import { OperationTypeNode, type GraphQLObjectType, type GraphQLSchema, type OperationDefinitionNode } from "graphql";
import { buildOperationNodeForField } from "@graphql-tools/utils";
import { createSofa } from "sofa-api";
import { MAX_LIMIT } from "../../schema/lib/cursor.ts";
import { RESPONSE_BUDGET_BYTES } from "../../schema/lib/limits.ts";
import { estimate } from "../response-cost.ts";
import type { RouteEntry } from "./view.ts";

export interface RoutePrice {
  /** Bytes of the largest answer at a page of one. */
  base: number;
  /** Bytes each further item of a page may add (0 for routes without `limit`). */
  perItem: number;
  /** The largest `limit` whose worst-case answer fits the response budget. */
  maxLimit: number | undefined;
}

/** The operation Sofa runs for each route (every field of the REST type, models as `{id}`), by route key. */
export function sofaOperations(view: GraphQLSchema, table: RouteEntry[]): Map<string, OperationDefinitionNode> {
  const sofa = createSofa({ schema: view, basePath: "/v1" });
  const operations = new Map<string, OperationDefinitionNode>();
  for (const entry of table) {
    const [typeName, fieldName] = entry.key.split(".") as [string, string];
    const kind = typeName === view.getQueryType()?.name ? OperationTypeNode.QUERY : OperationTypeNode.MUTATION;
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

/**
 * What each REST route can answer at most: Sofa runs a fixed operation per route (every field of
 * the REST type), so its worst case depends only on the page size. A list route whose items can be
 * large (an invoice holds up to 250 lines and 100 payments) takes a smaller largest `limit`, so no
 * REST answer can exceed the response budget either.
 */
export function priceRoutes(view: GraphQLSchema, table: RouteEntry[]): Map<string, RoutePrice> {
  const operations = sofaOperations(view, table);
  const prices = new Map<string, RoutePrice>();
  for (const entry of table) {
    const typeName = entry.key.split(".")[0]!;
    const operation = operations.get(entry.key)!;
    const root = view.getType(typeName) as GraphQLObjectType;
    const at = (limit: number) => estimate(view, () => undefined, operation.selectionSet, root, { limit }).bytes;
    const paged = entry.field.args.some((arg) => arg.name === "limit");
    const base = at(1);
    const perItem = paged ? at(2) - base : 0;
    const fits = perItem > 0 ? 1 + Math.floor((RESPONSE_BUDGET_BYTES - base) / perItem) : MAX_LIMIT;
    prices.set(entry.key, { base, perItem, maxLimit: paged ? Math.max(1, Math.min(MAX_LIMIT, fits)) : undefined });
  }
  return prices;
}
