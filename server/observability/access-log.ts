import type { Plugin } from "graphql-yoga";
import { stateOf } from "../http/request-state.ts";
import { RouteTemplates } from "../rest/route-template.ts";
import { log, willLog } from "./log.ts";

/**
 * One info line per request on stderr. Register it last, so it sees the response every other
 * plugin settled on. Only the route template and the credential id: never the raw path (ids,
 * query string), headers or key material.
 */
export function useAccessLog(enabled: boolean): Plugin {
  if (!enabled) return {};
  const routes = new RouteTemplates();
  return {
    onSchemaChange({ schema }) {
      routes.setSchema(schema);
    },
    onResponse({ request, response, serverContext }) {
      if (!willLog("info")) return;
      const state = stateOf(serverContext);
      log("info", "request", {
        request_id: state.id,
        method: request.method.slice(0, 16),
        route: routes.of(request, state),
        status: response.status,
        duration_ms: Math.round((performance.now() - state.startedAt) * 10) / 10,
        credential_id: state.credential?.id ?? null,
      });
    },
  };
}
