import type { Hash } from "node:crypto";
import { Readable } from "node:stream";

/** Where object bytes live; the database holds only metadata and the key. */
export interface ByteStore {
  /** Streams `body` to `key`, hashing as bytes pass. On any failure nothing is left under `key`'s new bytes. */
  put(key: string, body: ByteSource, options: PutOptions): Promise<PutResult>;
  /** `range` is inclusive on both ends, like HTTP; an `end` past the last byte is clamped. */
  get(key: string, range?: ByteRange): Promise<GetResult>;
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string): Promise<void>;
  exists(key: string): Promise<boolean>;
  /** One page of keys starting with `prefix`, for a sweep of bytes no row references. */
  list(prefix: string, page?: ListPage): Promise<KeyPage>;
  /**
   * Removes what a put to `key` cut off by a crash left behind (the local disk's temporary files);
   * never the key's own bytes. S3 stores leave it to the bucket's lifecycle rule.
   */
  abandon?(key: string): Promise<void>;
}

export type ByteSource = Readable | AsyncIterable<Uint8Array | string>;

export interface PutOptions {
  maxBytes: number;
  contentType: string;
  signal?: AbortSignal;
}

export interface PutResult {
  size: number;
  sha256: string;
}

export interface ByteRange {
  start: number;
  end: number;
}

export interface GetResult {
  body: Readable;
  /** Bytes in `body`. */
  size: number;
  /** Bytes of the whole object, for Content-Range. */
  totalSize: number;
}

export interface ListPage {
  cursor?: string | null;
  limit?: number;
}

export interface KeyPage {
  keys: string[];
  /** Null on the last page. */
  cursor: string | null;
}

export class ByteStoreError extends Error {}

export class InvalidKeyError extends ByteStoreError {
  constructor(readonly key: string) {
    super(`invalid storage key: ${JSON.stringify(key.slice(0, 100))}`);
    this.name = "InvalidKeyError";
  }
}

export class KeyNotFoundError extends ByteStoreError {
  constructor(readonly key: string) {
    super(`no bytes stored under ${key}`);
    this.name = "KeyNotFoundError";
  }
}

export class TooLargeError extends ByteStoreError {
  constructor(readonly maxBytes: number) {
    super(`body exceeds ${maxBytes} bytes`);
    this.name = "TooLargeError";
  }
}

export class RangeNotSatisfiableError extends ByteStoreError {
  constructor(
    readonly range: ByteRange,
    readonly totalSize: number | null,
  ) {
    super(
      `range ${range.start}-${range.end} not satisfiable${totalSize === null ? "" : ` for ${totalSize} bytes`}`,
    );
    this.name = "RangeNotSatisfiableError";
  }
}

// Segments of [a-z0-9_-] joined by single slashes: no "..", no leading or trailing "/", no dots at all.
const KEY = /^[a-z0-9_-]+(?:\/[a-z0-9_-]+)*$/;
const MAX_KEY_LENGTH = 512;

export function assertKey(key: string): void {
  if (typeof key !== "string" || key.length > MAX_KEY_LENGTH || !KEY.test(key))
    throw new InvalidKeyError(String(key));
}

/** Prefixes may end in "/" (a folder) or be empty (everything). */
export function assertPrefix(prefix: string): void {
  if (prefix === "") return;
  assertKey(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix);
}

export function assertRange(range: ByteRange): void {
  const { start, end } = range;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeNotSatisfiableError(range, null);
  }
}

export function assertMaxBytes(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0)
    throw new RangeError(`maxBytes must be a non-negative integer`);
}

/**
 * Yields the source as Buffers, counting and hashing; throws as soon as more than maxBytes arrived.
 * Call it before any await: a Readable that errors while the store is still preparing (a client
 * hanging up during mkdir or CreateMultipartUpload) must not crash the process with an unhandled
 * 'error'; the error still surfaces from the iteration.
 */
export function metered(source: ByteSource, options: PutOptions, meter: Meter): AsyncGenerator<Buffer> {
  if (source instanceof Readable) source.on("error", () => {});
  return meterChunks(source, options, meter);
}

export interface Meter {
  size: number;
  hash: Hash;
}

async function* meterChunks(source: ByteSource, options: PutOptions, meter: Meter): AsyncGenerator<Buffer> {
  options.signal?.throwIfAborted();
  for await (const chunk of source as AsyncIterable<Uint8Array | string>) {
    options.signal?.throwIfAborted();
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk)
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    meter.size += bytes.length;
    if (meter.size > options.maxBytes) throw new TooLargeError(options.maxBytes);
    meter.hash.update(bytes);
    yield bytes;
  }
  options.signal?.throwIfAborted();
}
