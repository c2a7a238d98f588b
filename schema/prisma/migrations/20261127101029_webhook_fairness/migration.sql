-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "target_host" TEXT NOT NULL DEFAULT '';

-- CreateIndex
CREATE INDEX "webhook_deliveries_endpoint_id_next_attempt_at_idx" ON "webhook_deliveries"("endpoint_id", "next_attempt_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_locked_until_idx" ON "webhook_deliveries"("locked_until");

-- Endpoints made before this column: their host as the URL spells it, lower case, default port
-- filled in (new ones get the WHATWG-normalized `hostname:port` from the server).
UPDATE "webhook_endpoints" SET "target_host" = CASE
    WHEN h.host ~ ':[0-9]+$' THEN h.host
    ELSE h.host || CASE WHEN lower("url") LIKE 'https:%' THEN ':443' ELSE ':80' END
  END
FROM (SELECT "id", lower(substring("url" FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)')) AS host FROM "webhook_endpoints") AS h
WHERE h."id" = "webhook_endpoints"."id" AND h.host IS NOT NULL;
