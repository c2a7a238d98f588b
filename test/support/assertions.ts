import { expect } from "vitest";
import type { ApiResponse } from "./http.ts";

/** A timestamp as the API writes it: ISO 8601 in UTC with milliseconds. */
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

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

/** expectHidden for `request` sent with `id`, then the same request sent with `neverId`. */
export async function expectHiddenAt(
  request: (id: string) => Promise<ApiResponse>,
  id: string,
  neverId: string,
) {
  expectHidden(await request(id), await request(neverId), id, neverId);
}

/** A 404 not_found invalid_request_error, on `param` when one is given. */
export function expectNotFound(res: ApiResponse, param?: string) {
  expect(res.status).toBe(404);
  expect(res.body.error).toMatchObject({
    type: "invalid_request_error",
    code: "not_found",
    ...(param !== undefined && { param }),
  });
}

/** A 400 validation_failed invalid_request_error on `param`. */
export function expectValidationFailed(res: ApiResponse, param: string) {
  expect(res.status).toBe(400);
  expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "validation_failed", param });
}

/** A 403 insufficient_scope permission_error naming `scope` as the one required. */
export function expectInsufficientScope(res: ApiResponse, scope: string) {
  expect(res.status).toBe(403);
  expect(res.body.error).toMatchObject({
    type: "permission_error",
    code: "insufficient_scope",
    required_scope: scope,
  });
}
