-- CreateEnum
CREATE TYPE "AgentRegistrationType" AS ENUM ('service_auth', 'anonymous', 'identity_assertion');

-- CreateEnum
CREATE TYPE "AgentRegistrationStatus" AS ENUM ('pending', 'active', 'denied', 'revoked');

-- CreateEnum
CREATE TYPE "ClaimAttemptStatus" AS ENUM ('pending', 'approved', 'denied', 'dead');

-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "sandbox_expires_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "sessions" (
    "id" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "signing_keys" (
    "id" TEXT NOT NULL,
    "public_jwk" JSONB NOT NULL,
    "private_sealed" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "retired_at" TIMESTAMPTZ(3),

    CONSTRAINT "signing_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_registrations" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT,
    "type" "AgentRegistrationType" NOT NULL,
    "status" "AgentRegistrationStatus" NOT NULL,
    "agent_name" TEXT,
    "login_hint" TEXT,
    "scopes" TEXT[],
    "post_claim_scopes" TEXT[],
    "claim_token_hash" TEXT,
    "claim_expires_at" TIMESTAMPTZ(3),
    "last_polled_at" TIMESTAMPTZ(3),
    "claimed_at" TIMESTAMPTZ(3),
    "claimed_by_user_id" TEXT,
    "provider_issuer" TEXT,
    "provider_subject" TEXT,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "agent_registrations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "claim_attempts" (
    "id" TEXT NOT NULL,
    "registration_id" TEXT NOT NULL,
    "attempt_token_hash" TEXT NOT NULL,
    "code_hash" TEXT NOT NULL,
    "login_hint" TEXT,
    "status" "ClaimAttemptStatus" NOT NULL DEFAULT 'pending',
    "failed_codes" INTEGER NOT NULL DEFAULT 0,
    "user_id" TEXT,
    "workspace_id" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "claim_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_tokens" (
    "id" TEXT NOT NULL,
    "registration_id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "trusted_providers" (
    "id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "issuer" TEXT NOT NULL,
    "jwks_url" TEXT NOT NULL,
    "max_auth_age" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "trusted_providers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "used_jtis" (
    "issuer" TEXT NOT NULL,
    "jti" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "used_jtis_pkey" PRIMARY KEY ("issuer","jti")
);

-- CreateIndex
CREATE INDEX "sessions_user_id_idx" ON "sessions"("user_id");

-- CreateIndex
CREATE INDEX "sessions_expires_at_idx" ON "sessions"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "agent_registrations_claim_token_hash_key" ON "agent_registrations"("claim_token_hash");

-- CreateIndex
CREATE INDEX "agent_registrations_workspace_id_id_idx" ON "agent_registrations"("workspace_id", "id");

-- CreateIndex
CREATE INDEX "agent_registrations_provider_issuer_provider_subject_idx" ON "agent_registrations"("provider_issuer", "provider_subject");

-- CreateIndex
CREATE UNIQUE INDEX "claim_attempts_attempt_token_hash_key" ON "claim_attempts"("attempt_token_hash");

-- CreateIndex
CREATE INDEX "claim_attempts_registration_id_idx" ON "claim_attempts"("registration_id");

-- CreateIndex
CREATE UNIQUE INDEX "agent_tokens_hash_key" ON "agent_tokens"("hash");

-- CreateIndex
CREATE INDEX "agent_tokens_registration_id_expires_at_idx" ON "agent_tokens"("registration_id", "expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "trusted_providers_workspace_id_issuer_key" ON "trusted_providers"("workspace_id", "issuer");

-- CreateIndex
CREATE INDEX "used_jtis_expires_at_idx" ON "used_jtis"("expires_at");

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_registrations" ADD CONSTRAINT "agent_registrations_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "claim_attempts" ADD CONSTRAINT "claim_attempts_registration_id_fkey" FOREIGN KEY ("registration_id") REFERENCES "agent_registrations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_tokens" ADD CONSTRAINT "agent_tokens_registration_id_fkey" FOREIGN KEY ("registration_id") REFERENCES "agent_registrations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "agent_tokens" ADD CONSTRAINT "agent_tokens_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "trusted_providers" ADD CONSTRAINT "trusted_providers_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
