-- CreateEnum
CREATE TYPE "AuditActorType" AS ENUM ('user', 'api_key', 'agent', 'system');

-- CreateTable
CREATE TABLE "audit_events" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "actor_type" "AuditActorType" NOT NULL,
    "actor_id" TEXT,
    "actor_email" TEXT,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT,
    "client_ip" TEXT,
    "user_agent" TEXT,
    "request_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_events_workspace_id_id_idx" ON "audit_events"("workspace_id", "id");

-- CreateIndex
CREATE INDEX "audit_events_workspace_id_action_id_idx" ON "audit_events"("workspace_id", "action", "id");

-- CreateIndex
CREATE INDEX "audit_events_workspace_id_actor_id_id_idx" ON "audit_events"("workspace_id", "actor_id", "id");

-- CreateIndex
CREATE INDEX "audit_events_workspace_id_target_id_id_idx" ON "audit_events"("workspace_id", "target_id", "id");

-- CreateIndex
CREATE INDEX "audit_events_created_at_idx" ON "audit_events"("created_at");
