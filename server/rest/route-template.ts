import type { GraphQLSchema } from "graphql";
import { restView } from "../../schema/lib/rest.ts";
import { GRAPHQL_PATH } from "../http/error-response.ts";
import type { RequestState } from "../http/request-state.ts";
import { matchRoute, type RouteEntry, routeTable } from "./view.ts";

/** Fixed paths (GraphiQL's page ends before authentication names /graphql): their path is their route. */
const FIXED_PATHS = new Set([
  GRAPHQL_PATH,
  "/v1/openapi.json",
  "/v1/.well-known/oauth-protected-resource",
  "/.well-known/oauth-protected-resource/v1",
  "/health",
  "/v1/models",
  "/v1/chat/completions",
  "/v1/responses",
]);

/** Routes served outside Sofa (bytes, OpenAI's shapes), for requests that end before their plugin names them. */
const PLUGIN_ROUTES: [RegExp, string][] = [
  [/^\/v1\/models\/[^/]+\/?$/, "/v1/models/{model}"],
  [/^\/v1\/objects\/[^/]+\/content\/?$/, "/v1/objects/{id}/content"],
];

/**
 * The route template a finished request is logged under (`/v1/leads/{id}`), never the raw path:
 * logs hold no ids. Feed it the schema from a plugin's onSchemaChange.
 */
export class RouteTemplates {
  private table: RouteEntry[] = [];

  setSchema(schema: GraphQLSchema): void {
    this.table = routeTable(restView(schema));
  }

  /** The template a layer recorded, or, for a request that ended before the REST layer named it (a 401 on /v1/leads/…), the matching one. */
  of(request: Request, state: RequestState): string | null {
    const named = state.route;
    if (named) return named;
    try {
      const { pathname } = new URL(request.url);
      if (FIXED_PATHS.has(pathname.replace(/(.)\/$/, "$1"))) return pathname.replace(/(.)\/$/, "$1");
      const plugin = PLUGIN_ROUTES.find(([pattern]) => pattern.test(pathname));
      if (plugin) return plugin[1];
      const matched = pathname.startsWith("/v1/")
        ? matchRoute(this.table, request.method, pathname)
        : undefined;
      // Anything else unmatched is logged as null.
      return matched ? `/v1${matched.entry.route.path.replace(/:(\w+)/g, "{$1}")}` : null;
    } catch {
      // A malformed escape in the path: no template.
      return null;
    }
  }
}
