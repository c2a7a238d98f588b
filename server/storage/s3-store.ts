import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import type { S3Settings } from "../runtime/config.ts";
import {
  assertKey,
  assertMaxBytes,
  assertPrefix,
  assertRange,
  type ByteRange,
  type ByteSource,
  type ByteStore,
  type GetResult,
  KeyNotFoundError,
  type KeyPage,
  type ListPage,
  metered,
  type PutOptions,
  type PutResult,
  RangeNotSatisfiableError,
} from "./byte-store.ts";

const MIN_PART = 5 * 1024 * 1024; // S3's floor for every part but the last
const DEFAULT_PART = 8 * 1024 * 1024;
const MAX_PARTS = 10_000;
const MIB = 1024 * 1024;
const DEFAULT_PAGE = 1000;

export interface S3StoreOptions {
  client: S3Client;
  bucket: string;
  /** Bytes buffered per multipart part; at most two parts are in memory at once. */
  partSize?: number;
}

/**
 * Bytes in an S3-compatible bucket. A body that fits in one part goes up with a single PutObject;
 * a bigger one as a multipart upload, one part in flight while the next fills, aborted on any failure.
 * Crashed processes can still leave incomplete uploads: give the bucket an
 * AbortIncompleteMultipartUpload lifecycle rule.
 */
export class S3ByteStore implements ByteStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly partSize: number;

  constructor(options: S3StoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.partSize = options.partSize ?? DEFAULT_PART;
    if (!Number.isSafeInteger(this.partSize) || this.partSize < MIN_PART)
      throw new RangeError(`partSize must be at least ${MIN_PART}`);
  }

  async put(key: string, body: ByteSource, options: PutOptions): Promise<PutResult> {
    assertKey(key);
    assertMaxBytes(options.maxBytes);
    const meter = { size: 0, hash: createHash("sha256") };
    const chunks = metered(body, options, meter);
    const { signal } = options;
    // S3 takes at most 10 000 parts: an object that may grow past 10 000 parts of the default size gets bigger parts.
    const partSize = Math.max(this.partSize, Math.ceil(options.maxBytes / MAX_PARTS / MIB) * MIB);
    let part = Buffer.allocUnsafe(partSize);
    let filled = 0;
    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    let inFlight: Promise<void> | null = null;

    const send = (bytes: Buffer) => {
      const PartNumber = parts.length + 1;
      const entry: CompletedPart = { PartNumber };
      parts.push(entry);
      const request = this.client
        .send(
          new UploadPartCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber,
            Body: bytes,
            ContentLength: bytes.length,
          }),
          { abortSignal: signal },
        )
        .then((out) => {
          entry.ETag = out.ETag;
        });
      request.catch(() => {}); // awaited below; this only keeps a failure from counting as unhandled meanwhile
      return request;
    };

    try {
      for await (const chunk of chunks) {
        let offset = 0;
        while (offset < chunk.length) {
          const n = chunk.copy(part, filled, offset);
          filled += n;
          offset += n;
          if (filled < partSize) continue;
          if (uploadId === undefined) {
            const created = await this.client.send(
              new CreateMultipartUploadCommand({
                Bucket: this.bucket,
                Key: key,
                ContentType: options.contentType,
              }),
              { abortSignal: signal },
            );
            uploadId = created.UploadId;
            if (!uploadId) throw new Error("S3 CreateMultipartUpload returned no UploadId");
          }
          await inFlight;
          inFlight = send(part);
          part = Buffer.allocUnsafe(partSize);
          filled = 0;
        }
      }
      if (uploadId === undefined) {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: key,
            Body: part.subarray(0, filled),
            ContentLength: filled,
            ContentType: options.contentType,
          }),
          { abortSignal: signal },
        );
      } else {
        await inFlight;
        if (filled > 0) await send(part.subarray(0, filled));
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
          { abortSignal: signal },
        );
      }
    } catch (error) {
      if (uploadId !== undefined) {
        await inFlight?.catch(() => {});
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
          .catch(() => {});
      }
      throw error;
    }
    return { size: meter.size, sha256: meter.hash.digest("hex") };
  }

  async get(key: string, range?: ByteRange): Promise<GetResult> {
    assertKey(key);
    if (range) assertRange(range);
    try {
      const out = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
      const size = out.ContentLength ?? 0;
      const total = out.ContentRange ? Number(/\/(\d+)$/.exec(out.ContentRange)?.[1]) : size;
      return { body: out.Body as Readable, size, totalSize: Number.isFinite(total) ? total : size };
    } catch (error) {
      if (isStatus(error, 404)) throw new KeyNotFoundError(key);
      if (isStatus(error, 416) && range) throw new RangeNotSatisfiableError(range, null);
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    assertKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  async exists(key: string): Promise<boolean> {
    assertKey(key);
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isStatus(error, 404)) return false;
      throw error;
    }
  }

  /**
   * The cursor is the last key returned. ListObjects (v1) with Marker rather than v2: v2's continuation
   * tokens are opaque per server, and s3rver's need a cipher OpenSSL 3 no longer has.
   */
  async list(prefix: string, page: ListPage = {}): Promise<KeyPage> {
    assertPrefix(prefix);
    if (page.cursor != null) assertKey(page.cursor);
    const out = await this.client.send(
      new ListObjectsCommand({
        Bucket: this.bucket,
        Prefix: prefix || undefined,
        MaxKeys: page.limit ?? DEFAULT_PAGE,
        Marker: page.cursor ?? undefined,
      }),
    );
    const keys = (out.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
    const last = keys.at(-1);
    return { keys, cursor: out.IsTruncated && last ? last : null };
  }
}

function isStatus(error: unknown, status: number): boolean {
  return error instanceof S3ServiceException && error.$metadata.httpStatusCode === status;
}

/** The S3 store of STORAGE_S3_BUCKET and friends (server/storage/open-store.ts loads this module only then). */
export function openS3ByteStore(s3: S3Settings): S3ByteStore {
  const client = new S3Client({
    endpoint: s3.endpoint,
    forcePathStyle: s3.forcePathStyle,
    ...(s3.region && { region: s3.region }),
    ...(s3.credentials && { credentials: s3.credentials }),
  });
  return new S3ByteStore({ client, bucket: s3.bucket });
}
