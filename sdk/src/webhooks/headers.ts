/** `Headers` (fetch, Request.headers) or a plain object such as Node's `req.headers`; names are case-insensitive. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * A header's value from either form of headers (names case-insensitive; repeated values joined with ", ").
 *
 * @example
 * ```ts
 * headerValue(req.headers, "Kontor-Signature"); // Node's lower-cased headers too
 * headerValue(request.headers, "webhook-id"); // fetch Headers
 * ```
 */
export function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const record = headers as Record<string, string | string[] | undefined>;
  let value = record[name];
  if (value === undefined) {
    const wanted = name.toLowerCase();
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === wanted) {
        value = record[key];
        break;
      }
    }
  }
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.join(", ");
  return value;
}
