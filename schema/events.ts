import { buildOperationNodeForField } from "@graphql-tools/utils";
import {
  type DocumentNode,
  execute,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLOutputType,
  GraphQLSchema,
  Kind,
  OperationTypeNode,
} from "graphql";
import type { Context } from "./context.ts";
import type { Prisma } from "./generated/prisma/client.ts";
import type { EventType } from "./lib/event-types.ts";
import { newId } from "./lib/ids.ts";
import { restView } from "./lib/rest.ts";
import { SCOPES } from "./lib/scopes.ts";

export {
  ALL_EVENTS,
  EVENT_RETENTION_DAYS,
  EVENT_TYPES,
  type EventType,
  TEST_EVENT_TYPE,
} from "./lib/event-types.ts";

export type Tx = Prisma.TransactionClient;

interface Representation {
  schema: GraphQLSchema;
  document: DocumentNode;
}

let view: GraphQLSchema | undefined;
const representations = new Map<string, Representation>();

/** Called once the schema is built: events represent resources through its REST view. */
export function configureEvents(schema: GraphQLSchema): void {
  view = restView(schema);
  representations.clear();
}

/**
 * A query over one object of `typeName` that selects exactly what a REST response selects
 * (Sofa builds its operations with the same function and the same rules).
 */
function representation(typeName: string): Representation {
  const cached = representations.get(typeName);
  if (cached) return cached;
  const type = view?.getType(typeName);
  if (!(type instanceof GraphQLObjectType)) throw new Error(`No REST type ${typeName} to represent.`);
  const query = new GraphQLObjectType({
    name: "Representation",
    fields: {
      object: {
        type: new GraphQLNonNull(type) as GraphQLOutputType,
        resolve: (root: { object: unknown }) => root.object,
      },
    },
  });
  const schema = new GraphQLSchema({ query });
  const operation = buildOperationNodeForField({
    schema,
    kind: OperationTypeNode.QUERY,
    field: "object",
    models: [],
    ignore: [],
    circularReferenceDepth: 1,
  });
  const built = { schema, document: { kind: Kind.DOCUMENT, definitions: [operation] } as DocumentNode };
  representations.set(typeName, built);
  return built;
}

/** The resource as the API returns it, read inside the transaction that changed it. */
export async function represent(
  tx: Tx,
  ctx: Context,
  typeName: string,
  row: object,
): Promise<Record<string, unknown>> {
  const { schema, document } = representation(typeName);
  // The event shows the whole resource, whatever the scopes of the caller that caused it.
  const system: Context = {
    ...ctx,
    db: tx as Context["db"],
    credential: { ...ctx.credential, scopes: new Set(SCOPES) },
  };
  const result = await execute({ schema, document, rootValue: { object: row }, contextValue: system });
  if (result.errors?.length) throw result.errors[0];
  return (result.data as { object: Record<string, unknown> }).object;
}

/** Writes an event to the outbox in the caller's transaction: it commits or rolls back with the change. */
export async function emit(
  tx: Tx,
  ctx: Context,
  type: EventType,
  typeName: string,
  row: object,
): Promise<void> {
  const data = await represent(tx, ctx, typeName, row);
  await tx.event.create({
    data: {
      id: newId("event"),
      workspaceId: ctx.credential.workspaceId,
      type,
      data: data as Prisma.InputJsonObject,
    },
  });
  ctx.webhooks.wake("events");
}
