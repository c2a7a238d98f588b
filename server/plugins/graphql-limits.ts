import type { Plugin } from "graphql-yoga";

export function useGraphQLLimits(): Plugin {
  return {};
}
