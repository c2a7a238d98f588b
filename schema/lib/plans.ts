export const PLANS = ["free", "plus", "pro", "max"] as const;
export type PlanName = (typeof PLANS)[number];

export interface PlanLimits {
  requests_per_minute: number;
  ai_requests_per_minute: number;
  storage_bytes: number;
  storage_label: string;
}

/** api-spec.md §8 and decisions.md §4: data, so later policies read it rather than hard-code it. */
export const PLAN_LIMITS: Record<PlanName, PlanLimits> = {
  free: { requests_per_minute: 120, ai_requests_per_minute: 20, storage_bytes: 1e9, storage_label: "1 GB" },
  plus: { requests_per_minute: 300, ai_requests_per_minute: 40, storage_bytes: 1e10, storage_label: "10 GB" },
  pro: { requests_per_minute: 600, ai_requests_per_minute: 60, storage_bytes: 1e11, storage_label: "100 GB" },
  max: { requests_per_minute: 1200, ai_requests_per_minute: 120, storage_bytes: 1e12, storage_label: "1 TB" },
};

/** Agent authentication is opt-in on free and on by default elsewhere (api-spec.md §5). */
export const agentAuthDefault = (plan: PlanName) => plan !== "free";
