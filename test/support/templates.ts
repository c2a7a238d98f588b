/**
 * Migrated, empty databases made once per run, which each suite's scratch database copies instead
 * of applying every migration again (about 2 s for PGlite, most of a suite's start on the embedded
 * stack). The `deployment` row is deleted from the templates, so every copy makes an id of its own
 * on first open (server/db/deployment.ts) and keeps its Redis keys apart from the others'.
 */

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../server/db/open.ts";
import { adminQuery, databaseUrl, type Stack } from "./stacks.ts";

export interface Templates {
  /** A DATA_DIR whose `db` holds the migrated embedded database. */
  embedded?: string;
  /** The name of a migrated PostgreSQL database, for `create database … template`. */
  postgres?: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    templates: Templates;
  }
}

async function migrateEmpty(options: { databaseUrl?: string; dataDir: string }) {
  const db = await openDatabase({ databaseUrl: options.databaseUrl, dataDir: options.dataDir });
  try {
    await db.prisma.$executeRawUnsafe("delete from deployment");
  } finally {
    await db.close();
  }
}

/** Makes the templates of `stacks`; the function it returns removes them. */
export async function makeTemplates(
  stacks: Stack[],
): Promise<{ templates: Templates; remove(): Promise<void> }> {
  const templates: Templates = {};
  const remove = async () => {
    if (templates.embedded) rmSync(templates.embedded, { recursive: true, force: true });
    if (templates.postgres) await adminQuery(`drop database if exists ${templates.postgres} with (force)`);
  };
  // One after the other: PGlite's migrations hold this process's event loop for seconds at a time,
  // and a PostgreSQL migration waiting on it inside a transaction is cut off by the server's
  // idle-in-transaction time-out on a loaded machine.
  try {
    if (stacks.includes("embedded")) {
      templates.embedded = mkdtempSync(join(tmpdir(), "kontor-template-"));
      await migrateEmpty({ dataDir: templates.embedded });
    }
    if (stacks.includes("postgres")) {
      templates.postgres = `kontor_template_${randomBytes(6).toString("hex")}`;
      await adminQuery(`create database ${templates.postgres}`);
      await migrateEmpty({ databaseUrl: databaseUrl(templates.postgres), dataDir: tmpdir() });
    }
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
  return { templates, remove };
}
