-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "storage_bytes" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "buckets" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "buckets_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "objects" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "bucket_id" TEXT NOT NULL,
    "file_name" TEXT NOT NULL,
    "content_type" TEXT NOT NULL,
    "size_bytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "store_key" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "objects_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "buckets_workspace_id_id_idx" ON "buckets"("workspace_id", "id");

-- CreateIndex
CREATE UNIQUE INDEX "buckets_workspace_id_name_key" ON "buckets"("workspace_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "objects_store_key_key" ON "objects"("store_key");

-- CreateIndex
CREATE INDEX "objects_workspace_id_id_idx" ON "objects"("workspace_id", "id");

-- CreateIndex
CREATE INDEX "objects_bucket_id_id_idx" ON "objects"("bucket_id", "id");

-- AddForeignKey
ALTER TABLE "buckets" ADD CONSTRAINT "buckets_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "objects" ADD CONSTRAINT "objects_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "objects" ADD CONSTRAINT "objects_bucket_id_fkey" FOREIGN KEY ("bucket_id") REFERENCES "buckets"("id") ON DELETE NO ACTION ON UPDATE CASCADE;
