/**
 * The variables of `after` that differ from `before`, for an update that sends only what a form
 * changed (so a quantity someone else changed meanwhile is not written back by an edit of the
 * name). Compared as JSON: a list (an item's suppliers) is unchanged when its contents are.
 *
 * @example changedFields({ name: "Bolt", budget: 5 }, { name: "Nut", budget: 5 }) // { name: "Nut" }
 */
export function changedFields<T extends object>(before: T, after: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(after).filter(
      ([name, value]) => JSON.stringify(value) !== JSON.stringify(before[name as keyof T]),
    ),
  ) as Partial<T>;
}
