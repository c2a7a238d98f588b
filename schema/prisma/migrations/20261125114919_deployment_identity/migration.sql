-- CreateTable
CREATE TABLE "deployment" (
    "singleton" BOOLEAN NOT NULL DEFAULT true,
    "id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deployment_pkey" PRIMARY KEY ("singleton")
);

-- One row only: the key is always true.
ALTER TABLE "deployment" ADD CONSTRAINT "deployment_singleton_check" CHECK ("singleton");

-- The deployment's id: 16 random hex digits (62 random bits of a v4 UUID). It names the
-- deployment's Redis keys, so every process opening this database shares them.
INSERT INTO "deployment" ("id") VALUES (right(replace(gen_random_uuid()::text, '-', ''), 16));
