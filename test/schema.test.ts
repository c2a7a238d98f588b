import { readdirSync, readFileSync } from "node:fs";
import {
  type GraphQLNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
} from "graphql";
import { describe, expect, it } from "vitest";
import { schema } from "../schema/index.ts";
import { restRouteOf } from "../schema/lib/rest.ts";
import { printedSchema } from "../scripts/print-schema.ts";

const described = (text: string | null | undefined) => typeof text === "string" && text.trim().length > 0;

/** Our named types: the introspection types and the built-in scalars are not ours to describe. */
const ownTypes = (): GraphQLNamedType[] =>
  Object.values(schema.getTypeMap()).filter(
    (type) => !isIntrospectionType(type) && !isSpecifiedScalarType(type),
  );

/** Every type, field, argument, input field and enum value that has no description, by its schema coordinate. */
function undescribed(): string[] {
  const missing: string[] = [];
  for (const type of ownTypes()) {
    if (!described(type.description)) missing.push(type.name);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (!described(field.description)) missing.push(`${type.name}.${field.name}`);
        for (const arg of field.args) {
          if (!described(arg.description)) missing.push(`${type.name}.${field.name}(${arg.name}:)`);
        }
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (!described(field.description)) missing.push(`${type.name}.${field.name}`);
      }
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) {
        if (!described(value.description)) missing.push(`${type.name}.${value.name}`);
      }
    }
  }
  return missing;
}

/** `object` fields that name no single kind: a deletion answers for any resource, and an event's data holds the resource itself. */
const VARYING_OBJECT = new Set(["Deleted.object", "EventData.object"]);

/** The test files (recursively) under `dir`, relative to the repository. */
function testFiles(dir: string): string[] {
  return readdirSync(new URL(`../${dir}`, import.meta.url), { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => `${dir}/${name}`);
}

describe("schema", () => {
  it("is never half-built by a test: no end-to-end test or support file imports a schema/resources module", () => {
    // The e2e files share their modules within a worker: a resource module imported before
    // schema/index.ts registers its types first, and the SDL the server prints then differs in
    // order from the committed one. Constants a test needs live in schema/lib/.
    const offenders = [...testFiles("test/e2e"), ...testFiles("test/support")].filter((file) =>
      /from ["'][./]*schema\/resources\//.test(readFileSync(new URL(`../${file}`, import.meta.url), "utf8")),
    );
    expect(offenders).toEqual([]);
  });

  it("matches the committed schema/schema.graphql", () => {
    const committed = readFileSync(new URL("../schema/schema.graphql", import.meta.url), "utf8");
    expect(
      printedSchema(),
      "schema/schema.graphql is out of date with the code: run `npm run generate` and commit the result.",
    ).toBe(committed);
  });

  it("gives every REST route a method, a /path and a summary", () => {
    const routes: string[] = [];
    for (const type of [schema.getQueryType(), schema.getMutationType()]) {
      expect(type && isObjectType(type)).toBe(true);
      for (const field of Object.values(type!.getFields())) {
        const route = restRouteOf(field.extensions);
        if (!route) continue;
        const label = `${type!.name}.${field.name} (${route.method} ${route.path})`;
        routes.push(label);
        expect(["GET", "POST", "PATCH", "DELETE"], label).toContain(route.method);
        expect(route.path, label).toMatch(/^\/[a-z]/);
        expect(typeof route.summary, label).toBe("string");
        expect(route.summary.trim().length, `${label} has no summary`).toBeGreaterThan(0);
        expect(route.summary, label).toBe(route.summary.trim());
      }
    }
    expect(routes.length).toBeGreaterThan(0);
  });

  it("describes every type, field, argument, input field and enum value", () => {
    const missing = undescribed();
    expect(missing, `no description on:\n  ${missing.join("\n  ")}`).toEqual([]);
  });

  it("gives every `object` field a constant kind in extensions.literal, stated in its description", () => {
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const type of ownTypes()) {
      if (!isObjectType(type)) continue;
      const field = type.getFields().object;
      if (!field) continue;
      const coordinate = `${type.name}.object`;
      if (VARYING_OBJECT.has(coordinate)) {
        if (field.extensions.literal !== undefined) wrong.push(`${coordinate} varies, yet has a literal`);
        continue;
      }
      checked.push(coordinate);
      const literal = field.extensions.literal;
      if (typeof literal !== "string" || !/^[a-z_]+$/.test(literal))
        wrong.push(`${coordinate} has no literal kind`);
      else if (field.description !== `Always "${literal}".`)
        wrong.push(`${coordinate} is not described as always "${literal}"`);
    }
    expect(wrong).toEqual([]);
    expect(checked).toContain("Lead.object");
    expect(checked).toContain("LeadList.object");
    expect(checked).toContain("RequestLogStats.object");
  });

  it("resolves each `object` field to its literal", async () => {
    const answers: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const type of ownTypes()) {
      if (!isObjectType(type)) continue;
      const field = type.getFields().object;
      const literal = field?.extensions.literal;
      if (!field?.resolve || typeof literal !== "string") continue;
      const info = { fieldName: "object", path: { key: "object" }, parentType: type };
      answers[type.name] = await field.resolve({}, {}, { credential: { scopes: new Set() } }, info as never);
      expected[type.name] = literal;
    }
    expect(Object.keys(expected).length).toBeGreaterThan(10);
    expect(answers).toEqual(expected);
  });

  it("names in each root field's description the scopes that guard it", () => {
    const wrong: string[] = [];
    for (const type of [schema.getQueryType()!, schema.getMutationType()!]) {
      for (const field of Object.values(type.getFields())) {
        const guard = (field.extensions.pothosOptions as { authScopes?: { scope?: string | string[] } })
          .authScopes;
        const scopes = guard?.scope === undefined ? [] : ([] as string[]).concat(guard.scope);
        const expected = scopes.length === 0 ? "no scope is needed" : `Needs ${scopes.join(" and ")}.`;
        if (!field.description?.includes(expected))
          wrong.push(`${type.name}.${field.name}: expected "${expected}"`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
