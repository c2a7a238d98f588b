-- Trust in an ID-JAG provider is per workspace: every identity_assertion registration now carries
-- the workspace whose trusted-provider entry verified its ID-JAG, from the moment it is made.
-- Pending ones made before carry none, so no workspace's keys could be told apart from another's
-- for them: they end here (their agents' next ID-JAG starts the link again, in the right workspace).
UPDATE "claim_attempts" SET "status" = 'dead'
WHERE "status" = 'pending'
  AND "registration_id" IN (
    SELECT "id" FROM "agent_registrations"
    WHERE "type" = 'identity_assertion' AND "workspace_id" IS NULL AND "revoked_at" IS NULL
  );

UPDATE "agent_registrations" SET "status" = 'revoked', "revoked_at" = CURRENT_TIMESTAMP, "updated_at" = CURRENT_TIMESTAMP
WHERE "type" = 'identity_assertion' AND "workspace_id" IS NULL AND "revoked_at" IS NULL;
