import type { Plugin } from "graphql-yoga";
import { stateOf } from "../http/request-state.ts";

/** Wakes the webhook worker after a request that wrote events: by then its transaction has committed. */
export function useWebhookWake(wake: () => void): Plugin {
  return {
    onResponse({ serverContext }) {
      if (stateOf(serverContext).wakeWebhooks) wake();
    },
  };
}
