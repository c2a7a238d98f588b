import { writeFileSync } from "node:fs";
import { printSchema } from "graphql";
import { schema } from "../schema/index.ts";

/** The committed SDL; test/schema.test.ts fails when it differs from what the code builds. */
export const printedSchema = () => `${printSchema(schema)}\n`;

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(new URL("../schema/schema.graphql", import.meta.url), printedSchema());
  console.log("wrote schema/schema.graphql");
}
