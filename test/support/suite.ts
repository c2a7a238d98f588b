import { afterAll, beforeAll, describe } from "vitest";
import { startTestServer, type TestServer } from "./server.ts";
import { type Stack, stacks } from "./stacks.ts";

/**
 * Declares an end-to-end suite once per stack. `body` receives a getter for the running server
 * (started before the suite's tests, closed after them).
 */
export function e2e(
  name: string,
  body: (server: () => TestServer, stack: Stack) => void,
  env: NodeJS.ProcessEnv = {},
) {
  for (const stack of stacks()) {
    describe(`${name} [${stack}]`, () => {
      let server: TestServer | undefined;
      beforeAll(async () => {
        server = await startTestServer(stack, env);
      });
      afterAll(async () => {
        await server?.close();
      });
      body(() => {
        if (!server) throw new Error("server not started");
        return server;
      }, stack);
    });
  }
}
