-- The data-usage triggers (20261127100859_data_usage) join each statement's transition rows to the
-- stored rows by key. PL/pgSQL keeps a statement's plan for its connection's life, and a plan made
-- while a table was small (a fresh database before autovacuum's first ANALYZE; PGlite, which has no
-- autovacuum) scans the whole table: every later write of that connection then read every row of
-- it, a cost that grew with the table (request_logs' batches of 100: 5.9 ms at 2 500 rows, 8.6 ms
-- at 20 000). Each trigger function now plans with index lookups only, whatever the statistics
-- say (a batch of 100: 4.5 ms at any size). The settings hold while the function runs, not after.
DO $$
DECLARE
  t TEXT;
BEGIN
  FOREACH t IN ARRAY ARRAY[
    'clients', 'leads', 'invoices', 'invoice_items', 'payments', 'inventory_items', 'projects', 'tasks',
    'events', 'request_logs', 'audit_events', 'webhook_endpoints', 'webhook_deliveries', 'buckets', 'objects'
  ]
  LOOP
    EXECUTE format(
      'ALTER FUNCTION %I() SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off',
      'kontor_count_' || t
    );
  END LOOP;
END $$;
