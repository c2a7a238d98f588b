export const PLANS = ["free", "plus", "pro", "max"] as const;
export type PlanName = (typeof PLANS)[number];

export interface PlanLimits {
  requests_per_minute: number;
  ai_requests_per_minute: number;
  storage_bytes: number;
  storage_label: string;
  /** Agent registrations not revoked or denied, per workspace. */
  agent_registrations: number;
  /** Live access tokens of one registration; issuing past it revokes the oldest. */
  agent_tokens_per_registration: number;
  /** The longest an agent access token lives. */
  agent_token_lifetime_seconds: number;
  /** ID-JAG providers a workspace may trust. */
  trusted_providers: number;
  /** Coding-plan tokens (as the AI provider counts them) per 5-hour window; the weekly pool is 5 times it. */
  coding_tokens_5h: number;
  coding_tokens_weekly: number;
  /** Coding requests of one workspace running at once. */
  coding_concurrency: number;
  /** Bytes of stored records (rows as stored, events, request logs, idempotency records); past it writes get 403 data_quota_exceeded. */
  data_quota_bytes: number;
  /** What one workspace's idempotency records may hold in all (counted in the data quota too). */
  idempotency_bytes: number;
  /** Webhook endpoints of one workspace; one more is refused with plan_limit_reached. */
  webhook_endpoints: number;
  /** Raw or JSON uploads of one workspace running at once; one more gets 429 concurrency_limit_exceeded. */
  concurrent_uploads: number;
  /** Tokens (as the AI provider counts them) of general AI use (`/responses` with ai.responses) per UTC day. */
  ai_tokens_daily: number;
}

function codingPlan(tokens5h: number, concurrency: number) {
  return { coding_tokens_5h: tokens5h, coding_tokens_weekly: 5 * tokens5h, coding_concurrency: concurrency };
}

function agentCaps(registrations: number, tokens: number, lifetimeHours: number, providers: number) {
  return {
    agent_registrations: registrations,
    agent_tokens_per_registration: tokens,
    agent_token_lifetime_seconds: lifetimeHours * 3600,
    trusted_providers: providers,
  };
}

function isolation(
  dataBytes: number,
  idempotencyBytes: number,
  endpoints: number,
  uploads: number,
  aiTokensDaily: number,
) {
  return {
    data_quota_bytes: dataBytes,
    idempotency_bytes: idempotencyBytes,
    webhook_endpoints: endpoints,
    concurrent_uploads: uploads,
    ai_tokens_daily: aiTokensDaily,
  };
}

/** docs/api/limits.md, "The API in short" and "Agents": data, so later policies read it rather than hard-code it. */
export const PLAN_LIMITS: Record<PlanName, PlanLimits> = {
  free: {
    requests_per_minute: 120,
    ai_requests_per_minute: 20,
    storage_bytes: 1e9,
    storage_label: "1 GB",
    ...agentCaps(3, 2, 1, 0),
    ...codingPlan(200_000, 1),
    ...isolation(2e8, 16e6, 3, 4, 200_000),
  },
  plus: {
    requests_per_minute: 300,
    ai_requests_per_minute: 40,
    storage_bytes: 1e10,
    storage_label: "10 GB",
    ...agentCaps(10, 5, 4, 1),
    ...codingPlan(1_000_000, 2),
    ...isolation(2e9, 64e6, 10, 8, 2_000_000),
  },
  pro: {
    requests_per_minute: 600,
    ai_requests_per_minute: 60,
    storage_bytes: 1e11,
    storage_label: "100 GB",
    ...agentCaps(50, 10, 12, 3),
    ...codingPlan(5_000_000, 4),
    ...isolation(2e10, 256e6, 16, 16, 10_000_000),
  },
  max: {
    requests_per_minute: 1200,
    ai_requests_per_minute: 120,
    storage_bytes: 1e12,
    storage_label: "1 TB",
    ...agentCaps(200, 25, 24, 10),
    ...codingPlan(20_000_000, 8),
    ...isolation(2e11, 1e9, 50, 32, 40_000_000),
  },
};

/** Agent authentication is opt-in on free and on by default elsewhere (docs/api/agents.md). */
export const agentAuthDefault = (plan: PlanName) => plan !== "free";
