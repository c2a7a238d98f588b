import type { TestServer } from "../../support/server.ts";
import { listScratch } from "../../support/workspace.ts";

/** What the projects suites share. */

export const NEVER = "prj_01J00000000000000000000000";
export const NEVER_CLIENT = "cli_01J00000000000000000000000";

/** The `scratch` of a projects suite: a fresh workspace whose projects are under the test's control. */
export const scratchOf = (server: () => TestServer) => listScratch(server, "/projects");
