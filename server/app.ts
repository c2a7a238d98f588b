import { createYoga, type YogaServerInstance } from "graphql-yoga";
import type { Context } from "../schema/context.ts";
import { schema } from "../schema/index.ts";
import { ApiKeyResolver } from "./auth/api-keys.ts";
import type { RevocationBus } from "./auth/revocations.ts";
import "./agents/index.ts";
import type { Redis } from "ioredis";
import type { SigningKeys } from "./agents/keys.ts";
import { useAgentAuth } from "./agents/plugin.ts";
import { useSandboxSweep } from "./agents/sandbox.ts";
import { aiOpenApi } from "./ai/openapi.ts";
import { type AiServices, useAi } from "./ai/plugin.ts";
import { useAuditSweep } from "./audit/sweep.ts";
import { AgentTokenResolver } from "./auth/agent-tokens.ts";
import { useAuthentication } from "./auth/authenticate.ts";
import { CSRF_HEADER, hasSessionCookie, sessionCredential } from "./auth/session-auth.ts";
import { useDashboardAccounts } from "./dashboard/accounts.ts";
import { useDashboardStatic } from "./dashboard/static.ts";
import type { Database } from "./db/open.ts";
import { maskErrorForYoga, useGraphQLErrorShape } from "./graphql/errors.ts";
import { renderLocalGraphiQL, useGraphiQLAssets } from "./graphql/graphiql.ts";
import { useGraphQLLimits } from "./graphql/limits.ts";
import { useGraphQLParams } from "./graphql/params.ts";
import { useGraphQLTransport } from "./graphql/transport.ts";
import { useCors } from "./http/cors.ts";
import { GRAPHQL_PATH } from "./http/error-response.ts";
import { guarded } from "./http/guard.ts";
import { useNotFound } from "./http/not-found.ts";
import { useBodyLimit, useRequestBody } from "./http/request-body.ts";
import { useRequestClient } from "./http/request-client.ts";
import { useRequestId } from "./http/request-id.ts";
import { type RequestState, type ServerContext, stateOf } from "./http/request-state.ts";
import { useWellKnown } from "./http/well-known.ts";
import { mcpResources } from "./mcp/documents.ts";
import { useMcp, useMcpGuard } from "./mcp/plugin.ts";
import { useAccessLog } from "./observability/access-log.ts";
import type { ServerMetrics } from "./observability/metrics.ts";
import { useRequestLog } from "./observability/request-log.ts";
import { DataQuota, useDataUsageFold } from "./policies/data-quota.ts";
import { IDEMPOTENCY_TTL_MS, useIdempotency } from "./policies/idempotency.ts";
import { MemoryIdempotencyStore, RedisIdempotencyStore } from "./policies/idempotency-store.ts";
import { useAddressLimit, useRateLimit } from "./policies/rate-limit.ts";
import { useApiReference } from "./rest/api-reference.ts";
import { useRest } from "./rest/plugin.ts";
import type { Config } from "./runtime/config.ts";
import { storageOpenApi } from "./storage/openapi.ts";
import { isRawUpload, useStorage } from "./storage/plugin.ts";
import type { Storage } from "./storage/services.ts";
import { useBytesSweep, useUploadLeases } from "./storage/sweep.ts";
import type { WebhookRuntime } from "./webhooks/runtime.ts";
import { useWebhookWake } from "./webhooks/wake.ts";

const GRAPHIQL_QUERY = `# Add your key in the Headers tab below:
# {"Authorization": "Bearer ktr_live_…"}
query Workspace {
  workspace { id name plan }
  leads(limit: 5) { data { id full_name stage } has_more next_cursor }
}
`;

export type App = YogaServerInstance<ServerContext, Context>;

/**
 * One Yoga instance serves `/graphql` and, through Sofa, `/v1`. Every policy is a plugin here,
 * in the order a request meets them.
 */
export interface Services {
  db: Database;
  /** Undefined without REDIS_URL: policies then keep their state in process. */
  redis: Redis | undefined;
  /** The prefix of this deployment's Redis keys, `kontor:{<deployment id>}:` (server/runtime/redis.ts). */
  redisNamespace: string;
  /** Empties every process's credential caches when something is revoked (server/auth/revocations.ts). */
  revocations: RevocationBus;
  webhooks: WebhookRuntime;
  /** Signs and verifies Kontor's identity assertions. */
  agentKeys: SigningKeys;
  storage: Storage;
  ai: AiServices;
  metrics: ServerMetrics;
}

export function createApp(
  config: Config,
  { db, redis, redisNamespace, revocations, webhooks, agentKeys, storage, ai, metrics }: Services,
): App {
  const apiKeys = new ApiKeyResolver(db.prisma, revocations);
  const agentTokens = new AgentTokenResolver(db.prisma, revocations);
  const idempotency = redis
    ? new RedisIdempotencyStore(redis, redisNamespace, IDEMPOTENCY_TTL_MS)
    : new MemoryIdempotencyStore();
  const dataQuota = new DataQuota(db.prisma, idempotency, config.dataQuotaCapBytes);
  const openApiExtensions = [storageOpenApi, aiOpenApi];
  const contextFor = (state: RequestState): Context => {
    if (!state.credential) throw new Error("GraphQL context built without a credential.");
    return {
      db: db.prisma,
      credential: state.credential,
      requestId: state.id,
      hostUrl: config.publicUrl,
      // Inside a request a write has not committed yet: the request's end wakes the worker (useWebhookWake).
      webhooks: {
        ...webhooks.services,
        wake: () => {
          state.wakeWebhooks = true;
        },
      },
      storage,
      dataQuota,
      revocations,
      responseBudgetBytes: config.responseBudgetBytes,
      ...(state.client && { client: state.client }),
    };
  };
  return createYoga<ServerContext, Context>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    landingPage: false,
    // Yoga's CORS reflects any Origin with credentials: useCors (below) is the policy instead.
    cors: false,
    // Yoga's own health check answers any URL ending in its path (`/v1/leads/health` too): the
    // exact `/health` is served by useWellKnown, and this path, with a space no URL holds, never matches.
    healthCheckEndpoint: " ",
    graphiql: {
      title: "Kontor GraphQL",
      defaultQuery: GRAPHIQL_QUERY,
    },
    renderGraphiQL: renderLocalGraphiQL,
    maskedErrors: { maskError: maskErrorForYoga },
    logging: false,
    // useRequestBody (below) already buffers every body up to its route's limit and answers 413 beyond it;
    // Yoga's own limit piped each /graphql body through another stream (~2 % of a POST's CPU).
    maxRequestBodySize: false,
    context: (initial) => contextFor(stateOf(initial)),
    plugins: guarded([
      metrics.observe(),
      useRequestId(),
      useRequestClient(config),
      useCors(),
      // docs/api/limits.md#traffic-policies: before anything that costs (a credential lookup, a body read), the
      // client address is counted and the declared body length held against the route's limit.
      ...(config.policies ? [useAddressLimit(config, redis, redisNamespace)] : []),
      useBodyLimit(isRawUpload),
      useWellKnown(config),
      useGraphQLTransport(),
      useGraphQLParams(),
      useGraphiQLAssets(),
      useApiReference(config),
      useDashboardStatic(),
      useMcpGuard(config),
      useAuthentication(
        config,
        [(token) => apiKeys.resolve(token), (token) => agentTokens.resolve(token)],
        // A dashboard request whose cookie is gone (expired, cleared) still carries X-CSRF-Token:
        // it is answered as a session (401 session_expired), not told to send an API key.
        async (request, challenge) =>
          hasSessionCookie(config, request) || request.headers.has(CSRF_HEADER)
            ? sessionCredential(db.prisma, config, request, challenge)
            : null,
      ),
      // A caller past its rate limit is refused before its body is read; idempotency needs the body read.
      ...(config.policies ? [useRateLimit(config, redis, redisNamespace)] : []),
      useRequestBody(isRawUpload),
      ...(config.policies ? [useIdempotency(idempotency)] : []),
      // After the body limit and the rate limit (per client address, as for any request without a credential).
      useAgentAuth({ config, prisma: db.prisma, keys: agentKeys, redis, redisNamespace, revocations }),
      useDashboardAccounts({ config, prisma: db.prisma, redis, redisNamespace }),
      useSandboxSweep(db.prisma, revocations),
      useBytesSweep(db.prisma, storage.store),
      ...useUploadLeases(db.prisma, storage, redis, redisNamespace),
      useAuditSweep(db.prisma),
      useDataUsageFold(db.prisma),
      ...(config.policies ? [useGraphQLLimits(config.responseBudgetBytes)] : []),
      useGraphQLErrorShape(),
      useStorage(storage, contextFor),
      useAi(ai, contextFor),
      useMcp({
        schema: () => schema,
        contextFor,
        idempotency,
        resources: mcpResources(config, openApiExtensions),
      }),
      useRest(config, openApiExtensions),
      useNotFound(),
      useWebhookWake(webhooks.wake),
      // Last, so its onResponse sees the response every other plugin settled on (a 401 turned 429).
      ...(config.policies ? [useRequestLog(config, db)] : []),
      useAccessLog(config.accessLog),
    ]),
  });
}
