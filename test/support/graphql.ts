import { GraphQLClient } from "graphql-request";

export interface GraphQLResult<T = any> {
  data: T;
  errors: { message: string; path?: (string | number)[]; extensions: Record<string, any> }[] | undefined;
  status: number;
}

/** graphql-request, set to hand back partial data and errors instead of throwing. */
export function graphql(url: string, key: string) {
  const client = new GraphQLClient(`${url}/graphql`, { headers: { authorization: `Bearer ${key}` }, errorPolicy: "all" });
  return async <T = any>(query: string, variables?: Record<string, unknown>): Promise<GraphQLResult<T>> => {
    const result = await client.rawRequest<T>(query, variables);
    return { data: result.data, errors: result.errors as GraphQLResult["errors"], status: result.status };
  };
}
