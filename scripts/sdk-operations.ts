import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  buildSchema,
  type FieldNode,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
  print,
} from "graphql";
import { createSofa } from "sofa-api";

/**
 * The documents the SDK is generated from (`npm run generate` runs this, then graphql-codegen):
 *
 * - `sdk/src/generated/operations.graphql`: one operation per Query and Mutation field of the committed SDL
 *   (but for the dashboard's session-only fields, which no API key or agent token may ask),
 *   selecting every field (nested relations one level deep) as far as the server's GraphQL cost
 *   limits allow, named after the field (`lead` → `Lead`, `createLead` → `CreateLead`). Codegen
 *   turns them into `LeadQuery`, `LeadQueryVariables` and the typed document `LeadDocument` that
 *   `kontor.graphql(...)` takes.
 * - `sdk/src/generated/rest.graphql`: for every `/v1` route, the very selection Sofa runs for it (the REST
 *   view of the schema, built with Sofa's own settings), named `Rest` + the field. Codegen turns
 *   them into the result types of the REST methods, so a REST body is typed exactly as served.
 * - `sdk/src/generated/routes.ts`: the route table as types (`"GET /leads/{id}"` → result and
 *   variables), which the SDK's methods are written against.
 */

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..");

const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

function named(operation: OperationDefinitionNode, name: string): OperationDefinitionNode {
  return { ...operation, name: { kind: Kind.NAME, value: name } };
}

function rootFields(schema: GraphQLSchema) {
  return [
    ...Object.keys(schema.getQueryType()?.getFields() ?? {}).map((field) => ({
      field,
      kind: OperationTypeNode.QUERY,
    })),
    ...Object.keys(schema.getMutationType()?.getFields() ?? {}).map((field) => ({
      field,
      kind: OperationTypeNode.MUTATION,
    })),
  ];
}

/**
 * Root fields only a user signed in to the dashboard may ask (scope-auth `session` or `owner`):
 * an API key or agent token, the SDK's credentials, gets 403 session_required from them.
 */
export function sessionOnlyFields(schema: GraphQLSchema): Set<string> {
  const only = new Set<string>();
  for (const root of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      const scopes = (field.extensions.pothosOptions as { authScopes?: Record<string, unknown> } | undefined)
        ?.authScopes;
      if (scopes && ("session" in scopes || "owner" in scopes)) only.add(field.name);
    }
  }
  return only;
}

type Estimate = (
  schema: GraphQLSchema,
  operation: OperationDefinitionNode,
) => { cost: number; bytes: number; lists: number };

interface Context {
  /** The schema of the committed SDL. */
  sdl: GraphQLSchema;
  /** The REST view of the code's schema (root fields with a route, no GraphQL-only relations). */
  view: GraphQLSchema;
  /** Root fields left out of the SDK (sessionOnlyFields). */
  sessionOnly: Set<string>;
  table: Array<{
    key: string;
    field: { name: string };
    route: { method: string; path: string; status: number; summary: string };
    pathParams: string[];
  }>;
  sofa: { models: string[]; ignore: string[]; depthLimit: number };
  /** The server's own worst-case estimate of an operation (the GraphQL cost rule's). */
  estimate: Estimate;
  limits: { maxCost: number; maxListNesting: number; budgetBytes: number };
}

async function context(sdl: string): Promise<Context> {
  const [
    { schema },
    { restView },
    { routeTable },
    { estimate },
    { GRAPHQL_LIMITS },
    { RESPONSE_BUDGET_BYTES },
  ] = await Promise.all([
    import("../schema/index.ts"),
    import("../schema/lib/rest.ts"),
    import("../server/rest/view.ts"),
    import("../schema/lib/response-cost.ts"),
    import("../server/graphql/limits.ts"),
    import("../schema/lib/limits.ts"),
  ]);
  const view = restView(schema);
  return {
    sdl: buildSchema(sdl),
    view,
    sessionOnly: sessionOnlyFields(schema),
    table: routeTable(view),
    sofa: createSofa({ basePath: "/v1", schema: view }),
    estimate: (on, operation) =>
      estimate(on, () => undefined, operation.selectionSet, on.getRootType(operation.operation)!),
    limits: {
      maxCost: GRAPHQL_LIMITS.maxCost,
      maxListNesting: GRAPHQL_LIMITS.maxListNesting,
      budgetBytes: RESPONSE_BUDGET_BYTES,
    },
  };
}

/** Whether the GraphQL cost rule lets an operation through (a page size in a variable counts as the maximum). */
function fits(ctx: Context, operation: OperationDefinitionNode): boolean {
  const { cost, bytes, lists } = ctx.estimate(ctx.sdl, operation);
  return lists <= ctx.limits.maxListNesting && bytes <= ctx.limits.budgetBytes && cost <= ctx.limits.maxCost;
}

/** The operation with `limit` fixed at `size` instead of a variable. */
function withPageSize(operation: OperationDefinitionNode, size: number): OperationDefinitionNode {
  const root = operation.selectionSet.selections[0] as FieldNode;
  const args = (root.arguments ?? []).map((arg) =>
    arg.name.value === "limit" ? { ...arg, value: { kind: Kind.INT, value: String(size) } as const } : arg,
  );
  return {
    ...operation,
    variableDefinitions: (operation.variableDefinitions ?? []).filter(
      (definition) => definition.variable.name.value !== "limit",
    ),
    selectionSet: { ...operation.selectionSet, selections: [{ ...root, arguments: args }] },
  };
}

/**
 * One operation per root field of the committed SDL, each within the server's GraphQL limits:
 * every field with its relations one level deep; where that could answer more than a response
 * may carry, the REST selection (no GraphQL-only relations); where even that is too much with a
 * page size in a variable (counted as the maximum), the largest fixed page size that fits.
 */
function graphqlOperations(ctx: Context): string {
  const operations = rootFields(ctx.sdl)
    .filter(({ field }) => !ctx.sessionOnly.has(field))
    .map(({ field, kind }) => {
      const name = pascal(field);
      let operation = named(
        buildOperationNodeForField({
          schema: ctx.sdl,
          kind,
          field,
          models: [],
          ignore: [],
          circularReferenceDepth: 1,
        }),
        name,
      );
      const notes: string[] = [];
      if (!fits(ctx, operation)) {
        operation = named(restSelection(ctx, kind, field), name);
        notes.push(
          `# ${field}: the REST selection (without GraphQL-only relations), as the full one could exceed the response budget.`,
        );
      }
      if (!fits(ctx, operation)) {
        let size = 100;
        while (size > 1 && !fits(ctx, withPageSize(operation, size))) size--;
        operation = withPageSize(operation, size);
        notes.push(
          `# ${field}: pages of ${size}, fixed (a page size in a variable counts as the maximum against the cost limit).`,
        );
      }
      if (!fits(ctx, operation))
        throw new Error(`No document for ${field} fits the server's GraphQL limits.`);
      return [...notes, print(operation)].join("\n");
    });
  return `# Generated by scripts/sdk-operations.ts from schema/schema.graphql: do not edit.\n\n${operations.join("\n\n")}\n`;
}

/** The selection Sofa runs for a root field (the REST view, Sofa's own settings). */
function restSelection(ctx: Context, kind: OperationTypeNode, field: string): OperationDefinitionNode {
  return buildOperationNodeForField({
    schema: ctx.view,
    kind,
    field,
    models: ctx.sofa.models,
    ignore: ctx.sofa.ignore,
    circularReferenceDepth: ctx.sofa.depthLimit,
  });
}

/** The selections Sofa runs for each `/v1` route, and the route table as types. */
function restOperations(ctx: Context): { rest: string; routes: string } {
  const operations: string[] = [];
  const routes: string[] = [];
  for (const entry of ctx.table) {
    const kind = entry.key.startsWith("Mutation.") ? OperationTypeNode.MUTATION : OperationTypeNode.QUERY;
    const field = entry.field.name;
    const name = `Rest${pascal(field)}`;
    operations.push(print(named(restSelection(ctx, kind, field), name)));
    const type = `${name}${kind === OperationTypeNode.QUERY ? "Query" : "Mutation"}`;
    const path = entry.route.path.replace(/:(\w+)/g, "{$1}");
    const pathParams =
      entry.pathParams.length > 0 ? entry.pathParams.map((p) => JSON.stringify(p)).join(" | ") : "never";
    routes.push(
      [
        `  /** ${entry.route.summary} (GraphQL \`${field}\`). */`,
        `  ${JSON.stringify(`${entry.route.method} ${path}`)}: {`,
        `    field: ${JSON.stringify(field)};`,
        `    status: ${entry.route.status};`,
        `    pathParams: ${pathParams};`,
        `    result: NonNullable<R.${type}[${JSON.stringify(field)}]>;`,
        `    variables: R.${type}Variables;`,
        `  };`,
      ].join("\n"),
    );
  }
  return {
    rest: `# Generated by scripts/sdk-operations.ts from the REST view of the schema: do not edit.\n\n${operations.join("\n\n")}\n`,
    routes: [
      "// Generated by scripts/sdk-operations.ts from the schema's REST routes: do not edit.",
      'import type * as R from "./rest.js";',
      "",
      "/** Every `/v1` route the schema publishes: the GraphQL field it runs, its result and its variables. */",
      "export interface RestRoutes {",
      routes.join("\n"),
      "}",
      "",
    ].join("\n"),
  };
}

/** Every file this script writes, relative to the repository root. */
export async function sdkOperationFiles(): Promise<Record<string, string>> {
  const ctx = await context(readFileSync(join(ROOT, "schema/schema.graphql"), "utf8"));
  const { rest, routes } = restOperations(ctx);
  return {
    "sdk/src/generated/operations.graphql": graphqlOperations(ctx),
    "sdk/src/generated/rest.graphql": rest,
    "sdk/src/generated/routes.ts": routes,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const outDir = process.argv[2] ?? ROOT;
  for (const [file, content] of Object.entries(await sdkOperationFiles())) {
    const target = join(outDir, file);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    console.log(`wrote ${file}`);
  }
}
