/**
 * Migrated, empty databases made once per run, which each suite's scratch database copies instead
 * of applying every migration again (about 2 s for PGlite, most of a suite's start on the embedded
 * stack). The `deployment` row is deleted from the templates, so every copy makes an id of its own
 * on first open (server/db/deployment.ts) and keeps its Redis keys apart from the others'.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
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
export async function makeTemplates(stacks: Stack[]): Promise<{ templates: Templates; remove(): Promise<void> }> {
  const templates: Templates = {};
  const work: Promise<void>[] = [];
  if (stacks.includes("embedded")) {
    const dir = mkdtempSync(join(tmpdir(), "kontor-template-"));
    templates.embedded = dir;
    work.push(migrateEmpty({ dataDir: dir }));
  }
  if (stacks.includes("postgres")) {
    const name = `kontor_template_${randomBytes(6).toString("hex")}`;
    templates.postgres = name;
    work.push(
      adminQuery(`create database ${name}`).then(() =>
        migrateEmpty({ databaseUrl: databaseUrl(name), dataDir: tmpdir() }),
      ),
    );
  }
  const remove = async () => {
    if (templates.embedded) rmSync(templates.embedded, { recursive: true, force: true });
    if (templates.postgres) await adminQuery(`drop database if exists ${templates.postgres} with (force)`);
  };
  try {
    await Promise.all(work);
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
  return { templates, remove };
}
