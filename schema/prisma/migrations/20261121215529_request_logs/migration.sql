-- CreateTable
CREATE TABLE "request_logs" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT,
    "credential_id" TEXT,
    "method" TEXT NOT NULL,
    "route" TEXT,
    "status" INTEGER NOT NULL,
    "latency_ms" INTEGER NOT NULL,
    "error_code" TEXT,
    "client_ip" TEXT,
    "user_agent" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "request_logs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "request_logs_workspace_id_id_idx" ON "request_logs"("workspace_id", "id");

-- CreateIndex
CREATE INDEX "request_logs_workspace_id_credential_id_id_idx" ON "request_logs"("workspace_id", "credential_id", "id");

-- CreateIndex
CREATE INDEX "request_logs_created_at_idx" ON "request_logs"("created_at");
