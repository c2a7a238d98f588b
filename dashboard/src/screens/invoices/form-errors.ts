import { ApiError } from "../../api/errors.ts";

/**
 * A value GraphQL refuses before the mutation runs (a Money with 3 decimals, a Percent over 100)
 * comes back as `validation_failed` without a `param`, its message naming the variable and the
 * place in it: `Variable "$items" got invalid value 1.2345 at "items[0].quantity"; must be …`.
 * The dashboard's variables are named as the arguments, so that place is the field's param.
 */
const VARIABLE = /^Variable "\$(\w+)" got invalid value .*?(?: at "([^"]+)")?; (.+)$/s;

/**
 * The error with its `param` filled in from a GraphQL variable's message, so that `fieldError`
 * can put it under its field; any other error unchanged.
 *
 * @example withParam(error).param // "items[1].unit_price"
 */
export function withParam(error: unknown): unknown {
  if (!(error instanceof ApiError) || error.param !== undefined) return error;
  const match = VARIABLE.exec(error.message);
  if (!match) return error;
  const param = match[2] ?? match[1]!;
  return new ApiError(
    error.status,
    error.type,
    error.code,
    `${param} ${match[3]!}`,
    param,
    error.requestId,
    error.retryAfter,
  );
}
