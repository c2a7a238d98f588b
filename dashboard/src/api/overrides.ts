import { useCallback, useState } from "react";

interface Versioned {
  id: string;
  updated_at: string;
}

export interface Overrides<T extends Versioned> {
  /** The rows with each changed one replaced by its newer version and the deleted ones left out. */
  apply(rows: readonly T[]): T[];
  /** A row as a mutation answered it. */
  put(row: T): void;
  remove(id: string): void;
}

/**
 * What this screen's own mutations answered, laid over a paged list: a row changed on the second
 * page shows its new state at once, without asking for every page shown again. The newer of the
 * two versions (by updated_at) wins, so a list fetched later is never hidden by an older answer.
 *
 * @example
 * const local = useOverrides<Item>();
 * const rows = local.apply(items.rows);
 * // after updateInventoryItem: local.put(result.updateInventoryItem)
 */
export function useOverrides<T extends Versioned>(): Overrides<T> {
  const [changed, setChanged] = useState<ReadonlyMap<string, T>>(new Map());
  const [deleted, setDeleted] = useState<ReadonlySet<string>>(new Set());
  const apply = (rows: readonly T[]) =>
    rows
      .filter((row) => !deleted.has(row.id))
      .map((row) => {
        const mine = changed.get(row.id);
        return mine && mine.updated_at >= row.updated_at ? mine : row;
      });
  const put = useCallback((row: T) => setChanged((map) => new Map(map).set(row.id, row)), []);
  const remove = useCallback((id: string) => setDeleted((set) => new Set(set).add(id)), []);
  return { apply, put, remove };
}
