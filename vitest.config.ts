import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // graphql ships both ESM and CJS; one realm avoids "Cannot use GraphQLSchema from another module".
    alias: { graphql: "graphql/index.js" },
  },
  test: {
    // A guard against hangs, not a speed target: end-to-end tests on a loaded 2-core machine have
    // taken twice as long as on a quiet one.
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 3,
    globalSetup: ["test/support/global-setup.ts"],
    env: { KONTOR_LOG: "silent" },
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [
            "test/*.test.ts",
            "test/unit/**/*.test.ts",
            "test/plugins/**/*.test.ts",
            "test/sdk-types/**/*.test.ts",
          ],
        },
      },
      {
        // Suites about processes (the CLI, cluster mode, shutdown) keep module-level registries of
        // the children they start: each file gets its own, as with any isolated file.
        extends: true,
        test: { name: "processes", include: ["test/e2e/operations/**/*.test.ts"] },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/operations/**"],
          // Each worker imports the server once for all its files, not once per file (a third of
          // the suite's time went to imports). Every suite starts its own servers and workspaces, so
          // nothing of one file's state reaches the next; unit tests that mock modules stay isolated.
          isolate: false,
        },
      },
    ],
  },
});
