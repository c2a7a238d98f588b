import { APIPromise, type BodyValue, type RequestOptions } from "../lib/core.js";
import type { PagePromise } from "../lib/pagination.js";
import type {
  Bucket,
  BucketCreateParams,
  BucketListParams,
  Deleted,
  FileObject,
  ObjectListParams,
  ObjectUploadBase64Params,
  StorageUsage,
} from "../types.js";
import { APIResource } from "./resource.js";

/** An upload of the raw bytes, streamed to the store: any size up to the workspace's quota. */
export interface ObjectUploadRawParams {
  /** 1–255 characters, no `/` or `\`. */
  file_name: string;
  /** A MIME type (default: the Blob's own type, `text/plain; charset=utf-8` for a string, else `application/octet-stream`). */
  content_type?: string;
  /**
   * The bytes. A `ReadableStream` is sent as it is read, and so cannot be retried; a Blob, an
   * ArrayBuffer, a typed array or a string (UTF-8) can.
   */
  file: BodyValue;
}

export type ObjectUploadParams = ObjectUploadBase64Params | ObjectUploadRawParams;

/** Conditional and partial downloads. */
export interface ObjectContentParams {
  /** One range, `bytes=0-99`, `bytes=100-` or `bytes=-100`: the answer is 206 with `Content-Range`. */
  range?: string;
  /** The ETag (`"<sha256>"`) you hold: an unchanged object answers 304 with no body. */
  ifNoneMatch?: string;
  /** With `range`: only when the object still has this ETag (else the whole object). */
  ifRange?: string;
}

/**
 * Standard padded base64 of some bytes (for `upload` as JSON), in Node and in browsers.
 *
 * @example
 * ```ts
 * await kontor.buckets.objects.upload("bkt_…", { file_name: "hello.txt", content_base64: toBase64("Hello") });
 * ```
 */
export function toBase64(bytes: Uint8Array | ArrayBuffer | string): string {
  const data =
    typeof bytes === "string"
      ? new TextEncoder().encode(bytes)
      : bytes instanceof Uint8Array
        ? bytes
        : new Uint8Array(bytes);
  let binary = "";
  for (let i = 0; i < data.length; i += 0x8000)
    binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The objects of one bucket: `/v1/buckets/{bucket_id}/objects`. */
export class BucketObjects extends APIResource {
  /**
   * Newest first; `search` matches file names, `content_type` a MIME type or `type/*`. Needs `storage.read`.
   *
   * @example
   * ```ts
   * for await (const object of kontor.buckets.objects.list("bkt_…", { content_type: "image/*" })) console.log(object.file_name);
   * ```
   */
  list(bucketId: string, params?: ObjectListParams, options?: RequestOptions): PagePromise<FileObject> {
    return this._client._list("GET /buckets/{bucket_id}/objects", [bucketId], params, options);
  }

  /**
   * Uploads an object, either as JSON (`content_base64`: small files, the body within 25 MiB) or
   * as raw bytes (`file`: streamed, any size up to the quota). Past the quota: `PermissionError`
   * `storage_quota_exceeded`. Needs `storage.write`.
   *
   * @example
   * ```ts
   * // Raw bytes, streamed (a Blob, a typed array, a string or a ReadableStream):
   * const object = await kontor.buckets.objects.upload("bkt_…", { file_name: "report.pdf", file: await readFile("report.pdf") });
   * ```
   */
  upload(bucketId: string, params: ObjectUploadParams, options?: RequestOptions): APIPromise<FileObject> {
    if (!("file" in params))
      return this._client._route("POST /buckets/{bucket_id}/objects", [bucketId], params, options);
    const file = params.file;
    const blobType =
      typeof Blob !== "undefined" && file instanceof Blob && file.type
        ? file.type
        : typeof file === "string"
          ? "text/plain; charset=utf-8"
          : undefined;
    return this._client.request<FileObject>({
      method: "POST",
      path: `/buckets/${encodeURIComponent(bucketId)}/objects`,
      query: { file_name: params.file_name, content_type: params.content_type ?? blobType },
      rawBody: file,
      contentType: "application/octet-stream",
      options,
    });
  }
}

export class Buckets extends APIResource {
  readonly objects: BucketObjects = new BucketObjects(this._client);

  /**
   * The buckets of the workspace. Needs `storage.read`.
   *
   * @example
   * ```ts
   * for await (const bucket of kontor.buckets.list()) console.log(bucket.name);
   * ```
   */
  list(params?: BucketListParams, options?: RequestOptions): PagePromise<Bucket> {
    return this._client._list("GET /buckets", [], params, options);
  }

  /**
   * `name`: 3–63 of `a-z`, `0-9`, `-`, unique in the workspace (`ConflictError` `bucket_name_taken`).
   *
   * @example
   * ```ts
   * const bucket = await kontor.buckets.create({ name: "invoices-2026" });
   * ```
   */
  create(params: BucketCreateParams, options?: RequestOptions): APIPromise<Bucket> {
    return this._client._route("POST /buckets", [], params, options);
  }

  /**
   * One bucket by id. Needs `storage.read`.
   *
   * @example
   * ```ts
   * const bucket = await kontor.buckets.retrieve("bkt_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<Bucket> {
    return this._client._route("GET /buckets/{id}", [id], undefined, options);
  }

  /**
   * Only an empty bucket (else `ValidationError` `invalid_state`).
   *
   * @example
   * ```ts
   * await kontor.buckets.del("bkt_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /buckets/{id}", [id], undefined, options);
  }
}

/** Stored objects by id: `/v1/objects/{id}`. */
export class Objects extends APIResource {
  /**
   * The object's metadata (`file_name`, `content_type`, `size_bytes`, `sha256`, …).
   *
   * @example
   * ```ts
   * const { file_name, size_bytes } = await kontor.objects.retrieve("obj_…");
   * ```
   */
  retrieve(id: string, options?: RequestOptions): APIPromise<FileObject> {
    return this._client._route("GET /objects/{id}", [id], undefined, options);
  }

  /**
   * Deletes the object and frees its bytes of the quota.
   *
   * @example
   * ```ts
   * await kontor.objects.del("obj_…");
   * ```
   */
  del(id: string, options?: RequestOptions): APIPromise<Deleted> {
    return this._client._route("DELETE /objects/{id}", [id], undefined, options);
  }

  /**
   * The object's bytes as a `Response` whose body is not read yet (stream it, or call
   * `arrayBuffer()`): status 200, 206 for a `range`, or 304 for a matching `ifNoneMatch`.
   * Headers: `Content-Type`, `Content-Length`, `ETag`, `Content-Disposition`, `Content-Range`.
   *
   * @example
   * ```ts
   * const response = await kontor.objects.content("obj_…", { range: "bytes=0-99" });
   * console.log(response.status, response.headers.get("content-range")); // 206
   * ```
   */
  content(id: string, params: ObjectContentParams = {}, options?: RequestOptions): APIPromise<Response> {
    const headers: Record<string, string | undefined> = {
      range: params.range,
      "if-none-match": params.ifNoneMatch,
      "if-range": params.ifRange,
      ...options?.headers,
    };
    return this._client.request<Response>({
      method: "GET",
      path: `/objects/${encodeURIComponent(id)}/content`,
      parseAs: "response",
      okStatuses: [304],
      options: { ...options, headers },
    });
  }

  /**
   * The whole object's bytes.
   *
   * @example
   * ```ts
   * const bytes = await kontor.objects.download("obj_…");
   * ```
   */
  download(id: string, options?: RequestOptions): APIPromise<Uint8Array> {
    const result = this.content(id, {}, options)
      .withResponse()
      .then(async (answer) => ({ ...answer, data: new Uint8Array(await answer.response.arrayBuffer()) }));
    return new APIPromise(result);
  }
}

/** `/v1/storage`: the workspace's usage against its plan's quota. */
export class Storage extends APIResource {
  /**
   * The workspace's storage usage against its plan's quota. Needs `storage.read`.
   *
   * @example
   * ```ts
   * const usage = await kontor.storage.retrieve();
   * ```
   */
  retrieve(options?: RequestOptions): APIPromise<StorageUsage> {
    return this._client._route("GET /storage", [], undefined, options);
  }
}
