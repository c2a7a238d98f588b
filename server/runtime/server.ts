import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Redis } from "ioredis";
import { agentKeyBox, SigningKeys } from "../agents/keys.ts";
import { GeneralBudget } from "../ai/budget.ts";
import { ModelCatalog } from "../ai/catalog.ts";
import { CodingMeter } from "../ai/metering.ts";
import { HttpUpstream } from "../ai/upstream.ts";
import { createApp } from "../app.ts";
import { RevocationBus } from "../auth/revocations.ts";
import { openControlSocket } from "../control/socket-server.ts";
import { type Database, openDatabase } from "../db/open.ts";
import { answerClientError, answerConnect } from "../http/client-error.ts";
import { newRequestState } from "../http/request-state.ts";
import { answerRequestTarget } from "../http/request-target.ts";
import { ServerMetrics } from "../observability/metrics.ts";
import { checkIntervalMs, EarlyLimitsGuard } from "../policies/early-limits.ts";
import { openByteStore } from "../storage/open-store.ts";
import { Storage } from "../storage/services.ts";
import { startWebhooks, type WebhookRuntimeOptions } from "../webhooks/runtime.ts";
import { SecretBox, serverSecret } from "../webhooks/secrets.ts";
import type { Config } from "./config.ts";
import { type DrainResult, RequestTracker } from "./drain.ts";
import { openRedis, redisNamespace } from "./redis.ts";

export interface StartOptions {
  publicUrlFromPort?: boolean;
  webhooks?: WebhookRuntimeOptions;
}

export interface RunningServer {
  url: string;
  db: Database;
  redis: Redis | undefined;
  /** This process's revocation bus (server/auth/revocations.ts). */
  revocations: RevocationBus;
  server: Server;
  /** Requests arrived and not yet answered in full. */
  inFlight(): number;
  /**
   * Answers one request in-process, without TCP: the app's `fetch` with a new request state, as
   * the `request` listener runs it for a request from a socket. For tests and tools (plugin-level
   * tests, scripts), never for serving traffic. It skips what only a socket has: the early limits
   * (per-address connection cap, idle bodies; server/policies/early-limits.ts), the request-target
   * and Host checks (server/http/request-target.ts), the /metrics scrape (answered by the API's
   * 404 here), Node's parser and its client errors (server/http/client-error.ts), and the
   * in-flight count `inFlight()` and `drain()` wait for. With no socket there is no client address:
   * per-address limits and logs see it as unknown. `request.url` must be absolute; use `url` as its origin.
   *
   * @example
   * const res = await running.fetch(new Request(`${running.url}/v1/workspace`, { headers: { authorization: `Bearer ${key}` } }));
   */
  fetch(request: Request): Promise<Response>;
  /**
   * The graceful part of a shutdown (server/runtime/drain.ts): stops accepting connections and lets the
   * requests in flight finish, each answered with `Connection: close`, for at most `timeoutMs`;
   * then closes every connection left. `close()` does the rest.
   */
  drain(timeoutMs: number): Promise<DrainResult>;
  /** Closes the connections still open (at once, unless drained before), then the webhook runtime, Redis and the database. */
  close(): Promise<void>;
}

/**
 * Opens the database (migrating it) and listens. With `port` 0 a free port is chosen, and an
 * unset PUBLIC_URL follows it.
 */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  // Fails before anything opens when production has no KONTOR_SECRET_KEY.
  const secrets = new SecretBox(serverSecret(config));
  const catalog = ModelCatalog.load(config.ai.modelsFile);
  const db = await openDatabase(config);
  let redis: Redis | undefined;
  const agentKeys = new SigningKeys(db.prisma, agentKeyBox(config));
  try {
    // The first start makes the signing key, so the JWKS is complete before any agent asks.
    await agentKeys.jwks();
    redis = await openRedis(config.redisUrl);
  } catch (error) {
    await db.close();
    throw error;
  }
  // A request without Host is answered by answerRequestTarget, in the API's error shape, not Node's bare 400.
  // docs/api/limits.md#traffic-policies: headers take at most 15 s (408, server/http/client-error.ts), looked at every second;
  // an hour in all, as Node's default (5 min) would cut a big raw upload short. Idle bodies: server/policies/early-limits.ts.
  const server = createServer({
    requireHostHeader: false,
    headersTimeout: config.early.headersTimeoutMs,
    requestTimeout: Math.max(60 * 60 * 1000, config.early.headersTimeoutMs),
    connectionsCheckingInterval: checkIntervalMs(config.early),
  });
  server.keepAliveTimeout = config.early.keepAliveTimeoutMs;
  const early = new EarlyLimitsGuard(config);
  server.on("connection", early.connection);
  // The port is known only once listening, and the app needs it; a request that arrives before the
  // app is made (a cluster's primary hands connections to a worker as soon as it listens) waits for
  // it instead of going unanswered.
  let serve: RequestListener | undefined;
  let ready!: () => void;
  const made = new Promise<void>((resolve) => (ready = resolve));
  server.on("request", (req, res) => (serve ? serve(req, res) : void made.then(() => serve?.(req, res))));
  const requests = new RequestTracker(server);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, "0.0.0.0", () => resolve());
    });
  } catch (error) {
    redis?.disconnect();
    await db.close();
    throw error;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://localhost:${port}`;
  const served = options.publicUrlFromPort ? { ...config, port, publicUrl: url } : config;
  // Thin webhook events link to {base_url}: the worker needs the URL the API is served at.
  const metrics = new ServerMetrics(config, db, redis);
  const webhooks = await startWebhooks(served, db, secrets, {
    ...options.webhooks,
    onAttempt: metrics.webhookAttempt,
  });
  const storage = new Storage(await openByteStore(config.storage, config.dataDir), config.storage);
  // The database's own identity names the Redis keys, however DATABASE_URL is spelled.
  const namespace = redisNamespace(db.deploymentId);
  const revocations = await RevocationBus.open(redis, namespace, { shared: db.kind !== "embedded" });
  const ai = {
    upstream: config.ai.upstreamUrl
      ? new HttpUpstream(config.ai.upstreamUrl, config.ai.upstreamKey, config.ai.timeoutMs)
      : undefined,
    catalog,
    meter: new CodingMeter(redis, namespace),
    budget: new GeneralBudget(redis, namespace, { cap: config.ai.tokensDailyCap }),
  };
  const app = createApp(served, {
    db,
    redis,
    redisNamespace: namespace,
    revocations,
    webhooks,
    agentKeys,
    storage,
    ai,
    metrics,
  });
  // The request line and Host are settled first (server/http/request-target.ts); GET /metrics is answered
  // next, before any API policy (limits, logs) sees it.
  // A connection over its address's cap is answered first (server/policies/early-limits.ts), and every body watched for idling.
  serve = (req, res) => {
    const state = newRequestState();
    return (
      early.admit(req, res, state) ||
      answerRequestTarget(req, res) ||
      metrics.serveScrape(req, res) ||
      app(req, res, { state })
    );
  };
  ready();
  const control = await openControlSocket(db, config.dataDir, agentKeys, revocations);
  server.on("clientError", answerClientError);
  server.on("connect", answerConnect);
  let draining: Promise<DrainResult> | undefined;
  const drain = (timeoutMs: number) =>
    (draining ??= (async () => {
      const controlClosed = control?.close();
      const result = await requests.drain(timeoutMs);
      await controlClosed;
      return result;
    })());
  return {
    url,
    db,
    redis,
    revocations,
    server,
    inFlight: () => requests.size,
    fetch: async (request) => app.fetch(request, { state: newRequestState() }),
    drain,
    close: async () => {
      // Without a drain before, every connection is closed at once (the tests' servers).
      await drain(0);
      early.stop();
      await app.dispose();
      await webhooks.close();
      await revocations.close();
      redis?.disconnect();
      await db.close();
    },
  };
}
