import { expect } from "vitest";
import { rest } from "../../support/http.ts";
import type { TestServer } from "../../support/server.ts";

/** What the clients suites share. */

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const CLIENT_ID = /^cli_[0-9A-HJKMNP-TV-Z]{26}$/;
export const MISSING = "cli_01J00000000000000000000000";
export const EMPTY_ADDRESS = {
  line1: null,
  line2: null,
  city: null,
  region: null,
  postal_code: null,
  country: null,
};

/** The `scratch` of a clients suite: called inside `e2e(...)` with its server getter. */
export function scratchOf(server: () => TestServer) {
  /** A fresh workspace whose client count is under the test's control. */
  return async function scratch() {
    const own = await server().tenant();
    const client = rest(server().api, own.key);
    const count = async () => {
      const res = await client.get("/clients?limit=100");
      expect(res.status).toBe(200);
      return res.body.data.length as number;
    };
    return { own, client, count };
  };
}
