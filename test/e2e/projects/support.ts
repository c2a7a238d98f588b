import { expect } from "vitest";
import { rest } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";

/** What the projects suites share. */

export const NEVER = "prj_01J00000000000000000000000";
export const NEVER_CLIENT = "cli_01J00000000000000000000000";

/** The `scratch` of a projects suite: called inside `e2e(...)` with its server getter. */
export function scratchOf(server: () => TestServer) {
  /** A fresh workspace whose projects are under the test's control. */
  return async function scratch() {
    const own = await server().tenant();
    const client = rest(server().api, own.key);
    const count = async () => {
      const res = await client.get("/projects?limit=100");
      expect(res.status).toBe(200);
      return res.body.data.length as number;
    };
    return { own, client, count };
  };
}
