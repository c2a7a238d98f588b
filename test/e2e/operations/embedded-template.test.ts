/**
 * docs/development.md#the-production-build: the migrated empty embedded database `npm run build`
 * makes (dist/embedded-db/), which a first start copies instead of creating a database (the global
 * setup has built it).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EMBEDDED_TEMPLATE_DIR, seedFromTemplate } from "../../../server/db/embedded-template.ts";
import { loadMigrations } from "../../../server/db/migrate.ts";
import { openDatabase } from "../../../server/db/open.ts";

describe("embedded database template", () => {
  const dirs: string[] = [];
  const scratch = () => {
    const dir = mkdtempSync(join(tmpdir(), "kontor-template-test-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("is made by the build, for the current migrations", () => {
    expect(existsSync(join(EMBEDDED_TEMPLATE_DIR, "PG_VERSION"))).toBe(true);
    expect(existsSync(join(EMBEDDED_TEMPLATE_DIR, ".kontor-template"))).toBe(true);
  });

  it("fills an empty folder once, never one that holds a database", () => {
    const target = join(scratch(), "db");
    expect(seedFromTemplate(target)).toEqual(loadMigrations().map((migration) => migration.name));
    expect(existsSync(join(target, "PG_VERSION"))).toBe(true);
    expect(existsSync(join(target, ".kontor-template"))).toBe(false);
    expect(seedFromTemplate(target)).toEqual([]);
  });

  it("opens migrated (its migrations counted as this open's) and each copy makes a deployment id of its own", {
    timeout: 60_000,
  }, async () => {
    const ids: string[] = [];
    for (const dataDir of [scratch(), scratch()]) {
      const db = await openDatabase({ databaseUrl: undefined, dataDir });
      try {
        expect(db.migrated).toEqual(loadMigrations().map((migration) => migration.name));
        expect(db.migrated.length).toBeGreaterThan(0);
        expect(await db.prisma.workspace.count()).toBe(0);
        ids.push(db.deploymentId);
      } finally {
        await db.close();
      }
    }
    expect(ids[0]).not.toBe(ids[1]);
  });
});
