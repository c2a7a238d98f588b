import type { Plugin } from "graphql-yoga";
import type { RequestClient } from "../../schema/context.ts";
import type { Config } from "../runtime/config.ts";
import { clientAddress } from "./client-address.ts";
import { stateOf } from "./request-state.ts";

/** The longest User-Agent kept (request logs and the audit log keep the same prefix). */
export const MAX_USER_AGENT = 512;

/**
 * The client of a request: its address as server/http/client-address.ts decides it, and its User-Agent
 * cut to MAX_USER_AGENT characters; null where unknown.
 *
 * @example requestClient(request, serverContext, config) // { ip: "203.0.113.7", userAgent: "curl/8.5.0" }
 */
export function requestClient(
  request: Request,
  serverContext: unknown,
  config: Pick<Config, "trustProxy">,
): RequestClient {
  const agent = request.headers.get("user-agent");
  return {
    ip: clientAddress(serverContext, config) ?? null,
    userAgent: agent ? agent.slice(0, MAX_USER_AGENT) : null,
  };
}

/**
 * Notes every request's client in its RequestState before anything else runs, so whatever records
 * who did what (the audit log: GraphQL and REST resolvers through Context.client, the account API
 * and the agent endpoints through the request state) reads the same address and User-Agent.
 *
 * @example plugins: [useRequestId(), useRequestClient(config), …]
 */
export function useRequestClient(config: Pick<Config, "trustProxy">): Plugin {
  return {
    onRequest({ request, serverContext }) {
      stateOf(serverContext).client = requestClient(request, serverContext, config);
    },
  };
}
