import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from "@pothos/core";
import type { GraphQLFieldResolver } from "graphql";
import type { Context } from "../context.ts";

/**
 * Mutations that free or lock down rather than add: they run past the data quota, so a workspace
 * at its quota can always delete records and revoke or rotate credentials (docs/api/limits.md).
 */
const ALWAYS_ALLOWED = /^(delete|remove|revoke|rotate)[A-Z]/;

/** Whether mutation `name` is refused once the workspace's records reach its data quota. */
export const countsAsWrite = (name: string) => !ALWAYS_ALLOWED.test(name);

/**
 * Checks the data quota before every mutation that writes (docs/api/limits.md), whichever surface
 * runs it (`/graphql`, REST through Sofa, the AI tools): one place, not one per resolver. Registered
 * after the scope plugin, so a credential without the scope hears about that first.
 */
export class DataQuotaPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(
    resolver: GraphQLFieldResolver<unknown, Types["Context"], object>,
    field: PothosOutputFieldConfig<Types>,
  ): GraphQLFieldResolver<unknown, Types["Context"], object> {
    if (field.kind !== "Mutation" || !countsAsWrite(field.name)) return resolver;
    return async (parent, args, context, info) => {
      const { dataQuota, credential } = context as Context;
      await dataQuota.assertWritable(credential.workspaceId);
      return resolver(parent, args, context, info);
    };
  }
}

declare global {
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      dataQuota: DataQuotaPlugin<Types>;
    }
  }
}

SchemaBuilder.registerPlugin("dataQuota", DataQuotaPlugin);
