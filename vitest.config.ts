import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // graphql ships both ESM and CJS; one realm avoids "Cannot use GraphQLSchema from another module".
    alias: { graphql: "graphql/index.js" },
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 3,
    globalSetup: ["test/support/global-setup.ts"],
    env: { KONTOR_LOG: "silent" },
  },
});
