import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The type-level test of the SDK: test/sdk-types/usage.ts is compiled by tsc in a consumer
 * project of its own (a temporary directory whose node_modules/@kontor/sdk links to sdk/, so the
 * package's `exports` and built `.d.ts` are what resolves), under NodeNext, under Bundler, and in a
 * Node project without the DOM library, with the SDK's declarations checked too (skipLibCheck off). It must compile; and with its
 * `@ts-expect-error` comments removed, exactly the lines they mark must fail.
 */

const run = promisify(execFile);
const ROOT = join(dirname(new URL(import.meta.url).pathname), "../..");
const TSC = join(ROOT, "node_modules/.bin/tsc");
const USAGE = readFileSync(join(ROOT, "test/sdk-types/usage.ts"), "utf8");
const DIRECTIVE = /^\s*\/\/ @ts-expect-error\b/;

let project: string;

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "kontor-sdk-consumer-"));
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  mkdirSync(join(project, "node_modules/@kontor"), { recursive: true });
  symlinkSync(join(ROOT, "sdk"), join(project, "node_modules/@kontor/sdk"), "dir");
  // For the Node-only setting: Node's own types (fetch, Response, Blob … without the DOM library).
  mkdirSync(join(project, "node_modules/@types"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules/@types/node"), join(project, "node_modules/@types/node"), "dir");
  symlinkSync(join(ROOT, "node_modules/undici-types"), join(project, "node_modules/undici-types"), "dir");
});

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

/** Compiles `source` as the consumer's only file; the errors as `line: message`. */
type Setting = "NodeNext" | "Bundler" | "NodeNext, Node types without DOM";

async function compile(source: string, setting: Setting): Promise<{ lines: number[]; output: string }> {
  const resolution = setting === "Bundler" ? "Bundler" : "NodeNext";
  const nodeOnly = setting === "NodeNext, Node types without DOM";
  writeFileSync(join(project, "usage.ts"), source);
  const config = {
    compilerOptions: {
      target: "ES2022",
      module: resolution === "NodeNext" ? "NodeNext" : "ESNext",
      moduleResolution: resolution,
      lib: nodeOnly ? ["ES2022"] : ["ES2022", "DOM", "DOM.Iterable"],
      types: nodeOnly ? ["node"] : [],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      esModuleInterop: true,
    },
    files: ["usage.ts"],
  };
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify(config, null, 2));
  let output = "";
  try {
    ({ stdout: output } = await run(TSC, ["-p", join(project, "tsconfig.json"), "--pretty", "false"], {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    }));
  } catch (error) {
    output = `${(error as { stdout?: string }).stdout ?? ""}${(error as { stderr?: string }).stderr ?? ""}`;
    if (!output.trim()) throw error;
  }
  const lines = [...output.matchAll(/^(\S+)\((\d+),\d+\): error/gm)].map((m) => {
    expect(m[1], `an error outside usage.ts:\n${output}`).toBe("usage.ts");
    return Number(m[2]);
  });
  return { lines: [...new Set(lines)].sort((a, b) => a - b), output };
}

describe.each(["NodeNext", "Bundler", "NodeNext, Node types without DOM"] as const)(
  "the SDK's types, as a consumer sees them (%s)",
  (setting) => {
    it("compile the usage file, with every @ts-expect-error in it needed", async () => {
      const { lines, output } = await compile(USAGE, setting);
      expect(lines, output).toEqual([]);
    }, 60_000);

    it("refuse exactly the lines marked @ts-expect-error once the marks are gone", async () => {
      const source = USAGE.split("\n");
      const marked = source.flatMap((line, index) => (DIRECTIVE.test(line) ? [index + 2] : []));
      expect(marked.length).toBeGreaterThanOrEqual(12);
      const unmarked = source.map((line) => (DIRECTIVE.test(line) ? "//" : line)).join("\n");
      const { lines, output } = await compile(unmarked, setting);
      expect(lines, output).toEqual(marked);
    }, 60_000);
  },
);
