// Builds the dashboard when its sources changed since the last build (npm install, start and test
// run this): the digest of every input is kept in dist/.build-digest. The build goes to a scratch
// directory first, so a running server never serves half a build.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { takeBuildLock } from "../../scripts/build-lock.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = join(root, "dist");
const stampFile = join(dist, ".build-digest");
// The app imports the scope list and the event catalog from the schema (../schema/lib/); this
// script's own settings (NODE_ENV) shape the build too.
const INPUTS = [
  "index.html",
  "vite.config.ts",
  "package.json",
  "tsconfig.json",
  "src",
  "public",
  "scripts/build-if-stale.mjs",
  "../schema/lib/scopes.ts",
  "../schema/lib/event-types.ts",
];

function inputFiles() {
  return INPUTS.map((input) => join(root, input))
    .filter((path) => existsSync(path))
    .flatMap((path) =>
      statSync(path).isDirectory()
        ? readdirSync(path, { withFileTypes: true, recursive: true })
            .filter((e) => e.isFile())
            .map((e) => join(e.parentPath, e.name))
        : [path],
    );
}

function digest() {
  const hash = createHash("sha256");
  for (const file of inputFiles().sort())
    hash.update(relative(root, file)).update("\0").update(readFileSync(file)).update("\0");
  // The toolchain's versions count too: a new Vite or React may emit other files.
  for (const pkg of ["vite", "react", "react-dom", "chart.js", "@vitejs/plugin-react"]) {
    const manifest = [join(root, "node_modules"), join(root, "..", "node_modules")]
      .map((dir) => join(dir, pkg, "package.json"))
      .find(existsSync);
    hash.update(`${pkg}@${manifest ? JSON.parse(readFileSync(manifest, "utf8")).version : "?"}`);
  }
  return hash.digest("hex");
}

const wanted = digest();
const force = process.argv.includes("--force");
const current = () =>
  existsSync(join(dist, "index.html")) && existsSync(stampFile) && readFileSync(stampFile, "utf8") === wanted;
if (!force && current()) {
  console.log("dashboard: dist/ is current");
  process.exit(0);
}

// One build at a time (test files and npm scripts may start together): ../../scripts/build-lock.mjs.
const release = await takeBuildLock(join(root, ".build-lock"), "dashboard", 180_000);
try {
  if (!force && current()) {
    console.log("dashboard: dist/ is current (built by another process)");
  } else {
    // A production build even when run from a test runner (vitest sets NODE_ENV=test, which would
    // give React's development build, twice the size).
    process.env.NODE_ENV = "production";
    const { build } = await import("vite");
    const scratch = join(root, `.dist-${process.pid}`);
    try {
      await build({
        root,
        configFile: join(root, "vite.config.ts"),
        logLevel: "warn",
        build: { outDir: scratch, emptyOutDir: true },
      });
      writeFileSync(join(scratch, ".build-digest"), wanted);
      rmSync(dist, { recursive: true, force: true });
      renameSync(scratch, dist);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    console.log("dashboard: built dist/");
  }
} finally {
  release();
}
