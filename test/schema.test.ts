import { readFileSync } from "node:fs";
import { isObjectType } from "graphql";
import { describe, expect, it } from "vitest";
import { printedSchema } from "../scripts/print-schema.ts";
import { schema } from "../schema/index.ts";
import { restRouteOf } from "../schema/lib/rest.ts";

describe("schema", () => {
  it("matches the committed schema/schema.graphql", () => {
    const committed = readFileSync(new URL("../schema/schema.graphql", import.meta.url), "utf8");
    expect(printedSchema(), "schema/schema.graphql is out of date with the code: run `npm run generate` and commit the result.").toBe(
      committed,
    );
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
});
