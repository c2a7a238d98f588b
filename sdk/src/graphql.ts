/**
 * `@kontor/sdk/graphql`: the schema's types (every object, input and enum) and a typed document
 * for every Query and Mutation field, for `kontor.graphql(document, variables)`:
 *
 * ```ts
 * import { LeadsDocument } from "@kontor/sdk/graphql";
 * const { leads } = await kontor.graphql(LeadsDocument, { stage: "won", limit: 10 });
 * ```
 */

export * from "./generated/graphql.js";
export * from "./generated/schema.js";
export type {
  DocumentTypeDecoration,
  ResultOf,
  TypedDocumentNode,
  VariablesOf,
} from "./lib/typed-document.js";
