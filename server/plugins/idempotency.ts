import type { Redis } from "ioredis";
import type { Plugin } from "graphql-yoga";
import type { Config } from "../config.ts";

export function useIdempotency(_config: Config, _redis: Redis | undefined): Plugin {
  return {};
}
