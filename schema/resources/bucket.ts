import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { ApiError, invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { BUCKET_NAME_LENGTH } from "../lib/limits.ts";
import { listPage } from "../lib/list-page.ts";
import { lockOwned } from "../lib/locks.ts";
import { found } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { Deleted, listType, objectKind, pageArgs } from "./shared.ts";

/** docs/api/README.md: 3–63 of a-z, 0-9 and -, unique in the workspace. */
const BUCKET_NAME = new RegExp(`^[a-z0-9-]{3,${BUCKET_NAME_LENGTH}}$`);

export const Bucket = builder.prismaObject("Bucket", {
  description: "A named container of stored objects. Visible with storage.read or storage.write.",
  authScopes: { readable: "storage" },
  fields: (t) => ({
    object: objectKind(t, "bucket"),
    id: t.exposeID("id", { description: "`bkt_…`." }),
    name: t.exposeString("name", {
      description: "3–63 characters of a-z, 0-9 and -, unique in the workspace.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the bucket was created." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the bucket was last changed." }),
  }),
});

const BucketList = listType("Bucket", Bucket);

const where = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

const nameTaken = (name: string) =>
  new ApiError(
    409,
    "invalid_request_error",
    "bucket_name_taken",
    `The workspace already has a bucket named '${name}'.`,
    { param: "name" },
  );

builder.queryFields((t) => ({
  buckets: t.field({
    type: BucketList,
    description: "The workspace's buckets, newest first. Needs storage.read.",
    extensions: rest("GET /buckets", "List buckets"),
    authScopes: { scope: "storage.read" },
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.bucket.findMany({ where: { workspaceId: ctx.credential.workspaceId, ...cursor }, ...page }),
      ),
  }),
  bucket: t.prismaField({
    type: "Bucket",
    nullable: true,
    description: "One bucket by id; an unknown id is a not_found error. Needs storage.read.",
    extensions: rest("GET /buckets/:id", "Retrieve a bucket"),
    authScopes: { scope: "storage.read" },
    args: { id: t.arg.id({ required: true, description: "The bucket's id (`bkt_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found("bucket", args.id, await ctx.db.bucket.findFirst({ ...query, where: where(ctx, args.id) })),
  }),
}));

builder.mutationFields((t) => ({
  createBucket: t.prismaField({
    type: "Bucket",
    description:
      "Creates a bucket. A name the workspace already uses is 409 bucket_name_taken. Needs storage.write.",
    extensions: rest("POST /buckets", "Create a bucket", 201, ["bucket_name_taken"]),
    authScopes: { scope: "storage.write" },
    args: {
      name: t.arg.string({
        required: true,
        description: "3–63 characters of a-z, 0-9 and -, unique in the workspace.",
      }),
    },
    resolve: async (query, _root, { name }, ctx) => {
      if (!BUCKET_NAME.test(name))
        throw validationFailed(
          "name",
          "name must be 3–63 characters of lower-case letters a-z, digits and -.",
        );
      try {
        return await ctx.db.bucket.create({
          ...query,
          data: { id: newId("bucket"), workspaceId: ctx.credential.workspaceId, name },
        });
      } catch (error) {
        // The unique index on (workspace_id, name) is the only one this insert can hit.
        if ((error as { code?: string } | null)?.code === "P2002") throw nameTaken(name);
        throw error;
      }
    },
  }),
  deleteBucket: t.field({
    type: Deleted,
    description:
      "Deletes an empty bucket; one that still holds objects is 400 invalid_state. Needs storage.write.",
    extensions: rest("DELETE /buckets/:id", "Delete an empty bucket"),
    authScopes: { scope: "storage.write" },
    args: { id: t.arg.id({ required: true, description: "The bucket's id (`bkt_…`)." }) },
    resolve: (_root, { id }, ctx) =>
      ctx.db.$transaction(async (tx) => {
        // Locked, so an upload cannot land in the bucket between the count and the delete.
        await lockOwned(tx, "bucket", id, ctx.credential.workspaceId);
        const objects = await tx.storedObject.count({ where: { bucketId: id } });
        if (objects > 0) {
          const { name } = await tx.bucket.findUniqueOrThrow({ where: { id }, select: { name: true } });
          throw invalidState(
            objects === 1
              ? `Bucket '${name}' still holds 1 object: delete it first.`
              : `Bucket '${name}' still holds ${objects} objects: delete them first.`,
          );
        }
        await tx.bucket.delete({ where: { id } });
        return { id, object: "bucket", deleted: true as const };
      }),
  }),
}));
