/**
 * Typed GraphQL documents without a dependency on `graphql`: the same shape as
 * `TypedDocumentNode` of `@graphql-typed-document-node/core`, so documents made by any
 * graphql-codegen setup (or `graphql`'s own `parse`) can be passed to `kontor.graphql(...)`.
 */

/** Carries, at the type level only, what a document returns and which variables it takes. */
export interface DocumentTypeDecoration<TResult, TVariables> {
  /** Never set at run time. */
  __apiType?: (variables: TVariables) => TResult;
}

/** The parts of a GraphQL `DocumentNode` the SDK reads. */
export interface DocumentNodeLike {
  readonly kind: string;
  readonly definitions: ReadonlyArray<unknown>;
  readonly loc?: { readonly source?: { readonly body: string } } | undefined;
}

export interface TypedDocumentNode<
  TResult = { [key: string]: unknown },
  TVariables = { [key: string]: unknown },
> extends DocumentNodeLike,
    DocumentTypeDecoration<TResult, TVariables> {}

/** What a typed document returns. */
export type ResultOf<TDocument> =
  TDocument extends DocumentTypeDecoration<infer TResult, infer _TVariables> ? TResult : never;

/** The variables a typed document takes. */
export type VariablesOf<TDocument> =
  TDocument extends DocumentTypeDecoration<infer _TResult, infer TVariables> ? TVariables : never;
