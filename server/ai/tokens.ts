/**
 * The most tokens Kontor records for one count: PostgreSQL's `integer`, the type of the request
 * log's `input_tokens` and `output_tokens`. A provider claiming more is taken at this.
 */
export const MAX_TOKENS = 2_147_483_647;

/**
 * A token count as a provider reported it, as Kontor records it: a whole number from 0 to
 * MAX_TOKENS. A negative count, NaN or a non-number counts 0; `1e308` or `Infinity` (JSON's
 * `1e999`) counts MAX_TOKENS.
 */
export function tokenCount(value: unknown): number {
  if (typeof value !== "number" || Number.isNaN(value) || value <= 0) return 0;
  return Math.min(MAX_TOKENS, Math.round(value));
}

/** `total` plus what `value` counts (see tokenCount), never past MAX_TOKENS: the sum over a tool loop's rounds. */
export function addTokens(total: number, value: unknown): number {
  return Math.min(MAX_TOKENS, tokenCount(total) + tokenCount(value));
}
