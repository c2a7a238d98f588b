import { readFileSync } from "node:fs";

/**
 * How package.json runs one of its `node` scripts, for harnesses that start the same process
 * without npm (the bench, the process suites): the environment it sets and Node's arguments.
 *
 * @example
 * npmScript("start"); // { env: { MALLOC_ARENA_MAX: "2" }, args: ["--enable-source-maps", …, "dist/server/main.js"] }
 */
export function npmScript(name: string): { env: Record<string, string>; args: string[] } {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    scripts: Record<string, string>;
  };
  const words = manifest.scripts[name]?.split(/\s+/) ?? [];
  const node = words.indexOf("node");
  if (node < 0) throw new Error(`package.json's ${name} script does not run node`);
  const env = Object.fromEntries(words.slice(0, node).map((word) => word.split("=", 2) as [string, string]));
  return { env, args: words.slice(node + 1) };
}
