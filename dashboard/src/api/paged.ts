import { useRef, useState } from "react";
import type { TypedDocumentString } from "../generated/graphql.ts";
import { useSession } from "../session.tsx";
import type { Variables } from "./graphql.ts";
import { useQuery } from "./hooks.ts";

/** One page of a list the API pages with a cursor (`data`, `has_more`, `next_cursor`). */
export interface ListPage<T> {
  data: readonly T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface Paged<T> {
  /** Every row fetched so far, oldest page first. Empty while the first page of other filters is on its way. */
  rows: T[];
  error: unknown;
  loading: boolean;
  /** The API has more rows (or the next page failed and `more()` tries it again). */
  hasMore: boolean;
  /** Only the first page is asked for: what a live view reloads. */
  firstPage: boolean;
  /** Asks for the pages shown again, keeping them on screen meanwhile. */
  reload: () => void;
  /** Starts over from the first page (after a change that moves rows between pages). */
  restart: () => void;
  /** Adds the next page to the rows. */
  more: () => void;
}

/**
 * A list the API pages with a cursor, shown as one list that grows with "Show more". Other
 * filters (or another workspace) start it over; `restart()` reloads it from its first page.
 *
 * A page's rows are added once: while the next page loads, or when it failed, the page before it
 * (which `useQuery` keeps as its data) is not added a second time, and another filter's rows are
 * never shown under this one.
 *
 * @example
 * const keys = usePaged(ApiKeysDocument, { include_revoked: false }, (data) => data.apiKeys);
 * // keys.rows, keys.hasMore && <Button busy={keys.loading} onClick={keys.more}>Show more</Button>
 */
export function usePaged<TResult, TVariables extends Variables & { cursor?: string | null }, T>(
  document: TypedDocumentString<TResult, TVariables>,
  filters: Omit<TVariables, "cursor">,
  pick: (data: TResult) => ListPage<T>,
  options: { skip?: boolean } = {},
): Paged<T> {
  const { workspaceId } = useSession();
  const key = JSON.stringify([workspaceId, filters]);
  const [paging, setPaging] = useState<{ key: string; earlier: T[]; cursor: string | null }>({
    key,
    earlier: [],
    cursor: null,
  });
  const current = paging.key === key ? paging : { key, earlier: [], cursor: null };
  const query = useQuery(document, { ...filters, cursor: current.cursor } as TVariables, options);

  // Which request the data is the answer to: a new answer is always the latest request's (useQuery
  // drops the others), while the data kept during a load or after an error is an earlier one's.
  const request = JSON.stringify([key, current.cursor]);
  const answer = useRef<{ data: TResult; request: string } | null>(null);
  if (query.data !== undefined && query.data !== answer.current?.data && !query.loading)
    answer.current = { data: query.data, request };
  const fresh =
    query.data !== undefined && answer.current?.data === query.data && answer.current.request === request;
  const page = fresh && query.data !== undefined ? pick(query.data) : undefined;

  const rows = [...current.earlier, ...(page?.data ?? [])];
  const { reload } = query;
  return {
    rows,
    error: query.error,
    // Waiting for this request's answer, also in the render before useQuery's effect starts it.
    loading: query.loading || (!fresh && query.error === undefined && !options.skip),
    hasMore: page ? page.has_more : current.cursor !== null,
    firstPage: current.cursor === null,
    reload,
    restart: () => {
      setPaging({ key, earlier: [], cursor: null });
      reload();
    },
    more: () => {
      // A next page that failed is asked for again; otherwise the one after the rows shown.
      if (!page) reload();
      else setPaging({ key, earlier: rows, cursor: page.next_cursor });
    },
  };
}
