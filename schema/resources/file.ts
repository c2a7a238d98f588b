import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { emit, type Tx } from "../events.ts";
import type { StoredObject } from "../generated/prisma/client.ts";
import { searchWhere } from "../lib/cursor.ts";
import { notFound, validationFailed } from "../lib/errors.ts";
import { listPage } from "../lib/list-page.ts";
import { lockRow } from "../lib/locks.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import {
  bytesLabel,
  fileName,
  mimeType,
  normalMimeType,
  quotaExceeded,
  strictBase64,
  type UploadTicket,
} from "../lib/storage.ts";
import { Bucket } from "./bucket.ts";
import { Deleted, listType, objectKind, PlanEnum, pageArgs } from "./shared.ts";

export const File = builder.prismaObject("StoredObject", {
  name: "File",
  description:
    "A stored object: its metadata (the bytes are at GET /v1/objects/{id}/content). Uploads emit file.uploaded, deletes file.deleted. " +
    "Visible with storage.read or storage.write.",
  authScopes: { readable: "storage" },
  fields: (t) => ({
    object: objectKind(t, "file"),
    id: t.exposeID("id", { description: "`obj_…`." }),
    bucket_id: t.exposeString("bucketId", { description: "The bucket holding it (`bkt_…`)." }),
    file_name: t.exposeString("fileName", {
      description: "The name it was uploaded with; downloads offer it in Content-Disposition.",
    }),
    content_type: t.exposeString("contentType", {
      description:
        "Its MIME type as uploaded (type and subtype in lower case); downloads carry it unchanged.",
    }),
    size_bytes: t.expose("sizeBytes", { type: "ByteCount", description: "Its length in bytes." }),
    sha256: t.exposeString("sha256", {
      description: "SHA-256 of its bytes in lower-case hex; also the download's ETag.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the upload completed." }),
    bucket: t.relation("bucket", {
      type: Bucket,
      extensions: { rest: false },
      description: "The bucket holding it.",
    }),
  }),
});

const FileList = listType("File", File);

interface Usage {
  plan: Context["credential"]["plan"];
  used: number;
  limit: number;
  buckets: number;
  objects: number;
}

const StorageUsage = builder.objectRef<Usage>("StorageUsage").implement({
  description: "How much of its storage quota the workspace uses. Needs storage.read.",
  fields: (t) => ({
    object: objectKind(t, "storage_usage"),
    plan: t.field({ type: PlanEnum, description: "The plan that sets the quota.", resolve: (u) => u.plan }),
    used_bytes: t.field({
      type: "ByteCount",
      description: "Bytes of every object of the workspace.",
      resolve: (u) => u.used,
    }),
    limit_bytes: t.field({
      type: "ByteCount",
      description: "The quota in bytes (1 GB = 10^9 bytes).",
      resolve: (u) => u.limit,
    }),
    used_percent: t.float({
      description: "used_bytes as a percentage of limit_bytes, to two decimals.",
      resolve: (u) =>
        u.limit === 0 ? (u.used > 0 ? 100 : 0) : Number(((u.used / u.limit) * 100).toFixed(2)),
    }),
    limit_label: t.string({
      description: 'The quota for people: "1 GB", "10 GB", "100 GB", "1 TB".',
      resolve: (u) => bytesLabel(u.limit),
    }),
    bucket_count: t.int({ description: "Buckets of the workspace.", resolve: (u) => u.buckets }),
    object_count: t.int({ description: "Objects in them.", resolve: (u) => u.objects }),
  }),
});

/** `image/*`, or a type whose stored parameters do not matter (`text/plain` finds `text/plain; charset=utf-8`). */
function contentTypeWhere(filter: string | null | undefined) {
  if (filter === null || filter === undefined) return {};
  const wildcard = /^([A-Za-z0-9!#$&^_.+-]{1,127})\/\*$/.exec(filter.trim());
  if (wildcard) return { contentType: { startsWith: `${wildcard[1]!.toLowerCase()}/` } };
  const normal = normalMimeType(filter)?.split(";")[0];
  if (!normal)
    throw validationFailed(
      "content_type",
      "content_type must be a MIME type (image/png) or a type with * as its subtype (image/*).",
    );
  return { OR: [{ contentType: normal }, { contentType: { startsWith: `${normal};` } }] };
}

async function ownBucket(db: Tx | Context["db"], ctx: Context, id: string): Promise<void> {
  const bucket = await db.bucket.findFirst({
    where: { id, workspaceId: ctx.credential.workspaceId },
    select: { id: true },
  });
  if (!bucket) throw notFound("bucket", id, "bucket_id"); // the nested routes name it bucket_id
}

/**
 * Refuses an upload into a bucket the workspace does not have, then begins it (docs/api/storage.md):
 * one of the workspace's upload slots (429 concurrency_limit_exceeded) and a reservation of the
 * `size` bytes it announced (403 storage_quota_exceeded; null: not known, reserved as they arrive).
 * The caller ends the ticket, whatever happens.
 */
export async function beginUpload(
  ctx: Context,
  bucketId: string,
  size: number | null,
): Promise<UploadTicket> {
  await ownBucket(ctx.db, ctx, bucketId);
  // A length no quota holds (or none that parses) is refused by the reservation, as too large.
  return ctx.storage.beginUpload(
    ctx,
    size === null || (Number.isSafeInteger(size) && size >= 0) ? size : Number.MAX_SAFE_INTEGER,
  );
}

export interface WrittenUpload {
  bucketId: string;
  fileName: string;
  contentType: string;
  size: number;
  sha256: string;
}

/**
 * Records bytes already in the store: the bucket is locked against deletion, the upload's
 * reservation becomes used bytes (a conditional UPDATE: the quota holds even if the reservation
 * was lost), and file.uploaded is written in the same transaction. On any failure the bytes are
 * discarded (the caller's end() then releases the reservation).
 */
export async function commitUpload(
  ctx: Context,
  upload: UploadTicket,
  written: WrittenUpload,
): Promise<StoredObject> {
  const workspaceId = ctx.credential.workspaceId;
  try {
    return await ctx.db.$transaction(async (tx) => {
      const bucket = await lockRow(tx, "bucket", written.bucketId, workspaceId, "share");
      if (!bucket) throw notFound("bucket", written.bucketId, "bucket_id");
      if (!(await upload.settle(tx, written.size))) {
        const now = await tx.workspace.findUniqueOrThrow({
          where: { id: workspaceId },
          select: { storageBytes: true, storageReservedBytes: true },
        });
        throw quotaExceeded(
          upload.quotaBytes - Number(now.storageBytes) - Number(now.storageReservedBytes),
          upload.quotaBytes,
        );
      }
      const row = await tx.storedObject.create({
        data: {
          id: upload.id,
          workspaceId,
          bucketId: written.bucketId,
          fileName: written.fileName,
          contentType: written.contentType,
          sizeBytes: BigInt(written.size),
          sha256: written.sha256,
          storeKey: upload.key,
        },
      });
      await emit(tx, ctx, "file.uploaded", "File", row);
      return row;
    });
  } catch (error) {
    await ctx.storage.discard(upload.key);
    throw error;
  }
}

builder.queryFields((t) => ({
  files: t.field({
    type: FileList,
    description:
      "The objects of one bucket, newest first; an unknown bucket is a not_found error (param bucket_id). " +
      "`search` matches file names (case-insensitive substring), `content_type` a MIME type or `type/*`. Needs storage.read.",
    extensions: rest("GET /buckets/:bucket_id/objects", "List the objects of a bucket"),
    authScopes: { scope: "storage.read" },
    args: {
      bucket_id: t.arg.id({
        required: true,
        description: "The bucket whose objects to list (the {bucket_id} of the REST path).",
      }),
      search: t.arg.string({ description: "Part of the file name, in any case." }),
      content_type: t.arg.string({
        description:
          "A MIME type (`application/pdf`; parameters of stored types are ignored) or a family (`image/*`).",
      }),
      ...pageArgs,
    },
    resolve: async (_root, { bucket_id, search, content_type, ...page }, ctx, info) => {
      await ownBucket(ctx.db, ctx, bucket_id);
      const filters = { ...contentTypeWhere(content_type) };
      return listPage(page, ctx, info, ({ cursor, ...query }) =>
        ctx.db.storedObject.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            bucketId: bucket_id,
            AND: [searchWhere(search, ["fileName"]), filters],
            ...cursor,
          },
          ...query,
        }),
      );
    },
  }),
  file: t.prismaField({
    type: "StoredObject",
    nullable: true,
    description: "One object's metadata by id; an unknown id is a not_found error. Needs storage.read.",
    extensions: rest("GET /objects/:id", "Retrieve an object's metadata"),
    authScopes: { scope: "storage.read" },
    args: { id: t.arg.id({ required: true, description: "The object's id (`obj_…`)." }) },
    resolve: async (query, _root, { id }, ctx) =>
      found(
        "object",
        id,
        await ctx.db.storedObject.findFirst({
          ...query,
          where: { id, workspaceId: ctx.credential.workspaceId },
        }),
      ),
  }),
  storageUsage: t.field({
    type: StorageUsage,
    description: "The workspace's storage use against its plan's quota. Needs storage.read.",
    extensions: rest("GET /storage", "Retrieve storage usage"),
    authScopes: { scope: "storage.read" },
    resolve: async (_root, _args, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      const [workspace, buckets, objects] = await Promise.all([
        ctx.db.workspace.findUniqueOrThrow({
          where: { id: workspaceId },
          select: { plan: true, storageBytes: true },
        }),
        ctx.db.bucket.count({ where: { workspaceId } }),
        ctx.db.storedObject.count({ where: { workspaceId } }),
      ]);
      return {
        plan: workspace.plan,
        used: Number(workspace.storageBytes),
        limit: ctx.storage.quotaBytes(workspace.plan),
        buckets,
        objects,
      };
    },
  }),
}));

builder.mutationFields((t) => ({
  uploadFile: t.prismaField({
    type: "StoredObject",
    description:
      "Uploads a file sent as base64 (within the 25 MiB body limit; REST also takes the raw bytes, streamed, up to the quota). " +
      "Past the quota: 403 storage_quota_exceeded; while the plan's number of uploads are under way: 429 concurrency_limit_exceeded. " +
      "Emits file.uploaded. Needs storage.write.",
    extensions: rest("POST /buckets/:bucket_id/objects", "Upload an object", 201, [
      "storage_quota_exceeded",
      "concurrency_limit_exceeded",
    ]),
    authScopes: { scope: "storage.write" },
    args: {
      bucket_id: t.arg.id({
        required: true,
        description: "The bucket to upload into (the {bucket_id} of the REST path).",
      }),
      file_name: t.arg.string({
        required: true,
        description: "The file's name: 1–255 characters, no / or \\.",
      }),
      content_type: t.arg.string({ required: true, description: "Its MIME type, e.g. application/pdf." }),
      content_base64: t.arg.string({
        required: true,
        description: "The bytes in standard base64 (padded, no line breaks).",
      }),
    },
    resolve: async (_query, _root, args, ctx) => {
      const name = fileName("file_name", args.file_name);
      const contentType = mimeType("content_type", args.content_type);
      const bytes = strictBase64("content_base64", args.content_base64);
      const upload = await beginUpload(ctx, args.bucket_id, bytes.length);
      try {
        const written = await ctx.storage.put(upload, bytes, { contentType });
        return await commitUpload(ctx, upload, {
          bucketId: args.bucket_id,
          fileName: name,
          contentType,
          ...written,
        });
      } finally {
        await upload.end();
      }
    },
  }),
  deleteFile: t.field({
    type: Deleted,
    description:
      "Deletes an object and its bytes, freeing its quota. Emits file.deleted. Needs storage.write.",
    extensions: rest("DELETE /objects/:id", "Delete an object"),
    authScopes: { scope: "storage.write" },
    args: { id: t.arg.id({ required: true, description: "The object's id (`obj_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      const workspaceId = ctx.credential.workspaceId;
      const row = await ctx.db.$transaction(async (tx) => {
        const row = found("object", id, await tx.storedObject.findFirst({ where: { id, workspaceId } }));
        // A concurrent delete of the same object waits on the row lock, then deletes nothing: a 404, quota freed once.
        const { count } = await tx.storedObject.deleteMany({ where: { id } });
        if (count === 0) throw notFound("object", id);
        await tx.$executeRaw`update workspaces set storage_bytes = storage_bytes - ${row.sizeBytes} where id = ${workspaceId}`;
        await emit(tx, ctx, "file.deleted", "File", row);
        return row;
      });
      // After the commit: a crash here leaves bytes no row refers to, which the sweep removes.
      await ctx.storage.discard(row.storeKey);
      return { id, object: "file", deleted: true as const };
    },
  }),
}));
