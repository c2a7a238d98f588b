/**
 * docs/development.md#the-production-build: `npm run build` compiles the server into dist/server/,
 * which `npm start`, `npm run kontor` and the process suites run; it builds again only when a file it
 * read changed. (The global setup has built it: every child server in these suites runs it.)
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../support/child-server.ts";

const build = () =>
  execFileSync(process.execPath, ["scripts/build-server.mjs"], { cwd: ROOT, encoding: "utf8" });

describe("production build", () => {
  it("is current after a build: a second run compiles nothing", () => {
    expect(build()).toContain("dist/server/ is current");
  });

  it("is not held up by a lock its owner left behind (a Ctrl-C during a start)", () => {
    const lock = `${ROOT}/dist/.build-lock`;
    mkdirSync(lock);
    // A pid no process has: the kernel's limit is far below it.
    writeFileSync(`${lock}/pid`, "2147483646");
    try {
      expect(build()).toContain("dist/server/ is current");
      expect(existsSync(lock)).toBe(false);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  });

  it("records every source it read, and none of node_modules", () => {
    const meta = JSON.parse(readFileSync(`${ROOT}/dist/server/.build-meta.json`, "utf8")) as {
      digest: string;
      inputs: string[];
    };
    expect(meta.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(meta.inputs).toEqual(expect.arrayContaining(["server/main.ts", "server/cli.ts"]));
    expect(meta.inputs.some((file) => file.startsWith("schema/generated/prisma/"))).toBe(true);
    expect(meta.inputs.filter((file) => file.includes("node_modules"))).toEqual([]);
  });

  it("bundles the pure-JavaScript packages, imports the others, and maps the bundle back to the TypeScript", () => {
    const dist = `${ROOT}/dist/server`;
    const code = readdirSync(dist)
      .filter((file) => file.endsWith(".js"))
      .map((file) => readFileSync(`${dist}/${file}`, "utf8"))
      .join("\n");
    const imported = new Set(
      [...code.matchAll(/(?:\bfrom|\bimport\(?)\s*"([^"./][^"]*)"/g)]
        .map((match) => match[1]!)
        .filter((specifier) => !specifier.startsWith("node:")),
    );
    // Left as imports (scripts/build-server.mjs, EXTERNAL): files beside their modules, native code, pg, lazy SDKs.
    for (const name of ["@electric-sql/pglite", "pg", "@modelcontextprotocol/server"])
      expect(imported, name).toContain(name);
    expect([...imported].some((specifier) => specifier.startsWith("@prisma/client/"))).toBe(true);
    // Bundled: read from the bundle, not resolved file by file at start.
    for (const name of ["graphql", "graphql-yoga", "@pothos/core", "sofa-api", "jose", "ioredis", "pino"])
      expect(imported, name).not.toContain(name);
    // One copy of graphql, its ES modules: a second (CommonJS) copy would fail graphql's instanceof checks.
    const graphqlSources = readdirSync(dist)
      .filter((file) => file.endsWith(".js.map"))
      .flatMap(
        (file) => (JSON.parse(readFileSync(`${dist}/${file}`, "utf8")) as { sources: string[] }).sources,
      )
      .filter((source) => source.includes("node_modules/graphql/"));
    expect(graphqlSources.length).toBeGreaterThan(50);
    expect(graphqlSources.filter((source) => !source.endsWith(".mjs"))).toEqual([]);
    const main = readFileSync(`${dist}/main.js`, "utf8");
    expect(main).toMatch(/from "node:cluster"/);
    expect(main).toContain("//# sourceMappingURL=main.js.map");
    const map = JSON.parse(readFileSync(`${dist}/main.js.map`, "utf8")) as { sources: string[] };
    expect(map.sources).toContain("../../server/main.ts");
  });
});
