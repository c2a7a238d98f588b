import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // graphql ships both ESM and CJS; one realm avoids "Cannot use GraphQLSchema from another module".
    alias: { graphql: "graphql/index.js" },
  },
  test: {
    include: ["test/**/*.test.ts"],
    // A guard against hangs, not a speed target: end-to-end tests on a loaded 2-core machine have
    // taken twice as long as on a quiet one.
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 3,
    globalSetup: ["test/support/global-setup.ts"],
    env: { KONTOR_LOG: "silent" },
  },
});
