import type { Config } from "../config.ts";
import type { RouteEntry } from "./view.ts";

export function buildOpenApi(generated: unknown, table: RouteEntry[], config: Config): unknown {
  return generated;
}
