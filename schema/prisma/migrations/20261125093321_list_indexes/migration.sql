-- Trigram indexes serve the lists' `search` (ILIKE '%…%'). pg_trgm is a trusted extension (PostgreSQL 13+):
-- a database owner may create it; PGlite loads it in server/db/open.ts.
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- DropIndex
DROP INDEX "api_keys_workspace_id_idx";

-- DropIndex
DROP INDEX "invoices_client_id_idx";

-- DropIndex
DROP INDEX "projects_client_id_idx";

-- CreateIndex
CREATE INDEX "agent_registrations_workspace_id_status_id_idx" ON "agent_registrations"("workspace_id", "status", "id");

-- CreateIndex
CREATE INDEX "api_keys_workspace_id_id_idx" ON "api_keys"("workspace_id", "id");

-- CreateIndex
CREATE INDEX "api_keys_workspace_id_revoked_at_idx" ON "api_keys"("workspace_id", "revoked_at");

-- CreateIndex
CREATE INDEX "clients_search_idx" ON "clients" USING GIN ("name" gin_trgm_ops, "company_name" gin_trgm_ops, "email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "inventory_items_search_idx" ON "inventory_items" USING GIN ("name" gin_trgm_ops, "sku" gin_trgm_ops, "category" gin_trgm_ops, "description" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "invoices_client_id_id_idx" ON "invoices"("client_id", "id");

-- CreateIndex
CREATE INDEX "leads_search_idx" ON "leads" USING GIN ("first_name" gin_trgm_ops, "last_name" gin_trgm_ops, "company_name" gin_trgm_ops, "email" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "objects_search_idx" ON "objects" USING GIN ("file_name" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "projects_workspace_id_status_id_idx" ON "projects"("workspace_id", "status", "id");

-- CreateIndex
CREATE INDEX "projects_client_id_id_idx" ON "projects"("client_id", "id");

-- CreateIndex
CREATE INDEX "projects_search_idx" ON "projects" USING GIN ("name" gin_trgm_ops, "description" gin_trgm_ops);

-- CreateIndex
CREATE INDEX "request_logs_workspace_id_status_id_idx" ON "request_logs"("workspace_id", "status", "id");

-- CreateIndex
CREATE INDEX "request_logs_workspace_id_route_id_idx" ON "request_logs"("workspace_id", "route", "id");

-- CreateIndex
CREATE INDEX "tasks_project_id_status_id_idx" ON "tasks"("project_id", "status", "id");

-- CreateIndex
CREATE INDEX "tasks_project_id_priority_id_idx" ON "tasks"("project_id", "priority", "id");

-- CreateIndex
CREATE INDEX "tasks_project_id_assignee_email_id_idx" ON "tasks"("project_id", "assignee_email", "id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_workspace_id_event_type_id_idx" ON "webhook_deliveries"("workspace_id", "event_type", "id");

-- CreateIndex
CREATE INDEX "webhook_deliveries_workspace_id_status_id_idx" ON "webhook_deliveries"("workspace_id", "status", "id");
