import SchemaBuilder from "@pothos/core";
import PrismaPlugin from "@pothos/plugin-prisma";
import ScopeAuthPlugin, { type AuthFailure, AuthScopeFailureType } from "@pothos/plugin-scope-auth";
import type { Context } from "./context.ts";
import type PrismaTypes from "./generated/pothos-types.ts";
import { getDatamodel } from "./generated/pothos-types.ts";
import { insufficientScope, ownerRequired, sessionRequired } from "./lib/errors.ts";
import type { Resource } from "./lib/scopes.ts";
import { scalars } from "./scalars.ts";
import "./plugins/data-quota.ts";

export const builder = new SchemaBuilder<{
  Context: Context;
  PrismaTypes: PrismaTypes;
  DefaultFieldNullability: false;
  AuthScopes: {
    /** Every listed scope is required. */
    scope: string | string[];
    /** The resource's `.read` or `.write` scope: whoever may read or write it may see the object. */
    readable: Resource;
    /** A user signed in to the dashboard, whatever their role: never an API key or agent token. */
    session: boolean;
    /** A user signed in to the dashboard who owns the workspace. */
    owner: boolean;
  };
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    Date: { Input: Date; Output: Date };
    Money: { Input: string; Output: { toString(): string } | number | string };
    Quantity: { Input: string; Output: { toString(): string } | number | string };
    Percent: { Input: string; Output: { toString(): string } | number | string };
    JSONObject: { Input: never; Output: object };
    ByteCount: { Input: never; Output: bigint | number };
  };
}>({
  defaultFieldNullability: false,
  plugins: [ScopeAuthPlugin, PrismaPlugin, "dataQuota"],
  prisma: {
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    exposeDescriptions: false,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  scopeAuth: {
    runScopesOnType: true,
    authScopes: (ctx) => {
      const has = (scope: string) => ctx.credential.scopes.has(scope);
      return {
        scope: (needed: string | string[]) => (Array.isArray(needed) ? needed.every(has) : has(needed)),
        readable: (resource: Resource) => has(`${resource}.read`) || has(`${resource}.write`),
        session: ctx.credential.kind === "session",
        owner: ctx.credential.kind === "session" && ctx.credential.role === "owner",
      };
    },
    unauthorizedError: (_parent, ctx, _info, result) => {
      const credential = ctx.credential;
      if (credential.kind !== "session" && needsSession(result.failure)) return sessionRequired();
      // A member holds every read scope and the business writes: whatever else it was refused, only an owner may do.
      if (credential.kind === "session" && credential.role !== "owner") return ownerRequired();
      return insufficientScope(requiredScope(result.failure, credential.scopes) ?? "unknown");
    },
  },
});

/** Whether the check failed on a `session` or `owner` scope (a field for dashboard users only). */
function needsSession(failure: AuthFailure): boolean {
  switch (failure.kind) {
    case AuthScopeFailureType.AuthScope:
      return failure.scope === "session" || failure.scope === "owner";
    case AuthScopeFailureType.AnyAuthScopes:
    case AuthScopeFailureType.AllAuthScopes:
      return failure.failures.some(needsSession);
    default:
      return false;
  }
}

/** The first scope whose absence made the check fail, for the error's `required_scope`. */
function requiredScope(failure: AuthFailure, granted: ReadonlySet<string>): string | undefined {
  switch (failure.kind) {
    case AuthScopeFailureType.AuthScope: {
      if (failure.scope === "readable") return `${String(failure.parameter)}.read`;
      const needed = ([] as string[]).concat(failure.parameter as string | string[]);
      return needed.find((scope) => !granted.has(scope));
    }
    case AuthScopeFailureType.AnyAuthScopes:
    case AuthScopeFailureType.AllAuthScopes:
      for (const child of failure.failures) {
        const scope = requiredScope(child, granted);
        if (scope) return scope;
      }
      return undefined;
    default:
      return undefined;
  }
}

builder.scalarType("DateTime", scalars.DateTime);
builder.scalarType("Date", scalars.Date);
builder.scalarType("Money", scalars.Money);
builder.scalarType("Quantity", scalars.Quantity);
builder.scalarType("Percent", scalars.Percent);
builder.scalarType("JSONObject", scalars.JSONObject);
builder.scalarType("ByteCount", scalars.ByteCount);

builder.queryType({
  description: "Reads. Each field is also a GET route under /v1 and says which scope it needs.",
});
builder.mutationType({
  description:
    "Writes. Each field is also a POST, PATCH or DELETE route under /v1 and says which scope it needs.",
});
