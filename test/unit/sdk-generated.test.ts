import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { generate } from "@graphql-codegen/cli";
import * as documents from "@kontor/sdk/graphql";
import { buildSchema, type DocumentNode, parse, print } from "graphql";
import { afterAll, describe, expect, it } from "vitest";
import { SCALARS, sdkCodegen } from "../../codegen.ts";
import { schema } from "../../schema/index.ts";
import { sdkOperationFiles, sessionOnlyFields } from "../../scripts/sdk-operations.ts";
import { documentText, isMutation } from "../../sdk/src/lib/print.ts";

/**
 * The SDK's generated code is generated, never hand-edited, and current: the operation documents
 * and the codegen output are made again into a temporary directory and compared with the
 * committed files. Every custom scalar has a real type, and every root field a typed document.
 */

const ROOT = join(dirname(new URL(import.meta.url).pathname), "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const GENERATED = [
  "sdk/src/generated/schema.ts",
  "sdk/src/generated/graphql.ts",
  "sdk/src/generated/rest.ts",
];
const REGENERATE = "run `npm run generate` and commit the result";

const temp = mkdtempSync(join(tmpdir(), "kontor-sdk-codegen-"));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

const sdl = buildSchema(read("schema/schema.graphql"));
// The dashboard's session-only fields are not for the SDK's credentials (API keys, agent tokens).
const sessionOnly = sessionOnlyFields(schema);
const rootFields = [
  ...Object.keys(sdl.getQueryType()!.getFields()),
  ...Object.keys(sdl.getMutationType()!.getFields()),
].filter((field) => !sessionOnly.has(field));

describe("the SDK's generated files", () => {
  it("operation documents and the route table match what scripts/sdk-operations.ts makes", async () => {
    const files = await sdkOperationFiles();
    expect(Object.keys(files).sort()).toEqual([
      "sdk/src/generated/operations.graphql",
      "sdk/src/generated/rest.graphql",
      "sdk/src/generated/routes.ts",
    ]);
    for (const [path, content] of Object.entries(files)) {
      expect(read(path), `${path} is stale: ${REGENERATE}`).toBe(content);
      mkdirSync(dirname(join(temp, path)), { recursive: true });
      writeFileSync(join(temp, path), content);
    }
  });

  it("types and typed documents match what codegen.ts makes from the committed SDL", async () => {
    mkdirSync(join(temp, "schema"), { recursive: true });
    writeFileSync(join(temp, "schema/schema.graphql"), read("schema/schema.graphql"));
    for (const path of ["sdk/src/generated/operations.graphql", "sdk/src/generated/rest.graphql"]) {
      mkdirSync(dirname(join(temp, path)), { recursive: true });
      writeFileSync(join(temp, path), read(path));
    }
    await generate(sdkCodegen(temp), true);
    for (const path of GENERATED)
      expect(read(path), `${path} is stale: ${REGENERATE}`).toBe(readFileSync(join(temp, path), "utf8"));
  }, 60_000);

  it("maps every custom scalar to a real type, and leaves nothing any or unknown", () => {
    const custom = Object.values(sdl.getTypeMap())
      .filter((type) => type.constructor.name === "GraphQLScalarType" && !type.name.startsWith("__"))
      .map((type) => type.name)
      .filter((name) => !["String", "Int", "Float", "Boolean", "ID"].includes(name));
    expect(custom.sort()).toEqual([
      "ByteCount",
      "Date",
      "DateTime",
      "JSONObject",
      "Money",
      "Percent",
      "Quantity",
    ]);
    expect(
      Object.keys(SCALARS)
        .filter((name) => name !== "ID")
        .sort(),
    ).toEqual(custom.sort());
    const schemaTypes = read("sdk/src/generated/schema.ts");
    const expected: Record<string, string> = {
      Money: "number",
      Quantity: "number",
      Percent: "number",
      ByteCount: "number",
      Date: "string",
      DateTime: "string",
      JSONObject: "Record<string, unknown>",
    };
    for (const [scalar, type] of Object.entries(expected)) {
      expect(schemaTypes, scalar).toContain(`${scalar}: { input: ${type}; output: ${type}; }`);
    }
    for (const path of [...GENERATED, "sdk/src/generated/routes.ts"]) {
      const code = read(path)
        // The two places `unknown` belongs: codegen's own helper, and the JSONObject scalar.
        .replace("type Exact<T extends { [key: string]: unknown }>", "")
        .replaceAll("Record<string, unknown>", "");
      expect(code, path).not.toMatch(/[:<|,(]\s*(any|unknown)\b/);
      expect(code, path).not.toMatch(/\b(any|unknown)\s*[;>|,)\]]/);
    }
  });

  it("has a typed document for every Query and Mutation field, exported by @kontor/sdk/graphql", () => {
    expect([...sessionOnly].sort()).toEqual([
      "apiKeys",
      "createApiKey",
      "invitations",
      "inviteMember",
      "members",
      "removeMember",
      "revokeApiKey",
      "revokeInvitation",
      "rotateApiKey",
      "updateMember",
      "viewer",
    ]);
    const exported = Object.keys(documents).filter((name) => name.endsWith("Document"));
    const expectedNames = rootFields.map(
      (field) => `${field.charAt(0).toUpperCase()}${field.slice(1)}Document`,
    );
    expect(exported.sort()).toEqual(expectedNames.sort());
    for (const field of rootFields) {
      const document = (documents as Record<string, unknown>)[
        `${field.charAt(0).toUpperCase()}${field.slice(1)}Document`
      ] as DocumentNode;
      const operation = document.definitions[0]!;
      expect(operation.kind).toBe("OperationDefinition");
      expect(isMutation(document), field).toBe(field in sdl.getMutationType()!.getFields());
    }
  });
});

describe("the SDK's GraphQL printer", () => {
  it("prints every generated document as text that parses back to the same document", () => {
    for (const [name, document] of Object.entries(documents)) {
      if (!name.endsWith("Document")) continue;
      const text = documentText(document as DocumentNode);
      expect(print(parse(text)), name).toBe(print(document as DocumentNode));
    }
  });

  it("prints every kind of node: fragments, inline fragments, directives, literals, defaults", () => {
    const source = `
      query Q($id: ID!, $n: Int = 3, $on: Boolean! = true, $tags: [String!] = ["a", "b"], $input: AddressInput = {city: "Zürich \\"Z\\"", line1: null})
      @live {
        lead(id: $id) { id ...F @include(if: $on) ... on Lead { stage } ... @skip(if: false) { email } }
        x: leads(limit: 5, search: "a\\nb", stage: won) { data { id } }
        n: leads(limit: $n) { has_more }
      }
      fragment F on Lead { first_name estimated_value }
      mutation M { deleteLead(id: "lead_1") { deleted } }
      subscription S { s }
    `;
    const document = parse(source, { noLocation: true });
    expect(print(parse(documentText(document)))).toBe(print(document));
    expect(isMutation(document)).toBe(false);
    expect(isMutation(document, "M")).toBe(true);
    expect(isMutation("# a mutation? no\n query { a }")).toBe(false);
    expect(isMutation("  mutation Make { a }")).toBe(true);
    expect(documentText("{ a }")).toBe("{ a }");
    expect(documentText(parse("{ kept   as   sent }"))).toBe("{ kept   as   sent }");
  });
});

describe("the SDK's source", () => {
  const SOURCE = join(ROOT, "sdk/src");
  const files = readdirSync(SOURCE, { recursive: true, encoding: "utf8" });

  it("keeps every generated file, the GraphQL documents included, in sdk/src/generated/", () => {
    const graphql = files.filter((file) => file.endsWith(".graphql"));
    expect(graphql.sort()).toEqual(["generated/operations.graphql", "generated/rest.graphql"]);
    for (const file of files.filter((file) => file.endsWith(".ts") && !file.startsWith("generated/"))) {
      expect(read(`sdk/src/${file}`), file).not.toMatch(/^\/\/ Generated by/);
    }
  });

  /**
   * The public API as declared: exported functions, and the methods and getters of exported
   * classes that are neither private, protected, `_`-prefixed nor `@internal` (an overload's
   * signatures share one comment). Line-based, as the source is laid out by one style.
   */
  function publicMembers(code: string): Array<{ name: string; line: number }> {
    const lines = code.split("\n");
    const members: Array<{ name: string; line: number }> = [];
    let inClass: string | undefined;
    let previous: string | undefined;
    lines.forEach((line, index) => {
      const classMatch = /^export (?:abstract )?class (\w+)/.exec(line);
      if (classMatch) inClass = classMatch[1];
      else if (line.startsWith("}")) inClass = undefined;
      const fn = /^export (?:async )?function\*? ?(\w+)/.exec(line);
      const method = inClass
        ? /^ {2}(?:static )?(?:override )?(?:async )?(?:\* ?)?(?:get )?([A-Za-z$][\w$]*|\[Symbol\.\w+\])\s*[(<]/.exec(
            line,
          )
        : null;
      const name = fn
        ? fn[1]!
        : method && method[1] !== "constructor"
          ? `${inClass}.${method[1]}`
          : undefined;
      if (name && name !== previous) members.push({ name, line: index });
      // A signature may span lines (its parameters indented further, then `  ): Type;`).
      const within =
        line.trim() === "" || line.trim().endsWith(";") || line.startsWith("    ") || /^ {2}\)/.test(line);
      previous = name ?? (within ? previous : undefined);
    });
    return members.filter(({ line }) => !/(?:^\s*\*|\/\*\*)\s*@internal\b/m.test(docAbove(lines, line)));
  }

  function docAbove(lines: string[], line: number): string {
    let end = line - 1;
    // A line comment between the doc and its member (a biome-ignore) belongs to neither.
    while (end > 0 && lines[end]!.trim().startsWith("//")) end--;
    if (!lines[end]?.trim().endsWith("*/")) return "";
    let start = end;
    while (start > 0 && !lines[start]!.trim().startsWith("/**")) start--;
    return lines.slice(start, end + 1).join("\n");
  }

  it("documents every public method and exported function with an @example", () => {
    const missing: string[] = [];
    let count = 0;
    for (const file of files.filter((file) => file.endsWith(".ts") && !file.startsWith("generated/"))) {
      const lines = read(`sdk/src/${file}`).split("\n");
      for (const { name, line } of publicMembers(lines.join("\n"))) {
        count++;
        // A tag of its own (an e-mail address in an example is no tag).
        if (!/(?:^\s*\*|\/\*\*)\s*@example\b/m.test(docAbove(lines, line))) missing.push(`${file}: ${name}`);
      }
    }
    expect(count).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });
});

describe("the built package", () => {
  it("has no runtime dependencies and imports nothing but its own files (fetch only: Node 20+ and browsers)", () => {
    const manifest = JSON.parse(read("sdk/package.json")) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: "@kontor/sdk", type: "module", files: ["dist"] });
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.peerDependencies ?? {}).toEqual({});
    const files = readdirSync(join(ROOT, "sdk/dist"), { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".js"),
    );
    expect(files).toContain("index.js");
    for (const file of files) {
      const code = read(`sdk/dist/${file}`);
      // tsc writes each import and re-export on one line.
      const specifiers = code.split("\n").flatMap((line) => {
        const match =
          /^\s*(?:import|export)\b.*?\bfrom\s*["']([^"']+)["'];?\s*$/.exec(line) ??
          /^\s*import\s*["']([^"']+)["']/.exec(line);
        return match ? [match[1]!] : [];
      });
      const dynamic = [...code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!);
      for (const specifier of [...specifiers, ...dynamic])
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\.?\//);
      expect(code, file).not.toMatch(/\brequire\(|\bBuffer\.|from "node:/);
    }
  });
});
