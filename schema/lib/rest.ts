import { MapperKind, mapSchema } from "@graphql-tools/utils";
import type { GraphQLSchema } from "graphql";

export type RestMethod = "GET" | "POST" | "PATCH" | "DELETE";

export interface RestRoute {
  method: RestMethod;
  /** Relative to `/v1`; `:name` segments are filled from the field argument of that name. */
  path: string;
  status: number;
  summary: string;
}

/**
 * Publishes a Query or Mutation field as a `/v1` route, in the field's own resource file:
 * `extensions: rest("POST /leads", "Create a lead", 201)`. Fields without it stay GraphQL-only.
 */
export function rest(
  route: `${RestMethod} /${string}`,
  summary: string,
  status = 200,
  /** Error codes this route answers beyond those every route of its method may (the OpenAPI document lists them). */
  errors: string[] = [],
): { rest: RestRoute; errors?: string[] } {
  const [method, path] = route.split(" ") as [RestMethod, string];
  return { rest: { method, path, status, summary }, ...(errors.length > 0 && { errors }) };
}

export function restRouteOf(extensions: Record<string, unknown> | null | undefined): RestRoute | undefined {
  const route = extensions?.rest;
  return typeof route === "object" && route !== null ? (route as RestRoute) : undefined;
}

const views = new WeakMap<GraphQLSchema, GraphQLSchema>();

/**
 * The part of the schema the REST facade publishes: root fields that declare a route, and no
 * object field marked `rest: false` (nested GraphQL-only relations that would bloat flat bodies).
 * Resolvers are shared, so executing against this view or the full schema is the same.
 *
 * Made once per schema and shared: the REST layer, the route templates of the logs and metrics, the
 * events and the tools all read it, and each copy took 150–250 ms of a start.
 *
 * @example restView(schema).getQueryType()?.getFields().lead // published as GET /v1/leads/:id
 */
export function restView(schema: GraphQLSchema): GraphQLSchema {
  let view = views.get(schema);
  if (!view) {
    const roots = new Set([schema.getQueryType()?.name, schema.getMutationType()?.name]);
    view = mapSchema(schema, {
      [MapperKind.COMPOSITE_FIELD]: (field, _name, typeName) => {
        if (roots.has(typeName)) return restRouteOf(field.extensions) ? field : null;
        return field.extensions?.rest === false ? null : field;
      },
    });
    views.set(schema, view);
  }
  return view;
}
