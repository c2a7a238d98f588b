import type { Plugin } from "graphql-yoga";
import type { Config } from "../config.ts";
import type { Database } from "../db/open.ts";

export function useRequestLog(_config: Config, _db: Database): Plugin {
  return {};
}
