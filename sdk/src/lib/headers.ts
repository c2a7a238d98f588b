/** What the rate-limit and coding-plan headers of an answer say. */

/** `X-RateLimit-*`: the credential's requests per minute. */
export interface RateLimitInfo {
  /** Requests allowed per minute (`X-RateLimit-Limit`). */
  limit: number;
  /** Requests left in the current minute (`X-RateLimit-Remaining`). */
  remaining: number;
  /** When the minute ends, in Unix seconds (`X-RateLimit-Reset`). */
  reset: number;
  /** The workspace's plan (`X-RateLimit-Plan`). */
  plan: string | null;
}

/** `x-codingplan-*`: the coding plan's token pools, on AI routes metered by it. */
export interface CodingPlanInfo {
  /** How much of the 5-hour pool is used, in percent. */
  fiveHourUsedPercent: number | null;
  /** When the 5-hour pool refills (ISO 8601). */
  fiveHourReset: string | null;
  /** How much of the weekly pool is used, in percent. */
  weeklyUsedPercent: number | null;
  /** When the weekly pool refills (ISO 8601). */
  weeklyReset: string | null;
}

const numberOf = (value: string | null): number | null => {
  if (value === null || value.trim() === "") return null;
  const number = Number(value);
  return Number.isFinite(number) ? number : null;
};

/**
 * What the `X-RateLimit-*` headers of an answer say; null when they are absent or unreadable.
 *
 * @example
 * ```ts
 * const { rateLimit } = await kontor.workspace.retrieve().withResponse(); // made by rateLimitInfo(response.headers)
 * console.log(`${rateLimit?.remaining} of ${rateLimit?.limit} left`);
 * ```
 */
export function rateLimitInfo(headers: Headers): RateLimitInfo | null {
  const limit = numberOf(headers.get("x-ratelimit-limit"));
  const remaining = numberOf(headers.get("x-ratelimit-remaining"));
  const reset = numberOf(headers.get("x-ratelimit-reset"));
  if (limit === null || remaining === null || reset === null) return null;
  return { limit, remaining, reset, plan: headers.get("x-ratelimit-plan") };
}

/**
 * What the `x-codingplan-*` headers of an AI answer say; null on answers without them.
 *
 * @example
 * ```ts
 * const { codingPlan } = await kontor.chat.completions.create(params).withResponse(); // made by codingPlanInfo(response.headers)
 * console.log(codingPlan?.weeklyUsedPercent);
 * ```
 */
export function codingPlanInfo(headers: Headers): CodingPlanInfo | null {
  const info: CodingPlanInfo = {
    fiveHourUsedPercent: numberOf(headers.get("x-codingplan-5h-used-percent")),
    fiveHourReset: headers.get("x-codingplan-5h-reset"),
    weeklyUsedPercent: numberOf(headers.get("x-codingplan-weekly-used-percent")),
    weeklyReset: headers.get("x-codingplan-weekly-reset"),
  };
  return Object.values(info).every((value) => value === null) ? null : info;
}
