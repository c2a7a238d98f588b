-- CreateTable
CREATE TABLE "data_usage" (
    "id" BIGSERIAL NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,

    CONSTRAINT "data_usage_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "data_usage_workspace_id_idx" ON "data_usage"("workspace_id");

-- AddForeignKey
ALTER TABLE "data_usage" ADD CONSTRAINT "data_usage_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The data quota's counter (README "Limits"): every insert, update and delete of a workspace's
-- records adds one row of the bytes it added (or, negative, freed), per statement and workspace.
-- A row is measured as PostgreSQL stores it (pg_column_size of the stored row, compressed where
-- PostgreSQL compresses): an inserted or updated row is read back from its table, because the
-- NEW transition table holds it before compression, and a delete reads the stored row too — so a
-- row counts the same going in and out, and the counter never drifts. Appending a row never waits
-- on another transaction's lock, so concurrent writes of one workspace neither queue nor deadlock
-- on a counter; a sweep folds each workspace's rows into one.
CREATE FUNCTION kontor_add_data_usage(ws TEXT, delta BIGINT) RETURNS void LANGUAGE sql AS $$
  INSERT INTO data_usage (workspace_id, bytes)
  SELECT ws, delta
  -- A workspace being deleted takes its rows with it (cascade): nothing is left to count.
  WHERE delta <> 0 AND EXISTS (SELECT 1 FROM workspaces w WHERE w.id = ws)
$$;

-- One trigger function per table, so each statement is planned once. `%1$I` is the table; `%2$s`
-- joins a transition row `x` to its stored row `t`; `%3$s` is the stored row's workspace (with `%4$s`,
-- any join it needs to find it).
DO $$
DECLARE
  spec TEXT[];
  body TEXT;
BEGIN
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
    ['clients', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['leads', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['invoices', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['invoice_items', 't.invoice_id = x.invoice_id and t.position = x.position', 'w.workspace_id', 'join invoices w on w.id = t.invoice_id'],
    ['payments', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['inventory_items', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['projects', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['tasks', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['events', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['request_logs', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['audit_events', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['webhook_endpoints', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['webhook_deliveries', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['buckets', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w'],
    ['objects', 't.id = x.id', 'w.workspace_id', 'cross join lateral (select t.workspace_id) w']
  ]
  LOOP
    -- Stored rows of the NEW transition table (inserted or updated), and the OLD rows as they were stored.
    body := format($f$
      CREATE FUNCTION %5$I() RETURNS trigger LANGUAGE plpgsql AS $body$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          PERFORM kontor_add_data_usage(c.ws, SUM(c.bytes)::bigint) FROM (
            SELECT %3$s AS ws, pg_column_size(t.*)::bigint AS bytes FROM kontor_new x JOIN %1$I t ON %2$s %4$s
          ) c GROUP BY c.ws ORDER BY c.ws;
        ELSIF TG_OP = 'DELETE' THEN
          PERFORM kontor_add_data_usage(c.ws, -SUM(c.bytes)::bigint) FROM (
            SELECT %3$s AS ws, pg_column_size(t.*)::bigint AS bytes FROM kontor_old t %4$s
          ) c GROUP BY c.ws ORDER BY c.ws;
        ELSE
          PERFORM kontor_add_data_usage(c.ws, SUM(c.bytes)::bigint) FROM (
            SELECT %3$s AS ws, pg_column_size(t.*)::bigint AS bytes FROM kontor_new x JOIN %1$I t ON %2$s %4$s
            UNION ALL
            SELECT %3$s, -pg_column_size(t.*)::bigint FROM kontor_old t %4$s
          ) c GROUP BY c.ws ORDER BY c.ws;
        END IF;
        RETURN NULL;
      END $body$;
    $f$, spec[1], spec[2], spec[3], spec[4], 'kontor_count_' || spec[1]);
    EXECUTE body;
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS kontor_new FOR EACH STATEMENT EXECUTE FUNCTION %I()',
      spec[1] || '_data_usage_insert', spec[1], 'kontor_count_' || spec[1]);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %I REFERENCING OLD TABLE AS kontor_old NEW TABLE AS kontor_new FOR EACH STATEMENT EXECUTE FUNCTION %I()',
      spec[1] || '_data_usage_update', spec[1], 'kontor_count_' || spec[1]);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS kontor_old FOR EACH STATEMENT EXECUTE FUNCTION %I()',
      spec[1] || '_data_usage_delete', spec[1], 'kontor_count_' || spec[1]);
    -- What is stored already counts from the start.
    EXECUTE format('INSERT INTO data_usage (workspace_id, bytes) SELECT c.ws, SUM(c.bytes)::bigint FROM (SELECT %2$s AS ws, pg_column_size(t.*)::bigint AS bytes FROM %1$I t %3$s) c GROUP BY c.ws',
      spec[1], spec[3], spec[4]);
  END LOOP;
END $$;

-- Live sandboxes are counted at each anonymous registration (KONTOR_MAX_SANDBOXES).
CREATE INDEX "workspaces_sandbox_expires_at_idx" ON "workspaces"("sandbox_expires_at");
