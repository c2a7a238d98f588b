import type { CodegenConfig } from "@graphql-codegen/cli";

/** Types for the SDK, generated from the committed SDL (the SDK itself is a later issue). */
const config: CodegenConfig = {
  schema: "schema/schema.graphql",
  generates: {
    "sdk/generated/graphql.ts": {
      plugins: ["typescript"],
      config: {
        enumsAsTypes: true,
        scalars: { DateTime: "string", Date: "string", Money: "number" },
      },
    },
  },
};

export default config;
