import type { Plugin } from "graphql-yoga";
import { stateOf } from "./request-state.ts";

/** `X-Request-Id` on every response, the same id as in error bodies and logs. */
export function useRequestId(): Plugin {
  return {
    onResponse({ response, serverContext }) {
      response.headers.set("X-Request-Id", stateOf(serverContext).id);
    },
  };
}
