import type { TypedDocumentString } from "../generated/graphql.ts";
import { authHeaders, reportRefusal } from "./auth-state.ts";
import { ApiError, apiError, networkError, unexpectedAnswer } from "./errors.ts";

/**
 * The dashboard's GraphQL client: a POST to /graphql with the session cookie (same origin), the
 * session's CSRF token and the chosen workspace, for a typed document string from graphql-codegen.
 * The first error of the answer is thrown as an ApiError, with the API's type, code and message.
 */

interface GraphQLErrorBody {
  message?: unknown;
  extensions?: { type?: unknown; code?: unknown; param?: unknown; request_id?: unknown };
}

export type Variables = Record<string, unknown>;

export async function graphql<TResult, TVariables extends Variables>(
  document: TypedDocumentString<TResult, TVariables>,
  ...[variables]: TVariables extends Record<string, never> ? [] | [TVariables] : [TVariables]
): Promise<TResult> {
  let response: Response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/graphql-response+json, application/json",
        ...authHeaders(),
      },
      body: JSON.stringify({ query: document.toString(), variables: variables ?? {} }),
    });
  } catch {
    throw networkError();
  }
  const body = (await response.json().catch(() => null)) as {
    data?: TResult | null;
    errors?: GraphQLErrorBody[];
  } | null;
  if (!body || typeof body !== "object") throw unexpectedAnswer(response.status);
  const first = body.errors?.[0];
  if (first) {
    const error = apiError(
      response.status === 200 ? statusOf(first) : response.status,
      { ...first.extensions, message: first.message },
      response,
    );
    reportRefusal(error);
    throw error;
  }
  if (!response.ok || body.data == null) throw unexpectedAnswer(response.status);
  return body.data;
}

/** A field error rides on a 200: its status follows from its type. */
function statusOf(error: GraphQLErrorBody): number {
  switch (error.extensions?.type) {
    case "authentication_error":
      return 401;
    case "permission_error":
      return 403;
    case "rate_limit_error":
      return 429;
    case "api_error":
      return 500;
    default:
      return 400;
  }
}

export { ApiError };
