import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse, GRAPHQL_PATH } from "./error-response.ts";
import { stateOf } from "./request-state.ts";

/** Whatever no other layer claimed is a 404 in the API's error shape. Register it last. */
export function useNotFound(): Plugin {
  return {
    onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname === GRAPHQL_PATH) return;
      const error = new ApiError(
        404,
        "invalid_request_error",
        "not_found",
        `No route ${request.method} ${url.pathname}.`,
      );
      endResponse(errorResponse(error, url.pathname, stateOf(serverContext)));
    },
  };
}
