import type { Credential, RequestClient } from "../../schema/context.ts";
import { newId } from "../../schema/lib/ids.ts";

/** What one request carries through every layer: its id, its clock, and who is calling. */
export interface RequestState {
  id: string;
  startedAt: number;
  credential: Credential | undefined;
  /** Its client address and User-Agent, set first thing by server/http/request-client.ts (the audit log records them). */
  client?: RequestClient;
  /** For a `/v1` request: the validated arguments of the GraphQL field it runs. */
  restVariables?: Record<string, unknown>;
  /** The route template (`/v1/leads/{id}`, `/graphql`) once known: logs never hold raw ids. */
  route?: string;
  /** The `code` of the error the response carries, if any. */
  errorCode?: string;
  /**
   * Refused by the per-address limit before anything else (server/policies/rate-limit.ts): not
   * written to the request log, so a flood past the limit never reaches the database.
   */
  unlogged?: boolean;
  /** The request wrote events or made deliveries due: wake the webhook worker once it has ended. */
  wakeWebhooks?: boolean;
  /** The body is streamed to its destination, never buffered (a raw upload). */
  streamedBody?: boolean;
  /**
   * With an Idempotency-Key on a streamed body: claims the key once the digest of the body (and its type) is known.
   * Resolves to the response to send instead (a replay or a conflict), or undefined to go on.
   */
  claimIdempotency?: (bodyDigest: string) => Promise<Response | undefined>;
  /** An MCP tool call: the tool's name, for its request log row. */
  tool?: string;
  /** An AI request: its model and the tokens the provider reported, once its answer has ended. */
  aiUsage?: Promise<{ model: string; input_tokens: number; output_tokens: number } | null>;
}

/**
 * Yoga's server context: what server/runtime/server.ts hands the app with every request. Yoga gives
 * it to every plugin hook (`serverContext`) and copies it into the GraphQL context, so the state
 * travels with the request rather than through AsyncLocalStorage, whose hook on every promise of the
 * process cost Node 20 a quarter of a read's CPU (docs/performance.md).
 */
export interface ServerContext {
  state: RequestState;
}

/** A new request's state: its id and clock start now. */
export function newRequestState(): RequestState {
  return { id: newId("request"), startedAt: performance.now(), credential: undefined };
}

/**
 * The state of the request a hook serves, read from Yoga's server context (or a GraphQL context,
 * which holds it too). A request that came in without one (a Yoga instance of a test) gets one here.
 *
 * @example onResponse({ serverContext }) { const state = stateOf(serverContext); … }
 */
export function stateOf(context: object): RequestState {
  const holder = context as Partial<ServerContext>;
  holder.state ??= newRequestState();
  return holder.state;
}
