import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse, GRAPHQL_PATH } from "../error-response.ts";

const notJson = () =>
  new ApiError(415, "invalid_request_error", "unsupported_media_type", "POST /graphql takes a JSON body: send 'Content-Type: application/json'.");

/**
 * `/graphql` takes JSON POSTs (and GET for queries) only. A form or a `text/plain` body is what a
 * cross-site page can send without a CORS preflight; refusing every other media type keeps such a
 * request from ever running an operation with the visitor's cookie.
 */
export function useGraphQLTransport(): Plugin {
  return {
    onRequest({ request, url, endResponse }) {
      if (url.pathname !== GRAPHQL_PATH || request.method !== "POST") return;
      const type = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      if (type !== "application/json") endResponse(errorResponse(notJson(), url.pathname));
    },
  };
}
