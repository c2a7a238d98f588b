import { GraphQLClient } from "graphql-request";

export interface GraphQLResult<T = any> {
  data: T;
  errors: { message: string; path?: (string | number)[]; extensions: Record<string, any> }[] | undefined;
  status: number;
}

/**
 * graphql-request, set to hand back partial data and errors instead of throwing — also for a
 * document that fails validation, which GraphQL over HTTP answers with status 400 (graphql-request
 * throws that one whatever the error policy).
 */
export function graphql(url: string, key: string) {
  const client = new GraphQLClient(`${url}/graphql`, {
    headers: { authorization: `Bearer ${key}` },
    errorPolicy: "all",
  });
  return async <T = any>(query: string, variables?: Record<string, unknown>): Promise<GraphQLResult<T>> => {
    try {
      const result = await client.rawRequest<T>(query, variables);
      return { data: result.data, errors: result.errors as GraphQLResult["errors"], status: result.status };
    } catch (error) {
      const response = (error as { response?: GraphQLResult<T> }).response;
      if (!response?.errors) throw error;
      return { data: response.data, errors: response.errors, status: response.status };
    }
  };
}
