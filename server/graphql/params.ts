import type { GraphQLParams, Plugin } from "graphql-yoga";
import { ApiError, validationFailed } from "../../schema/lib/errors.ts";
import { isJsonBody, notJson } from "./transport.ts";

type Params = Record<string, unknown>;

const invalidJson = (what: string, error: unknown, param?: string) =>
  new ApiError(
    400,
    "invalid_request_error",
    "invalid_json",
    `${what} is not valid JSON: ${(error as Error).message}`,
    param ? { param } : {},
  );

const kind = (value: unknown) =>
  value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;

function parseJson(text: string, what: string, param?: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidJson(what, error, param);
  }
}

/**
 * The GraphQL-over-HTTP parameters, each of its type or absent (null stands for absent): `query`
 * and `operationName` strings, `variables` and `extensions` JSON objects. Yoga's own check says
 * the same without naming the parameter.
 */
function checked(params: Params): GraphQLParams {
  for (const name of ["query", "operationName"]) {
    const value = params[name];
    if (value != null && typeof value !== "string")
      throw validationFailed(name, `${name} must be a string, not ${kind(value)}.`);
  }
  for (const name of ["variables", "extensions"]) {
    const value = params[name];
    if (value != null && (typeof value !== "object" || Array.isArray(value))) {
      throw validationFailed(name, `${name} must be a JSON object, not ${kind(value)}.`);
    }
  }
  return params as GraphQLParams;
}

/** `GET /graphql?query=…&variables=…`: `variables` and `extensions` are URL-encoded JSON (an empty one is absent, as in Yoga). */
function fromQuery(url: URL): GraphQLParams {
  const search = url.searchParams;
  const json = (name: string) => {
    const raw = search.get(name);
    return raw ? parseJson(raw, name, name) : undefined;
  };
  return checked({
    query: search.get("query") || undefined,
    operationName: search.get("operationName") || undefined,
    variables: json("variables"),
    extensions: json("extensions"),
  });
}

/** A JSON POST body: an object of parameters (an array is a batch, which Yoga refuses after this). */
async function fromBody(request: Request): Promise<GraphQLParams | GraphQLParams[]> {
  const body = parseJson(await request.text(), "The request body");
  if (Array.isArray(body)) return body as GraphQLParams[];
  if (typeof body !== "object" || body === null) {
    throw new ApiError(
      400,
      "invalid_request_error",
      "validation_failed",
      `The request body must be a JSON object, not ${kind(body)}.`,
    );
  }
  return checked(body as Params);
}

/**
 * Reads the parameters of a `/graphql` request in place of Yoga's parsers, which answer
 * `internal_error` for a `variables` or `extensions` query parameter that is not JSON, and match
 * `Content-Type` case-sensitively (`APPLICATION/JSON` got a bodiless 415). Every failure is a 400
 * in the API's codes: `invalid_json`, or `validation_failed` naming the parameter. A POST that is
 * not JSON never gets here (server/graphql/transport.ts); should one, it is refused 415
 * like there. Other methods are Yoga's 405.
 */
export function useGraphQLParams(): Plugin {
  return {
    onRequestParse({ request, url, setRequestParser }) {
      if (request.method === "GET") setRequestParser(() => fromQuery(url));
      else if (request.method === "POST") {
        setRequestParser(
          isJsonBody(request)
            ? fromBody
            : () => {
                throw notJson();
              },
        );
      }
    },
  };
}
