import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { ApiError } from "../../schema/lib/errors.ts";

/** What the AI meters' tests share: a clock they move, fresh ids, and the ApiError a refusal throws. */

/** A clock standing at `start` until it is set or advanced. */
export function clockAt(start: number) {
  let now = start;
  return { now: () => now, set: (to: number) => void (now = to), advance: (by: number) => void (now += by) };
}

export const newWorkspaceId = () => `ws_${randomBytes(6).toString("hex")}`;
export const newRequestId = () => `req_${randomBytes(6).toString("hex")}`;

/** The ApiError `promise` rejects with (it fails the test when it resolves or throws something else). */
export async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}
