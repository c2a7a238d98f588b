// `npm run build`: compiles the server (server/, schema/ and the generated Prisma client) into
// dist/server/, which `npm start` runs with plain Node. One ES module bundle per entry (main.js,
// cli.js) with shared chunks and source maps beside them. The pure-JavaScript packages are bundled
// too: Node 20's module loader spent about half of a start resolving, reading and compiling their
// hundreds of files one by one (docs/development.md#the-production-build); those in EXTERNAL stay imports.
//
// Run by npm install, start and the CLI, it builds only when stale: dist/server/.build-meta.json
// records every file the last build read and a digest of them; the build reruns when one changed
// (a new file is only ever read through a changed one). `--force` builds anyway.
//
// dist/server/ sits two folders below the root, as server/<area>/ does: server/runtime/project.ts
// finds the repository's files (migrations, the dashboard) from either with one relative path.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { takeBuildLock } from "./build-lock.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = join(root, "dist", "server");
const metaFile = join(out, ".build-meta.json");
// Not read by the bundle, but they decide what it is: the versions of the packages it bundles or imports, and this script.
const ALWAYS = ["package-lock.json", "scripts/build-server.mjs"];

/**
 * Packages left as imports, each for a reason bundling would break or not pay:
 * files read beside their modules at run time (the Prisma client's query compiler, PGlite's WASM and
 * data, BullMQ's Lua scripts, the GraphiQL and Scalar assets), native addons (argon2, msgpackr's),
 * `pg` (the Prisma adapter imports it too: one copy, and bundled it failed to connect), and the
 * large ones loaded only when their feature is used (the AWS SDK with S3, the MCP SDK with /mcp).
 */
const EXTERNAL = [
  "@prisma/*",
  "@electric-sql/pglite",
  "pglite-prisma-adapter",
  "bullmq",
  "@graphql-yoga/graphiql",
  "@scalar/*",
  "@node-rs/*",
  "msgpackr-extract",
  "pg",
  "pg-*",
  "@aws-sdk/*",
  "@smithy/*",
  "@modelcontextprotocol/*",
  "esbuild",
];

function digest(files) {
  const hash = createHash("sha256").update(process.version);
  for (const file of [...new Set([...ALWAYS, ...files])].sort()) {
    const path = join(root, file);
    hash
      .update(file)
      .update("\0")
      .update(existsSync(path) ? readFileSync(path) : "(none)")
      .update("\0");
  }
  return hash.digest("hex");
}

function current() {
  if (!existsSync(metaFile)) return false;
  const meta = JSON.parse(readFileSync(metaFile, "utf8"));
  return meta.digest === digest(meta.inputs);
}

const force = process.argv.includes("--force");
const quiet = process.argv.includes("--quiet");
const say = (line) => quiet || console.log(line);
// The embedded database a first start copies (dist/embedded-db/), made again when the migrations
// changed (the script checks that itself: about 0.1 s when current).
const makeTemplate = () =>
  execFileSync(process.execPath, [join(out, "embedded-db.js")], {
    cwd: root,
    stdio: quiet ? "ignore" : "inherit",
  });

// One build at a time, the template's included (scripts/build-lock.mjs).
mkdirSync(join(root, "dist"), { recursive: true });
const release = await takeBuildLock(join(root, "dist", ".build-lock"), "server", 120_000);
try {
  if (!force && current()) {
    say("server: dist/server/ is current");
  } else {
    const started = performance.now();
    const { build } = await import("esbuild");
    // Built beside the output, then swapped in whole: a server starting meanwhile never reads half a build.
    const scratch = join(root, "dist", `.server-${process.pid}`);
    try {
      const result = await build({
        absWorkingDir: root,
        entryPoints: {
          main: "server/main.ts",
          cli: "server/cli.ts",
          "embedded-db": "server/db/build-embedded-template.ts",
        },
        outdir: scratch,
        bundle: true,
        splitting: true,
        format: "esm",
        platform: "node",
        target: "node20",
        external: EXTERNAL,
        // A package's ES modules where it ships both: graphql's CommonJS build, imported from ES
        // modules, is reached through two getters a property (esbuild's interop, then graphql's own
        // re-exports), on every field of every request: reads were 14 % slower. `.mjs` first also
        // resolves a deep import (`graphql/language/parser`) to the same copy as the package's entry.
        mainFields: ["module", "main"],
        resolveExtensions: [".ts", ".mjs", ".js", ".cjs", ".json"],
        // Bundled CommonJS packages require Node's built-ins: esbuild's ES module output has no `require` of its own.
        banner: {
          js: 'import { createRequire as __kontorCreateRequire } from "node:module"; const require = __kontorCreateRequire(import.meta.url);',
        },
        sourcemap: "linked",
        // Stack traces need the file and line, not the text: Node keeps a loaded map whole, and with
        // the bundled packages' sources in them an idle server held 10–40 MB more.
        sourcesContent: false,
        // No keepNames: it wraps every function the bundled packages create (graphql-js's, Yoga's, per
        // request too) in a naming call, 15 % of a read's throughput. Nothing reads a function's name:
        // errors are told apart by instanceof and codes; a stack names a renamed helper `text2`.
        keepNames: false,
        metafile: true,
        logLevel: "warning",
      });
      const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.startsWith("node_modules/"));
      writeFileSync(
        join(scratch, ".build-meta.json"),
        `${JSON.stringify({ digest: digest(inputs), inputs })}\n`,
      );
      rmSync(out, { recursive: true, force: true });
      renameSync(scratch, out);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    say(`server: built dist/server/ in ${Math.round(performance.now() - started)} ms`);
  }
  makeTemplate();
} finally {
  release();
}
