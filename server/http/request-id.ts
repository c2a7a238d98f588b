import type { Plugin } from "graphql-yoga";
import { requestState } from "./request-state.ts";

/** `X-Request-Id` on every response, the same id as in error bodies and logs. */
export function useRequestId(): Plugin {
  return {
    onResponse({ response }) {
      const id = requestState()?.id;
      if (id) response.headers.set("X-Request-Id", id);
    },
  };
}
