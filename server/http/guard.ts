import type { Plugin } from "graphql-yoga";
import { internalError } from "../../schema/lib/errors.ts";
import { describeError, log } from "../observability/log.ts";
import { errorResponse } from "./error-response.ts";
import { stateOf } from "./request-state.ts";

type OnRequest = NonNullable<Plugin["onRequest"]>;
type OnResponse = NonNullable<Plugin["onResponse"]>;

/** Calls `hook`, sending what it throws (now or later) to `fail`, without making a sync hook async. */
function guard<P>(hook: (payload: P) => unknown, fail: (payload: P, error: unknown) => void) {
  return (payload: P) => {
    try {
      const result = hook(payload);
      return result instanceof Promise ? result.catch((error: unknown) => fail(payload, error)) : result;
    } catch (error) {
      return fail(payload, error);
    }
  };
}

/** The request's path, "/" when its URL is what failed: the 500 must not throw in turn (whatwg-node would answer its stack). */
function pathnameOf(payload: Parameters<OnRequest>[0]): string {
  try {
    return payload.url.pathname;
  } catch {
    return "/";
  }
}

/**
 * The HTTP layer under Yoga answers an exception thrown by a plugin hook with a 500 whose body is
 * the stack trace, as text/plain. Every hook is wrapped instead: a request hook that throws ends the
 * request with the API's 500 (`internal_error`, request id, logged); a response hook that throws is
 * logged and the response it was given goes out.
 */
export function guarded(plugins: Plugin[]): Plugin[] {
  return plugins.map((plugin) => ({
    ...plugin,
    ...(plugin.onRequest && {
      onRequest: guard(plugin.onRequest, (payload: Parameters<OnRequest>[0], error) => {
        const state = stateOf(payload.serverContext);
        log("error", "unhandled error", { request_id: state.id, ...describeError(error) });
        payload.endResponse(errorResponse(internalError(), pathnameOf(payload), state));
      }) as OnRequest,
    }),
    ...(plugin.onResponse && {
      onResponse: guard(plugin.onResponse, (payload: Parameters<OnResponse>[0], error) => {
        log("error", "unhandled error after the response was made", {
          request_id: stateOf(payload.serverContext).id,
          ...describeError(error),
        });
      }) as OnResponse,
    }),
  }));
}
