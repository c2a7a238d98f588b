import type { GraphQLField, GraphQLSchema } from "graphql";
import { validationFailed } from "../../schema/lib/errors.ts";
import { type RestRoute, restRouteOf } from "../../schema/lib/rest.ts";

export interface RouteEntry {
  /** `Query.lead`, the key of Sofa's `routes` option. */
  key: string;
  field: GraphQLField<unknown, unknown>;
  route: RestRoute;
  pattern: RegExp;
  pathParams: string[];
}

export function routeTable(schema: GraphQLSchema): RouteEntry[] {
  const entries: RouteEntry[] = [];
  for (const type of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(type?.getFields() ?? {})) {
      const route = restRouteOf(field.extensions);
      if (!route || !type) continue;
      const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
      const pattern = new RegExp(`^/v1${route.path.replace(/:(\w+)/g, "(?<$1>[^/]+)")}/?$`);
      entries.push({ key: `${type.name}.${field.name}`, field, route, pattern, pathParams });
    }
  }
  return entries;
}

/** A path segment as text; a malformed percent-encoding (`%FF`, an encoded surrogate) is bad input. */
function decodeSegment(name: string, segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw validationFailed(name, `${name} is not valid: the path holds a malformed percent-encoding.`);
  }
}

export function matchRoute(table: RouteEntry[], method: string, pathname: string) {
  for (const entry of table) {
    const match = entry.pattern.exec(pathname);
    if (match && entry.route.method === method) {
      return {
        entry,
        params: Object.fromEntries(
          Object.entries(match.groups ?? {}).map(([k, v]) => [k, decodeSegment(k, v)]),
        ),
      };
    }
  }
  return undefined;
}

/** Whether any route owns this path under another method (405 rather than 404). */
export function pathExists(table: RouteEntry[], pathname: string): string[] {
  return table.filter((entry) => entry.pattern.test(pathname)).map((entry) => entry.route.method);
}
