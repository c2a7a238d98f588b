import type { TestServer } from "../../support/server.ts";
import { listScratch } from "../../support/workspace.ts";

/** What the clients suites share. */

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

/** The `scratch` of a clients suite: a fresh workspace whose client count is under the test's control. */
export const scratchOf = (server: () => TestServer) => listScratch(server, "/clients");
