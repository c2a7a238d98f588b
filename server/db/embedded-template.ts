import { createHash } from "node:crypto";
import { cpSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { projectPath } from "../runtime/project.ts";
import { applyMigrations, loadMigrations } from "./migrate.ts";

/**
 * A migrated, empty embedded database made by `npm run build` (dist/embedded-db/), which a first
 * start copies rather than creating a database and applying every migration (7 s of PGlite's
 * `initdb` and 1–2 s of migrations on this machine, against a copy of 40 MB). It holds no
 * `deployment` row: each copy makes an id of its own on first open.
 */
export const EMBEDDED_TEMPLATE_DIR = projectPath("dist/embedded-db");
const DIGEST_FILE = ".kontor-template";

/** What the template must match: PGlite's version and every migration. */
function templateDigest(): string {
  // Its package.json is not among its exports: found beside its entry point.
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const manifest = join(dirname(dirname(entry)), "package.json");
  const hash = createHash("sha256").update(JSON.parse(readFileSync(manifest, "utf8")).version);
  for (const { name, checksum } of loadMigrations()) hash.update(`\0${name}\0${checksum}`);
  return hash.digest("hex");
}

const current = (dir: string) =>
  existsSync(join(dir, DIGEST_FILE)) && readFileSync(join(dir, DIGEST_FILE), "utf8") === templateDigest();

/**
 * Fills an empty database folder from the template when one of the same migrations exists.
 * Returns the migrations it brought (every one: the template is current), none when it did not
 * fill it; a start without a template creates the database as before.
 *
 * @example
 * const migrated = seedFromTemplate(join(dataDir, "db")); // then PGlite.create(join(dataDir, "db"))
 */
export function seedFromTemplate(target: string): string[] {
  if (existsSync(join(target, "PG_VERSION")) || !current(EMBEDDED_TEMPLATE_DIR)) return [];
  rmSync(target, { recursive: true, force: true });
  cpSync(EMBEDDED_TEMPLATE_DIR, target, {
    recursive: true,
    filter: (source) => !source.endsWith(DIGEST_FILE),
  });
  return loadMigrations().map((migration) => migration.name);
}

/**
 * Makes dist/embedded-db/ unless it is current. Built beside it and swapped in whole, so a start
 * meanwhile copies either the old template or the new one.
 */
export async function makeEmbeddedTemplate(
  open: (dir: string) => Promise<{
    exec(sql: string): Promise<unknown>;
    query(sql: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
    close(): Promise<void>;
  }>,
): Promise<"current" | "made"> {
  if (current(EMBEDDED_TEMPLATE_DIR)) return "current";
  const scratch = `${EMBEDDED_TEMPLATE_DIR}.${process.pid}`;
  rmSync(scratch, { recursive: true, force: true });
  try {
    const db = await open(scratch);
    try {
      await applyMigrations({
        exec: async (sql) => void (await db.exec(sql)),
        query: async <T>(sql: string, params?: unknown[]) => (await db.query(sql, params)).rows as T[],
      });
      await db.exec("delete from deployment");
    } finally {
      await db.close();
    }
    writeFileSync(join(scratch, DIGEST_FILE), templateDigest());
    rmSync(EMBEDDED_TEMPLATE_DIR, { recursive: true, force: true });
    renameSync(scratch, EMBEDDED_TEMPLATE_DIR);
    return "made";
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
