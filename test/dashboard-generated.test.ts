import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generate } from "@graphql-codegen/cli";
import { afterAll, describe, expect, it } from "vitest";
import { dashboardCodegen } from "../codegen.ts";

/**
 * The dashboard's typed operations are generated, never hand-edited, and current: codegen.ts's
 * dashboard target is run again from the committed SDL and dashboard/src/graphql/*.graphql into a
 * temporary directory, and its output compared with the committed file.
 */

const ROOT = join(dirname(new URL(import.meta.url).pathname), "..");
const GENERATED = "dashboard/src/generated/graphql.ts";
const OPERATIONS = "dashboard/src/graphql";
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const operationFiles = readdirSync(join(ROOT, OPERATIONS)).filter((name) => name.endsWith(".graphql"));

const temp = mkdtempSync(join(tmpdir(), "kontor-dashboard-codegen-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

describe("the dashboard's generated operations", () => {
  it("match what codegen.ts makes from the committed SDL and the operation files", async () => {
    mkdirSync(join(temp, "schema"), { recursive: true });
    mkdirSync(join(temp, OPERATIONS), { recursive: true });
    writeFileSync(join(temp, "schema/schema.graphql"), read("schema/schema.graphql"));
    for (const name of operationFiles)
      writeFileSync(join(temp, OPERATIONS, name), read(`${OPERATIONS}/${name}`));
    await generate(dashboardCodegen(temp), true);
    const fresh = readFileSync(join(temp, GENERATED), "utf8");
    expect(
      read(GENERATED),
      `${GENERATED} is stale: run \`npm run generate:dashboard\` and commit the result`,
    ).toBe(fresh);
  }, 60_000);

  it("types every result and variable: nothing any or unknown beyond codegen's own helpers", () => {
    const code = read(GENERATED)
      .replace("type Exact<T extends { [key: string]: unknown }>", "")
      // The TypedDocumentString class's metadata slot, which the app never reads.
      .replaceAll("__meta__?: Record<string, any>", "")
      // How each document string is given its type, and a fragment's (variable-less) document.
      .replaceAll(" as unknown as TypedDocumentString<", " as TypedDocumentString<")
      .replace(/TypedDocumentString<(\w+Fragment), unknown>/g, "");
    expect(code).not.toMatch(/[:<|,(]\s*(any|unknown)\b/);
    expect(code).not.toMatch(/\b(any|unknown)\s*[;>|,)\]]/);
  });

  it("sends each document as text: no GraphQL parser in the browser bundle", () => {
    const code = read(GENERATED);
    expect(code).toContain("extends String");
    expect(code).not.toMatch(/from ['"]graphql['"]/);
  });

  it("has every operation used by a screen, and every operation name once", () => {
    const names = operationFiles.flatMap((name) =>
      [...read(`${OPERATIONS}/${name}`).matchAll(/^\s*(?:query|mutation)\s+(\w+)/gm)].map(
        (match) => match[1]!,
      ),
    );
    expect(names.length).toBeGreaterThan(0);
    expect(new Set(names).size, "operation names must be unique across files").toBe(names.length);
    const sources = readdirSync(join(ROOT, "dashboard/src"), { recursive: true, encoding: "utf8" })
      .filter((file) => /\.tsx?$/.test(file) && !file.startsWith("generated"))
      .map((file) => read(`dashboard/src/${file}`))
      .join("\n");
    for (const name of names)
      expect(sources, `${name}Document is not used by the app`).toMatch(new RegExp(`\\b${name}Document\\b`));
  });
});
