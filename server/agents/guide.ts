import { readFileSync } from "node:fs";
import { PLAN_LIMITS, PLANS } from "../../schema/lib/plans.ts";
import { AGENT_SCOPES } from "../../schema/lib/scopes.ts";
import { projectPath } from "../runtime/project.ts";
import { CLAIM_ATTEMPT_TTL_SECONDS, POLL_INTERVAL_SECONDS } from "./claims.ts";
import {
  AGENT_PATHS,
  ASSERTION_REVOKED_EVENT,
  CLAIM_GRANT_TYPE,
  ID_JAG_ASSERTION_TYPE,
  JWT_BEARER_GRANT_TYPE,
} from "./metadata.ts";
import { type AgentServices, agentRoutes } from "./plugin.ts";

const TEMPLATE = readFileSync(projectPath("server/agents/auth.md"), "utf8");

const hours = (seconds: number) => `${seconds / 3600} h`;

function planCaps(): string {
  return PLANS.map((plan) => {
    const caps = PLAN_LIMITS[plan];
    return `| ${plan} | ${caps.agent_registrations} | ${caps.agent_tokens_per_registration} | ${hours(caps.agent_token_lifetime_seconds)} | ${caps.trusted_providers} |`;
  }).join("\n");
}

/** `{host_url}/auth.md`: the agent's guide, with this deployment's URLs and the live constants. */
export function renderGuide({ hostUrl, baseUrl }: Pick<AgentServices, "hostUrl" | "baseUrl">): string {
  const values: Record<string, string> = {
    host_url: hostUrl,
    base_url: baseUrl,
    claim_grant: CLAIM_GRANT_TYPE,
    jwt_bearer: JWT_BEARER_GRANT_TYPE,
    id_jag: ID_JAG_ASSERTION_TYPE,
    revoked_event: ASSERTION_REVOKED_EVENT,
    claim_ttl: String(CLAIM_ATTEMPT_TTL_SECONDS),
    interval: String(POLL_INTERVAL_SECONDS),
    scopes: AGENT_SCOPES.map((scope) => `\`${scope}\``).join(", "),
    plan_caps: planCaps(),
  };
  return TEMPLATE.replace(/\{\{(\w+)\}\}/g, (placeholder, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`auth.md template: unknown placeholder ${placeholder}`);
    return value;
  });
}

agentRoutes({
  [AGENT_PATHS.guide]: {
    GET: async (_request, services) =>
      new Response(renderGuide(services), {
        headers: { "Content-Type": "text/markdown; charset=utf-8", "Cache-Control": "public, max-age=3600" },
      }),
  },
});
