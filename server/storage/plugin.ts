import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { Plugin } from "graphql-yoga";
import type { Context } from "../../schema/context.ts";
import { represent } from "../../schema/events.ts";
import {
  ApiError,
  internalError,
  isApiError,
  notFound,
  scopeRefused,
  validationFailed,
} from "../../schema/lib/errors.ts";
import { checkText } from "../../schema/lib/input-limits.ts";
import { ID_LENGTH } from "../../schema/lib/limits.ts";
import { fileName, mimeType } from "../../schema/lib/storage.ts";
import { beginUpload, commitUpload } from "../../schema/resources/file.ts";
import { maskError } from "../graphql/errors.ts";
import { errorResponse } from "../http/error-response.ts";
import { type RequestState, stateOf } from "../http/request-state.ts";
import { log } from "../observability/log.ts";
import { KeyNotFoundError } from "./byte-store.ts";
import { contentDisposition, noneMatch, parseRange, rangeStillValid } from "./content.ts";
import type { Storage } from "./services.ts";

const UPLOAD_PATH = /^\/v1\/buckets\/([^/]+)\/objects\/?$/;
const CONTENT_PATH = /^\/v1\/objects\/([^/]+)\/content\/?$/;
const UPLOAD_QUERY = new Set(["file_name", "content_type"]);

const mediaType = (header: string | null) => (header ?? "").split(";")[0]!.trim().toLowerCase();
const isJson = (type: string) => type === "application/json" || type.endsWith("+json");

/**
 * A raw upload: the body is the file's bytes, streamed to the store and never held whole. Any
 * Content-Type but JSON makes one (a JSON file goes as application/octet-stream with
 * `content_type=application/json` in the query string).
 */
export function isRawUpload(request: Request, url: URL): boolean {
  if (request.method !== "POST" || !UPLOAD_PATH.test(url.pathname)) return false;
  const type = mediaType(request.headers.get("content-type"));
  return type !== "" && !isJson(type);
}

/** The query string of a route served here: only `allowed` names, each at most once. */
function queryParams(url: URL, allowed: ReadonlySet<string>, hint: string): void {
  for (const name of new Set(url.searchParams.keys())) {
    if (!allowed.has(name)) throw validationFailed(name, `${name} is not a parameter of this route${hint}.`);
    if (url.searchParams.getAll(name).length > 1)
      throw validationFailed(name, `${name} was sent more than once.`);
  }
}

const uploadIncomplete = () =>
  new ApiError(
    400,
    "invalid_request_error",
    "upload_incomplete",
    "The connection closed before the whole body arrived: nothing was stored.",
  );

const rangeNotSatisfiable = (size: number) =>
  new ApiError(
    416,
    "invalid_request_error",
    "range_not_satisfiable",
    `The Range is outside the object's ${size} bytes.`,
    {
      headers: { "Content-Range": `bytes */${size}` },
    },
  );

/** Failures of the request body itself (the client went away), told apart from the store's. */
class SourceError extends Error {}

async function* body(request: Request): AsyncGenerator<Uint8Array> {
  if (!request.body) return;
  const reader = request.body.getReader();
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw new SourceError(String((error as Error)?.message ?? error));
      }
      if (chunk.done) return;
      yield chunk.value;
    }
  } finally {
    reader.releaseLock();
  }
}

function requireScope(ctx: Context, scope: string): void {
  if (!ctx.credential.scopes.has(scope)) throw scopeRefused(ctx.credential, scope);
}

async function upload(
  ctx: Context,
  storage: Storage,
  state: RequestState,
  request: Request,
  url: URL,
  bucketId: string,
): Promise<Response> {
  requireScope(ctx, "storage.write");
  // A raw upload runs no mutation, so the data quota's check (schema/plugins/data-quota.ts) is made here.
  await ctx.dataQuota.assertWritable(ctx.credential.workspaceId);
  checkText("bucket_id", bucketId, ID_LENGTH);
  queryParams(
    url,
    UPLOAD_QUERY,
    ": a raw upload takes file_name, and content_type to override the Content-Type header",
  );
  const name = url.searchParams.get("file_name");
  if (name === null)
    throw validationFailed(
      "file_name",
      "file_name is required in the query string when the body is the file itself.",
    );
  const file = fileName("file_name", name);
  const override = url.searchParams.get("content_type");
  const contentType =
    override !== null
      ? mimeType("content_type", override)
      : mimeType("Content-Type", request.headers.get("content-type") ?? "application/octet-stream");
  const declared = request.headers.get("content-length");
  const upload = await beginUpload(ctx, bucketId, declared === null ? null : Number(declared));
  try {
    let written;
    try {
      written = await storage.put(upload, body(request), { contentType, signal: request.signal });
    } catch (error) {
      if (error instanceof SourceError || request.signal.aborted) throw uploadIncomplete();
      throw error;
    }
    // A body that ended short of its Content-Length, or whose client is gone, is not a file.
    if ((declared !== null && written.size !== Number(declared)) || request.signal.aborted) {
      await storage.discard(upload.key);
      throw uploadIncomplete();
    }
    // The body's digest is known only now: an Idempotency-Key is claimed (or replayed) here.
    // The same bytes sent as another type are another request.
    const digest = createHash("sha256")
      .update(`${request.headers.get("content-type")}\n${written.sha256}`)
      .digest("hex");
    const answered = await state.claimIdempotency?.(digest);
    if (answered) {
      await storage.discard(upload.key);
      return answered;
    }
    const row = await commitUpload(ctx, upload, { bucketId, fileName: file, contentType, ...written });
    return Response.json(await represent(ctx.db, ctx, "File", row), { status: 201 });
  } finally {
    // After the bytes of a failed upload are gone: what is on disk never passes what is reserved.
    await upload.end();
  }
}

async function download(
  ctx: Context,
  storage: Storage,
  request: Request,
  url: URL,
  id: string,
): Promise<Response> {
  requireScope(ctx, "storage.read");
  checkText("id", id, ID_LENGTH);
  queryParams(url, new Set(), ", which takes none");
  const row = await ctx.db.storedObject.findFirst({ where: { id, workspaceId: ctx.credential.workspaceId } });
  if (!row) throw notFound("object", id);
  const size = Number(row.sizeBytes);
  const etag = `"${row.sha256}"`;
  const headers = new Headers({
    ETag: etag,
    "Last-Modified": row.createdAt.toUTCString(),
    "Cache-Control": "private, no-cache",
    "Accept-Ranges": "bytes",
    "X-Content-Type-Options": "nosniff",
    // Bytes from a caller are never a page of this origin, even when opened directly.
    "Content-Security-Policy": "sandbox; default-src 'none'",
  });
  if (noneMatch(request.headers.get("if-none-match"), etag))
    return new Response(null, { status: 304, headers });
  headers.set("Content-Type", row.contentType);
  headers.set("Content-Disposition", contentDisposition(row.fileName));
  const wanted = rangeStillValid(request.headers.get("if-range"), etag, row.createdAt)
    ? parseRange(request.headers.get("range"), size)
    : null;
  if (wanted === "unsatisfiable") throw rangeNotSatisfiable(size);
  if (request.method === "HEAD") {
    headers.set("Content-Length", String(wanted ? wanted.end - wanted.start + 1 : size));
    if (wanted) headers.set("Content-Range", `bytes ${wanted.start}-${wanted.end}/${size}`);
    return new Response(null, { status: wanted ? 206 : 200, headers });
  }
  let stored;
  try {
    stored = await storage.store.get(row.storeKey, wanted ?? undefined);
  } catch (error) {
    if (!(error instanceof KeyNotFoundError)) throw error;
    log("error", "an object's bytes are missing from the store", {
      request_id: ctx.requestId,
      object: row.id,
      key: row.storeKey,
    });
    throw internalError();
  }
  const expected = wanted ? wanted.end - wanted.start + 1 : size;
  if (stored.size !== expected) {
    stored.body.destroy();
    log("error", "the byte store answered another length than asked", {
      request_id: ctx.requestId,
      object: row.id,
      expected,
      got: stored.size,
    });
    throw internalError();
  }
  headers.set("Content-Length", String(stored.size));
  if (wanted) headers.set("Content-Range", `bytes ${wanted.start}-${wanted.end}/${size}`);
  return new Response(Readable.toWeb(stored.body) as ReadableStream, { status: wanted ? 206 : 200, headers });
}

function methodNotAllowed(method: string, path: string): ApiError {
  return new ApiError(
    405,
    "invalid_request_error",
    "method_not_allowed",
    `${method} is not allowed on ${path}.`,
    { headers: { Allow: "GET, HEAD" } },
  );
}

/**
 * The two storage routes that are not GraphQL fields, because their bodies are bytes: a raw
 * upload (POST /v1/buckets/{bucket_id}/objects with the file as the body) and a download
 * (GET /v1/objects/{id}/content). They run after authentication and the rate limit, as routes do.
 */
export function useStorage(storage: Storage, contextFor: (state: RequestState) => Context): Plugin {
  const answer = async (
    pathname: string,
    state: RequestState,
    run: () => Promise<Response>,
  ): Promise<Response> => {
    try {
      return await run();
    } catch (error) {
      // Anything else is logged and answered as internal_error, or 503 when the database timed out.
      return errorResponse(
        isApiError(error) ? error : (maskError(error, state.id) as ApiError),
        pathname,
        state,
      );
    }
  };
  return {
    async onRequest({ request, url, serverContext, endResponse }) {
      const state = stateOf(serverContext);
      if (!state.credential) return;
      const target = UPLOAD_PATH.exec(url.pathname);
      if (target && isRawUpload(request, url)) {
        state.route = "/v1/buckets/{bucket_id}/objects";
        const answered = await answer(url.pathname, state, () =>
          upload(contextFor(state), storage, state, request, url, target[1]!),
        );
        // A refused upload's body is not read any further (the rest could be gigabytes): its
        // connection cannot carry another request, and a client that pooled it would find it reset.
        if (!answered.ok) answered.headers.set("Connection", "close");
        return endResponse(answered);
      }
      const content = CONTENT_PATH.exec(url.pathname);
      if (!content) return;
      state.route = "/v1/objects/{id}/content";
      if (request.method !== "GET" && request.method !== "HEAD") {
        return endResponse(
          errorResponse(methodNotAllowed(request.method, url.pathname), url.pathname, state),
        );
      }
      return endResponse(
        await answer(url.pathname, state, () =>
          download(contextFor(state), storage, request, url, content[1]!),
        ),
      );
    },
  };
}
