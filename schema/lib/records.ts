import { notFound } from "./errors.ts";

/** Prisma's "record to update/delete not found". */
export function isRecordNotFound(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: string }).code === "P2025";
}

/** Runs a write addressed by `{id, workspaceId}`; a miss (or another workspace's id) is a 404. */
export async function owned<T>(object: string, id: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isRecordNotFound(error)) throw notFound(object, id);
    throw error;
  }
}

export function found<T>(object: string, id: string, row: T | null): T {
  if (row === null) throw notFound(object, id);
  return row;
}

/** Drops keys whose value is `undefined` (absent in the request), keeping explicit `null`s. */
export function defined<T extends Record<string, unknown>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}
