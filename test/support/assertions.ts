import { expect } from "vitest";
import type { ApiResponse } from "./http.ts";

/** The ids of a list envelope's page, in order. */
export const ids = (list: { data: { id: string }[] }) => list.data.map((row) => row.id);

/**
 * A 404 for another workspace's `id` is indistinguishable from the 404 for `neverId`, an id that
 * never existed: same status, type, code, param and message (but for the id itself).
 */
export function expectHidden(res: ApiResponse, never: ApiResponse, id: string, neverId: string) {
  expect(res.status).toBe(404);
  expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "not_found" });
  expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
  expect(never.status).toBe(404);
  const { request_id: _a, ...shown } = res.body.error;
  const { request_id: _b, ...reference } = never.body.error;
  expect(shown).toEqual({ ...reference, message: reference.message.replaceAll(neverId, id) });
}
