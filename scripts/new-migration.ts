// Creates the next SQL migration by diffing schema/prisma/migrations against schema.prisma.
// Usage: npx tsx scripts/new-migration.ts <name>
//
// `prisma migrate` needs a native engine binary we cannot download, so this drives the
// WASM schema engine directly, with a throwaway in-memory PGlite as its database.
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import * as engineBindings from "@prisma/schema-engine-wasm/schema_engine_bg";
import { PrismaPGlite } from "pglite-prisma-adapter";

const root = path.resolve(import.meta.dirname, "..");
const schemaPath = path.join(root, "schema/prisma/schema.prisma");
const migrationsDir = path.join(root, "schema/prisma/migrations");

const args = process.argv.slice(2);
const name = args[0] ?? "";
if (args.length !== 1 || !/^[a-z0-9_]+$/.test(name)) {
  console.error("Usage: npx tsx scripts/new-migration.ts <name>");
  console.error("  <name>: lowercase letters, digits and underscores, e.g. add_invoices");
  process.exit(1);
}

// The package's main entry imports the .wasm as an ES module, which Node 20 cannot do
// without a flag, so instantiate it by hand against its JS glue.
async function loadSchemaEngineWasm(): Promise<void> {
  const wasmUrl = new URL(
    "schema_engine_bg.wasm",
    import.meta.resolve("@prisma/schema-engine-wasm/schema_engine_bg"),
  );
  const { instance } = await WebAssembly.instantiate(await readFile(wasmUrl), {
    "./schema_engine_bg.js": engineBindings,
  });
  engineBindings.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
}

async function loadMigrations() {
  const entries = await readdir(migrationsDir, { withFileTypes: true }).catch(() => []);
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  // The engine takes the connector from the lockfile; we don't keep one on disk.
  const lockfile = await readFile(path.join(migrationsDir, "migration_lock.toml"), "utf8").catch(
    () => 'provider = "postgresql"\n',
  );
  return {
    baseDir: migrationsDir,
    lockfile: { path: "migration_lock.toml", content: lockfile },
    shadowDbInitScript: "",
    migrationDirectories: await Promise.all(
      dirs.map(async (dir) => ({
        path: dir,
        migrationFile: {
          path: "migration.sql",
          content: {
            tag: "ok" as const,
            value: await readFile(path.join(migrationsDir, dir, "migration.sql"), "utf8"),
          },
        },
      })),
    ),
  };
}

await loadSchemaEngineWasm();
// The extensions the migrations create (server/db/open.ts loads the same ones).
const db = new PGlite({ extensions: { pg_trgm } });

// One throwaway db serves as both main and shadow database. We don't use the adapter's own
// factory because (as of 0.7.2) its shadow PGlite is never closed, which keeps the process
// alive ~10s, and its executeScript doesn't await exec(), so a broken migration would be
// reported as "No schema changes." before crashing.
const connect = async () => {
  const conn = await new PrismaPGlite(db).connect();
  conn.executeScript = async (script) => void (await db.exec(script));
  return conn;
};
const adapter = bindMigrationAwareSqlAdapterFactory({
  provider: "postgres",
  adapterName: "pglite",
  connect,
  connectToShadowDb: connect,
});

let engine: engineBindings.SchemaEngine | undefined;
try {
  engine = await engineBindings.SchemaEngine.new({ datamodels: undefined }, () => {}, adapter);
  const { exitCode, stdout } = await engine.diff({
    from: { tag: "migrations", ...(await loadMigrations()) },
    to: {
      tag: "schemaDatamodel",
      files: [{ path: schemaPath, content: await readFile(schemaPath, "utf8") }],
    },
    script: true,
    exitCode: true, // makes the engine report exitCode 2 when there is a difference
    filters: { externalTables: [], externalEnums: [] },
  });

  if (exitCode !== 2 || !stdout?.trim()) {
    console.log("No schema changes.");
  } else {
    const timestamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(migrationsDir, `${timestamp}_${name}`);
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, "migration.sql");
    await writeFile(file, stdout, { flag: "wx" });
    console.log(path.relative(process.cwd(), file));
  }
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  console.error(`Failed to create migration: ${message}`);
  // Database errors reach the engine only as "External error id#N"; fetch the real one.
  const id = /External error id#(\d+)/.exec(message)?.[1];
  const cause = id === undefined ? undefined : adapter.errorRegistry.consumeError(Number(id))?.error;
  if (cause) console.error("Caused by:", cause instanceof Error ? cause.message : cause);
  process.exitCode = 1;
} finally {
  engine?.free();
  await db.close();
}
