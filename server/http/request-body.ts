import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { MAX_QUERY_STRING_BYTES } from "../../schema/lib/limits.ts";
import { BODY_LIMITS, bodyLimitOf, sizeLabel } from "../policies/body-limits.ts";
import { bodyTimedOutFor, requestTimedOut } from "../policies/early-limits.ts";
import { nodeRequest } from "./client-address.ts";
import { errorResponse } from "./error-response.ts";
import { stateOf } from "./request-state.ts";
import { bodyTextProblem, queryStringProblem } from "./utf8.ts";

/** The largest body of any route (docs/api/limits.md; most routes' own, see server/policies/body-limits.ts). */
export const MAX_BODY_BYTES = BODY_LIMITS.api;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

const uriTooLong = () =>
  new ApiError(
    414,
    "invalid_request_error",
    "uri_too_long",
    `The query string exceeds ${MAX_QUERY_STRING_BYTES} bytes: send less, or use POST for GraphQL.`,
  );

const tooLarge = (limit: number) =>
  new ApiError(
    413,
    "invalid_request_error",
    "payload_too_large",
    `The request body exceeds ${limit} bytes (${sizeLabel(limit)}), the most this route takes.`,
  );

/** What a body that went idle is answered (server/policies/early-limits.ts wrote the same to the client already). */
const idle = () => requestTimedOut("The request body sent nothing for too long: the connection is closed.");

/** What is still read (and dropped) of a refused body before the connection is cut. */
const DRAIN_BYTES = 4 * MAX_BODY_BYTES;

/**
 * Reads and drops the rest of a refused body, as servers do on a "lingering close": cancelling at
 * once resets the connection while the client is still sending, and the client then sees
 * ECONNRESET instead of the 413. Past DRAIN_BYTES the stream is cancelled after all.
 */
async function discard(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let dropped = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      dropped += value.byteLength;
      if (dropped > DRAIN_BYTES) return void (await reader.cancel());
    }
  } catch {
    // the client went away: nothing left to drain
  }
}

/** Reads at most `limit` bytes; null when the body is longer. */
async function readLimited(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array<ArrayBuffer> | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      void discard(reader);
      return null;
    }
    chunks.push(value);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

/** Picks the bodies streamed to their destination rather than buffered (raw uploads). */
export type Streamed = (request: Request, url: URL) => boolean;

/**
 * docs/api/limits.md: each route's body limit is known from its path (server/policies/body-limits.ts), so a
 * declared Content-Length over it is answered 413 at once, before a byte of the body is read,
 * before the credential is looked up. Registered right after the per-address limit. Bodies
 * `streamed` picks are their route's own business.
 *
 * Its response hook answers 408 for a request whose body went idle (server/policies/early-limits.ts has
 * cut it), whatever its route made of the cut body (a raw upload's `upload_incomplete`), so the
 * request log records what the client got.
 */
export function useBodyLimit(streamed: Streamed = () => false): Plugin {
  return {
    onRequest({ request, url, serverContext, endResponse }) {
      const declared = Number(request.headers.get("content-length") ?? "0");
      const limit = bodyLimitOf(url.pathname);
      if (declared > limit && !streamed(request, url))
        return endResponse(errorResponse(tooLarge(limit), url.pathname, stateOf(serverContext)));
    },
    onResponse({ request, serverContext, setResponse }) {
      if (!bodyTimedOutFor(nodeRequest(serverContext))) return;
      const state = stateOf(serverContext);
      const response = errorResponse(idle(), new URL(request.url).pathname, state);
      response.headers.set("X-Request-Id", state.id);
      setResponse(response);
    },
  };
}

/**
 * Refuses a query string over MAX_QUERY_STRING_BYTES (414), and buffers every request body up to
 * its route's limit (413 beyond it, as soon as a chunked body passes it) so later layers can read it
 * freely. Registered after authentication and the per-credential rate limit, so a refused caller's
 * body is never read.
 * Bodies and query strings must be UTF-8 (server/http/utf8.ts): other bytes or another declared charset
 * are refused here, once for every surface, never decoded into U+FFFD.
 * Bodies `streamed` picks (raw uploads) are left alone, for the route that streams them to their destination.
 */
export function useRequestBody(streamed: Streamed = () => false): Plugin {
  return {
    async onRequest({ request, url, serverContext, setRequest, endResponse, fetchAPI }) {
      const state = stateOf(serverContext);
      if (Buffer.byteLength(url.search) > MAX_QUERY_STRING_BYTES + 1)
        return endResponse(errorResponse(uriTooLong(), url.pathname, state));
      const query = queryStringProblem(url.search);
      if (query) return endResponse(errorResponse(query, url.pathname, state));
      if (!METHODS_WITH_BODY.has(request.method) || !request.body) return;
      if (streamed(request, url)) {
        state.streamedBody = true;
        return;
      }
      const limit = bodyLimitOf(url.pathname);
      const length = request.headers.get("content-length");
      const declared = Number(length ?? "0");
      if (declared > limit) return endResponse(errorResponse(tooLarge(limit), url.pathname, state));
      // With a declared length Node's parser delivers exactly that many bytes: read them at once.
      // A chunked body (no length) is counted as it arrives.
      let bytes: Uint8Array<ArrayBuffer> | null;
      try {
        bytes =
          length !== null && Number.isSafeInteger(declared) && declared >= 0
            ? new Uint8Array(await request.arrayBuffer())
            : await readLimited(request.body, limit);
      } catch (error) {
        if (bodyTimedOutFor(nodeRequest(serverContext)))
          return endResponse(errorResponse(idle(), url.pathname, state));
        throw error;
      }
      if (bytes === null) return endResponse(errorResponse(tooLarge(limit), url.pathname, state));
      // Every body read here is text (raw uploads are streamed past): UTF-8, as sent, or refused.
      const unreadable = bodyTextProblem(request.headers.get("content-type"), bytes);
      if (unreadable) return endResponse(errorResponse(unreadable, url.pathname, state));
      // The signal goes along: it fires when the client goes away, which long answers listen for.
      // Yoga's own Request class (whatwg-node's), not Node's global one (undici's): undici's constructor,
      // its stream body and its signal wiring cost about 7 % of the CPU of a POST /graphql.
      setRequest(
        new fetchAPI.Request(request.url, {
          method: request.method,
          headers: request.headers,
          body: bytes,
          signal: request.signal,
        }),
      );
    },
  };
}
