import type { Redis } from "ioredis";
import type { Plugin } from "graphql-yoga";
import type { Config } from "../config.ts";

export function useRateLimit(_config: Config, _redis: Redis | undefined): Plugin {
  return {};
}
