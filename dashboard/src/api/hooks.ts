import { useCallback, useEffect, useRef, useState } from "react";
import type { TypedDocumentString } from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import { graphql, type Variables } from "./graphql.ts";

export interface QueryState<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Runs the query again (after a mutation), keeping the data shown meanwhile. */
  reload: () => void;
}

/**
 * Runs a query when the component mounts, and again when its variables or the workspace change.
 * An answer that arrives after a newer request started is dropped.
 */
export function useQuery<TResult, TVariables extends Variables>(
  document: TypedDocumentString<TResult, TVariables>,
  variables: TVariables,
  options: { skip?: boolean } = {},
): QueryState<TResult> {
  const { workspaceId } = useSession();
  const [state, setState] = useState<{
    data: TResult | undefined;
    error: unknown;
    loading: boolean;
    workspace: string | null;
  }>({
    data: undefined,
    error: undefined,
    loading: !options.skip,
    workspace: workspaceId,
  });
  const [generation, setGeneration] = useState(0);
  const latest = useRef(0);
  const key = JSON.stringify(variables);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `generation` is how reload() asks again.
  useEffect(() => {
    if (options.skip) return;
    const id = ++latest.current;
    setState((previous) => ({ ...previous, loading: true }));
    const run = graphql as (
      document: TypedDocumentString<TResult, TVariables>,
      variables: TVariables,
    ) => Promise<TResult>;
    run(document, JSON.parse(key) as TVariables).then(
      (data) =>
        id === latest.current && setState({ data, error: undefined, loading: false, workspace: workspaceId }),
      (error: unknown) =>
        id === latest.current &&
        setState((previous) => ({ ...previous, error, loading: false, workspace: workspaceId })),
    );
  }, [document, key, workspaceId, generation, options.skip]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  // Another workspace's answer is never shown under this one.
  if (state.workspace !== workspaceId)
    return { data: undefined, error: undefined, loading: !options.skip, reload };
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export interface MutationState<TResult> {
  pending: boolean;
  error: unknown;
  data: TResult | undefined;
  reset: () => void;
}

/** A mutation run on demand: `run` resolves to the result, or to undefined when it failed (the error is in the state). */
export function useMutation<TResult, TVariables extends Variables>(
  document: TypedDocumentString<TResult, TVariables>,
): [(variables: TVariables) => Promise<TResult | undefined>, MutationState<TResult>] {
  const [state, setState] = useState<{ pending: boolean; error: unknown; data: TResult | undefined }>({
    pending: false,
    error: undefined,
    data: undefined,
  });
  const run = useCallback(
    async (variables: TVariables) => {
      setState({ pending: true, error: undefined, data: undefined });
      try {
        const send = graphql as (
          document: TypedDocumentString<TResult, TVariables>,
          variables: TVariables,
        ) => Promise<TResult>;
        const data = await send(document, variables);
        setState({ pending: false, error: undefined, data });
        return data;
      } catch (error) {
        setState({ pending: false, error, data: undefined });
        return undefined;
      }
    },
    [document],
  );
  const reset = useCallback(() => setState({ pending: false, error: undefined, data: undefined }), []);
  return [run, { ...state, reset }];
}
