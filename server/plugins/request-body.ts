import type { Plugin } from "graphql-yoga";
import { ApiError } from "../../schema/lib/errors.ts";
import { MAX_QUERY_STRING_BYTES } from "../../schema/lib/limits.ts";
import { errorResponse } from "../error-response.ts";
import { requestState } from "../request-state.ts";
import { bodyTextProblem, queryStringProblem } from "../utf8.ts";

export const MAX_BODY_BYTES = 25 * 1024 * 1024;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

const uriTooLong = () =>
  new ApiError(414, "invalid_request_error", "uri_too_long", `The query string exceeds ${MAX_QUERY_STRING_BYTES} bytes: send less, or use POST for GraphQL.`);

const tooLarge = () =>
  new ApiError(413, "invalid_request_error", "payload_too_large", `The request body exceeds ${MAX_BODY_BYTES} bytes (25 MiB).`);

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
async function readLimited(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array<ArrayBuffer> | null> {
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

/**
 * Refuses a query string over MAX_QUERY_STRING_BYTES (414), and buffers every request body up to 25 MiB (413 beyond it) so later layers can read it freely.
 * Bodies and query strings must be UTF-8 (server/utf8.ts): other bytes or another declared charset
 * are refused here, once for every surface, never decoded into U+FFFD.
 * Declared lengths over the limit are refused before a byte is read. Bodies `streamed` picks
 * (raw uploads) are left alone, for the route that streams them to their destination.
 */
export function useRequestBody(streamed: (request: Request, url: URL) => boolean = () => false): Plugin {
  return {
    async onRequest({ request, url, setRequest, endResponse, fetchAPI }) {
      if (Buffer.byteLength(url.search) > MAX_QUERY_STRING_BYTES + 1) return endResponse(errorResponse(uriTooLong(), url.pathname));
      const query = queryStringProblem(url.search);
      if (query) return endResponse(errorResponse(query, url.pathname));
      if (!METHODS_WITH_BODY.has(request.method) || !request.body) return;
      if (streamed(request, url)) {
        requestState()!.streamedBody = true;
        return;
      }
      const length = request.headers.get("content-length");
      const declared = Number(length ?? "0");
      if (declared > MAX_BODY_BYTES) return endResponse(errorResponse(tooLarge(), url.pathname));
      // With a declared length Node's parser delivers exactly that many bytes: read them at once.
      // A chunked body (no length) is counted as it arrives.
      const bytes =
        length !== null && Number.isSafeInteger(declared) && declared >= 0
          ? new Uint8Array(await request.arrayBuffer())
          : await readLimited(request.body, MAX_BODY_BYTES);
      if (bytes === null) return endResponse(errorResponse(tooLarge(), url.pathname));
      // Every body read here is text (raw uploads are streamed past): UTF-8, as sent, or refused.
      const unreadable = bodyTextProblem(request.headers.get("content-type"), bytes);
      if (unreadable) return endResponse(errorResponse(unreadable, url.pathname));
      // The signal goes along: it fires when the client goes away, which long answers listen for.
      // Yoga's own Request class (whatwg-node's), not Node's global one (undici's): undici's constructor,
      // its stream body and its signal wiring cost about 7 % of the CPU of a POST /graphql.
      setRequest(new fetchAPI.Request(request.url, { method: request.method, headers: request.headers, body: bytes, signal: request.signal }));
    },
  };
}
