-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "storage_reserved_bytes" BIGINT NOT NULL DEFAULT 0;

-- CreateTable
CREATE TABLE "storage_reservations" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL DEFAULT 0,
    "streamed" BOOLEAN NOT NULL DEFAULT false,
    "preempted" BOOLEAN NOT NULL DEFAULT false,
    "owner" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "storage_reservations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "storage_reservations_workspace_id_idx" ON "storage_reservations"("workspace_id");

-- CreateIndex
CREATE INDEX "storage_reservations_expires_at_idx" ON "storage_reservations"("expires_at");

-- AddForeignKey
ALTER TABLE "storage_reservations" ADD CONSTRAINT "storage_reservations_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
