import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { errorResponse, GRAPHQL_PATH } from "../http/error-response.ts";
import { stateOf } from "../http/request-state.ts";

/** The 415 of a `/graphql` POST whose body is not declared JSON. */
export const notJson = () =>
  new ApiError(
    415,
    "invalid_request_error",
    "unsupported_media_type",
    "POST /graphql takes a JSON body: send 'Content-Type: application/json'.",
  );

const notAcceptable = () =>
  new ApiError(
    406,
    "invalid_request_error",
    "not_acceptable",
    "GraphQL answers in application/graphql-response+json or application/json: accept one of them.",
  );

/** Whether a request's body is declared JSON: media types are case-insensitive (RFC 9110 §8.3.1), their parameters aside. */
export const isJsonBody = (request: Request) =>
  (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase() === "application/json";

/**
 * `/graphql` takes JSON POSTs (and GET for queries) only. A form or a `text/plain` body is what a
 * cross-site page can send without a CORS preflight; refusing every other media type keeps such a
 * request from ever running an operation with the visitor's cookie. An `Accept` that allows none of
 * the response types is a 406 in the API's shape, where Yoga's has no body.
 */
export function useGraphQLTransport(): Plugin {
  return {
    onRequest({ request, url, serverContext, endResponse }) {
      if (url.pathname !== GRAPHQL_PATH || request.method !== "POST") return;
      if (!isJsonBody(request)) endResponse(errorResponse(notJson(), url.pathname, stateOf(serverContext)));
    },
    onResultProcess({ resultProcessor, setResultProcessor, serverContext }) {
      if (!resultProcessor)
        setResultProcessor(
          () => errorResponse(notAcceptable(), GRAPHQL_PATH, stateOf(serverContext)),
          "application/json",
        );
    },
  };
}
