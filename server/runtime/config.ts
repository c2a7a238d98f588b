import { isIP } from "node:net";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import proxyaddr from "proxy-addr";
import { RESPONSE_BUDGET_BYTES } from "../../schema/lib/limits.ts";

export type Environment = "development" | "production";

export interface Config {
  port: number;
  /**
   * KONTOR_WORKERS: server processes sharing PORT (1, the default: one process and no cluster
   * primary). From 2 on, a primary forks that many workers (server/runtime/cluster.ts); they must share
   * PostgreSQL and Redis.
   */
  workers: number;
  /** `{host_url}`: no trailing slash. `{base_url}` is `${publicUrl}/v1`. */
  publicUrl: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  dataDir: string;
  env: Environment;
  /** Rate limits, idempotency, request logs and GraphQL cost limits; off only to measure them. */
  policies: boolean;
  /** KONTOR_ACCESS_LOG: one info line per request on stderr (`on`, the default, or `off`). */
  accessLog: boolean;
  /** Anonymous agent registrations (each makes a sandbox workspace) per client address and hour; 0 turns them off. */
  anonymousAgentsPerHour: number;
  /** KONTOR_MAX_SANDBOXES: live sandbox workspaces (anonymous agents') the deployment keeps at once; past it anonymous registration gets 429. */
  maxSandboxes: number;
  /** KONTOR_DATA_QUOTA_CAP_BYTES: caps every plan's data quota (a small database, or a test); unset, the plans' quotas apply. */
  dataQuotaCapBytes: number | undefined;
  /** KONTOR_RESPONSE_BUDGET_BYTES: lowers the response budget (docs/api/limits.md) so tests of cut pages need little data; refused in production. */
  responseBudgetBytes: number;
  /** KONTOR_SERVICE_AUTH_AGENTS: whether agents may register for a user by e-mail (`on`, the default, or `off`). */
  serviceAuthAgents: boolean;
  /** A database transaction (and, on PostgreSQL, a statement) running longer is cancelled and rolled back. */
  transactionTimeoutMs: number;
  /**
   * KONTOR_SHUTDOWN_TIMEOUT_MS: on SIGTERM or SIGINT, how long the requests in flight may take to
   * finish before the remaining connections are closed (server/runtime/drain.ts).
   */
  shutdownTimeoutMs: number;
  /** KONTOR_SECRET_KEY: encrypts webhook signing secrets (generated into DATA_DIR in development). */
  secretKey: string | undefined;
  /** KONTOR_METRICS_TOKEN: GET /metrics then needs it as a Bearer token; unset, only loopback clients may scrape. */
  metricsToken: string | undefined;
  /**
   * KONTOR_TRUST_PROXY: the proxies (`loopback`, addresses, CIDR ranges, in proxy-addr's notation)
   * whose X-Forwarded-For names the client (server/http/client-address.ts). Empty, the default: the
   * header is ignored and the client is the socket's peer.
   */
  trustProxy: string[];
  /**
   * KONTOR_MCP_ALLOWED_ORIGINS: origins besides the deployment's own whose pages may call `/mcp`
   * (comma-separated, `https://app.example.com`); a request from any other Origin gets 403.
   */
  mcpAllowedOrigins: string[];
  /** docs/api/limits.md#traffic-policies: what a request meets before anything else (server/policies/early-limits.ts). */
  early: EarlyLimits;
  webhooks: WebhookConfig;
  storage: StorageConfig;
  ai: AiConfig;
}

export interface EarlyLimits {
  /** KONTOR_ADDRESS_REQUESTS_PER_MINUTE: requests of one client address a minute, keyed or not (429 past it). */
  addressRequestsPerMinute: number;
  /** KONTOR_CONNECTIONS_PER_ADDRESS: connections one client address holds open at once, per process. */
  connectionsPerAddress: number;
  /** KONTOR_HEADERS_TIMEOUT_MS: the longest a request's line and headers may take (408). Tests only: refused in production. */
  headersTimeoutMs: number;
  /** KONTOR_BODY_IDLE_TIMEOUT_MS: the longest a body may send nothing (408). Tests only: refused in production. */
  bodyIdleTimeoutMs: number;
  /**
   * KONTOR_KEEP_ALIVE_TIMEOUT_MS: how long an idle keep-alive connection stays open (5 s). A load
   * balancer in front must close idle connections sooner (docs/operations/deploy.md#load-balancer).
   */
  keepAliveTimeoutMs: number;
}

export interface AiConfig {
  /** AI_UPSTREAM_URL: an OpenAI-compatible API (`…/v1`); unset, the AI routes answer 503 ai_unavailable. */
  upstreamUrl: string | undefined;
  upstreamKey: string | undefined;
  /** AI_UPSTREAM_TIMEOUT_MS: how long the provider may take to start answering. */
  timeoutMs: number;
  /** AI_MODELS_FILE: a JSON catalog of models by plan, instead of the built-in one. */
  modelsFile: string | undefined;
  /** KONTOR_AI_TOKENS_DAILY_CAP: lowers every plan's general AI daily token budget to it (tests; refused in production). */
  tokensDailyCap: number | undefined;
}

export interface StorageConfig {
  /** STORAGE_S3_BUCKET and friends; without it, bytes live on the local disk under `${dataDir}/objects`. */
  s3: S3Settings | undefined;
  /** KONTOR_STORAGE_QUOTA_CAP_BYTES: caps every plan's quota (a small disk, or a test); unset, the plans' quotas apply. */
  quotaCapBytes: number | undefined;
  /**
   * KONTOR_UPLOAD_LEASE_MS: how long an upload's reservation and slot outlive a process that stopped
   * renewing them (it crashed); renewed every third of it, swept every lease (docs/api/storage.md).
   */
  uploadLeaseMs: number;
}

export interface S3Settings {
  bucket: string;
  endpoint: string | undefined;
  forcePathStyle: boolean;
  /** AWS_REGION; unset, the SDK's default chain decides. */
  region: string | undefined;
  /** AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; unset, the SDK's default chain (profiles, roles) decides. */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string } | undefined;
}

export interface WebhookConfig {
  /** An attempt succeeds on a 2xx within this time. */
  timeoutMs: number;
  /** The wait before each retry: its length + 1 is the number of attempts. */
  retryScheduleMs: number[];
  /** Each wait is spread by ± this fraction, so failing endpoints are not retried in lockstep. */
  jitter: number;
}

/** docs/api/webhooks.md: about 1 m, 5 m, 30 m, 2 h, 5 h, 10 h, then every 12 h — about 3 days in all. */
export const DEFAULT_RETRY_SCHEDULE = "1m,5m,30m,2h,5h,10h,12h,12h,12h,12h,12h";

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `"1m,5m,2h"` → milliseconds. */
export function parseDurations(name: string, value: string): number[] {
  return value.split(",").map((part) => {
    const match = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h|d)\s*$/.exec(part);
    if (!match)
      throw new ConfigError(
        `${name} must be a comma-separated list of durations like 30s,5m,2h; got '${part}'.`,
      );
    return Math.round(Number(match[1]) * UNITS[match[2]!]!);
  });
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new ConfigError(`${name} must be a positive number, got '${raw}'.`);
  return value;
}

function wholeNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0)
    throw new ConfigError(`${name} must be a whole number of at least 0, got '${raw}'.`);
  return value;
}

/** A whole number of bytes, or undefined when unset. */
function optionalBytes(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!(Number.isSafeInteger(value) && value >= 0))
    throw new ConfigError(`${name} must be a whole number of bytes, got '${raw}'.`);
  return value;
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw !== "on" && raw !== "off") throw new ConfigError(`${name} must be on or off; got '${raw}'.`);
  return raw === "on";
}

export class ConfigError extends Error {}

/** Workers one primary may fork: far more than the cores of any machine this runs on. */
export const MAX_WORKERS = 64;

/**
 * KONTOR_WORKERS: a whole number from 1 to MAX_WORKERS, or `auto` (one per core the process may
 * use). Several workers must share what one process would keep to itself: the database (the
 * embedded one belongs to one process) and the stores of limits, idempotency keys and the
 * webhook queue (in-process without Redis, so each worker would have its own).
 */
function workerCount(
  env: NodeJS.ProcessEnv,
  databaseUrl: string | undefined,
  redisUrl: string | undefined,
): number {
  const raw = env.KONTOR_WORKERS?.trim();
  let workers = 1;
  if (raw === "auto") workers = Math.min(MAX_WORKERS, availableParallelism());
  else if (raw !== undefined && raw !== "") {
    workers = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(workers >= 1 && workers <= MAX_WORKERS)) {
      throw new ConfigError(
        `KONTOR_WORKERS must be a whole number from 1 to ${MAX_WORKERS}, or auto; got '${env.KONTOR_WORKERS}'.`,
      );
    }
  }
  if (workers === 1) return 1;
  const asked = raw === "auto" ? `KONTOR_WORKERS=auto (${workers} workers)` : `KONTOR_WORKERS=${workers}`;
  if (!databaseUrl) {
    throw new ConfigError(
      `${asked} needs DATABASE_URL: the embedded database belongs to one process, so the workers must share a PostgreSQL server. Set DATABASE_URL, or KONTOR_WORKERS=1.`,
    );
  }
  if (!redisUrl) {
    throw new ConfigError(
      `${asked} needs REDIS_URL: rate limits, idempotency keys and the webhook queue must be shared by the workers, and without Redis each worker would keep its own. Set REDIS_URL, or KONTOR_WORKERS=1.`,
    );
  }
  return workers;
}

const TRUST_PROXY_FORMS =
  "off, loopback, or a comma-separated list of the proxies' IP addresses and CIDR ranges (e.g. loopback,10.0.0.0/8,2001:db8::7)";

/**
 * KONTOR_TRUST_PROXY: `off` (the default), or a list of `loopback`, IP addresses and CIDR ranges.
 * A hop count is refused: it trusts whatever stands that many places from the right, so one proxy
 * more or less in front of the server lets clients choose their own address. So is a range that
 * holds every address (`/0`, `*`): any client could then name itself.
 */
export function parseTrustProxy(raw: string | undefined): string[] {
  const value = raw?.trim() ?? "";
  if (value === "" || value === "off") return [];
  const refuse = (why: string) => new ConfigError(`KONTOR_TRUST_PROXY ${why}; use ${TRUST_PROXY_FORMS}.`);
  const list = value.split(",").map((item) => {
    const entry = item.trim();
    if (entry === "") throw refuse(`has an empty entry in '${value}'`);
    if (entry === "loopback") return entry;
    if (entry === "off") throw refuse(`cannot combine off with addresses ('${value}')`);
    if (/^\d+$/.test(entry))
      throw refuse(
        `does not take a hop count ('${entry}'): name the proxies instead, so a client cannot add hops of its own`,
      );
    if (["*", "all", "on", "true", "any"].includes(entry.toLowerCase()))
      throw refuse(`cannot trust every address ('${entry}'): any client could then choose its own address`);
    const slash = entry.indexOf("/");
    const address = slash === -1 ? entry : entry.slice(0, slash);
    const family = isIP(address);
    if (family === 0 || address.includes("%"))
      throw refuse(`entry '${entry}' is neither loopback, an IP address nor a CIDR range`);
    if (slash !== -1) {
      const bits = entry.slice(slash + 1);
      const max = family === 4 ? 32 : 128;
      if (!/^\d{1,3}$/.test(bits) || Number(bits) > max)
        throw refuse(`entry '${entry}' has a bad prefix length (1 to ${max})`);
      if (Number(bits) === 0)
        throw refuse(`entry '${entry}' holds every address: any client could then choose its own address`);
    }
    return entry;
  });
  try {
    proxyaddr.compile(list);
  } catch (error) {
    throw refuse(`is not understood (${(error as Error).message})`);
  }
  return list;
}

/** docs/api/limits.md#traffic-policies: 6 000 requests a minute per address (five times the max plan's), 128 connections, 15 s, 30 s, 5 s. */
function earlyLimits(env: NodeJS.ProcessEnv): EarlyLimits {
  for (const name of ["KONTOR_HEADERS_TIMEOUT_MS", "KONTOR_BODY_IDLE_TIMEOUT_MS"]) {
    if (env[name] && env.KONTOR_ENV === "production")
      throw new ConfigError(`${name} is for tests only and is refused in production.`);
  }
  const whole = (name: string, fallback: number) => {
    const value = positive(env, name, fallback);
    if (!Number.isSafeInteger(value))
      throw new ConfigError(`${name} must be a whole number, got '${env[name]}'.`);
    return value;
  };
  return {
    addressRequestsPerMinute: whole("KONTOR_ADDRESS_REQUESTS_PER_MINUTE", 6_000),
    connectionsPerAddress: whole("KONTOR_CONNECTIONS_PER_ADDRESS", 128),
    headersTimeoutMs: whole("KONTOR_HEADERS_TIMEOUT_MS", 15_000),
    bodyIdleTimeoutMs: whole("KONTOR_BODY_IDLE_TIMEOUT_MS", 30_000),
    keepAliveTimeoutMs: whole("KONTOR_KEEP_ALIVE_TIMEOUT_MS", 5_000),
  };
}

function aiConfig(env: NodeJS.ProcessEnv): AiConfig {
  const upstreamUrl = env.AI_UPSTREAM_URL?.trim() || undefined;
  if (upstreamUrl && !/^https?:\/\//.test(upstreamUrl))
    throw new ConfigError(`AI_UPSTREAM_URL must be an http(s) URL, got '${upstreamUrl}'.`);
  if (upstreamUrl && !URL.canParse(upstreamUrl))
    throw new ConfigError(`AI_UPSTREAM_URL must be a URL, got '${upstreamUrl}'.`);
  return {
    upstreamUrl,
    upstreamKey: env.AI_UPSTREAM_API_KEY || undefined,
    timeoutMs: positive(env, "AI_UPSTREAM_TIMEOUT_MS", 60_000),
    modelsFile: env.AI_MODELS_FILE?.trim() || undefined,
    tokensDailyCap: aiTokensDailyCap(env),
  };
}

/** KONTOR_AI_TOKENS_DAILY_CAP exists for tests of the budget's edge (docs/api/ai.md): a deployment has the plans' budgets. */
function aiTokensDailyCap(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.KONTOR_AI_TOKENS_DAILY_CAP;
  if (raw === undefined || raw === "") return undefined;
  if (env.KONTOR_ENV === "production")
    throw new ConfigError("KONTOR_AI_TOKENS_DAILY_CAP is for tests only and is refused in production.");
  const cap = Number(raw);
  if (!Number.isSafeInteger(cap) || cap < 1)
    throw new ConfigError(
      `KONTOR_AI_TOKENS_DAILY_CAP must be a whole number of tokens of at least 1, got '${raw}'.`,
    );
  return cap;
}

/** The smallest response budget a test may set: room for the envelope, its reserve and a few items. */
export const MIN_RESPONSE_BUDGET_BYTES = 64 * 1024;

/** KONTOR_RESPONSE_BUDGET_BYTES exists for tests of pages the budget cuts: a deployment answers within RESPONSE_BUDGET_BYTES. */
function responseBudget(env: NodeJS.ProcessEnv): number {
  const raw = env.KONTOR_RESPONSE_BUDGET_BYTES;
  if (raw === undefined || raw === "") return RESPONSE_BUDGET_BYTES;
  if (env.KONTOR_ENV === "production")
    throw new ConfigError("KONTOR_RESPONSE_BUDGET_BYTES is for tests only and is refused in production.");
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < MIN_RESPONSE_BUDGET_BYTES || value > RESPONSE_BUDGET_BYTES) {
    throw new ConfigError(
      `KONTOR_RESPONSE_BUDGET_BYTES must be a whole number of bytes from ${MIN_RESPONSE_BUDGET_BYTES} to ${RESPONSE_BUDGET_BYTES}, got '${raw}'.`,
    );
  }
  return value;
}

function storageConfig(env: NodeJS.ProcessEnv): StorageConfig {
  const capRaw = env.KONTOR_STORAGE_QUOTA_CAP_BYTES;
  const quotaCapBytes = capRaw === undefined || capRaw === "" ? undefined : Number(capRaw);
  if (quotaCapBytes !== undefined && !(Number.isSafeInteger(quotaCapBytes) && quotaCapBytes >= 0)) {
    throw new ConfigError(`KONTOR_STORAGE_QUOTA_CAP_BYTES must be a whole number of bytes, got '${capRaw}'.`);
  }
  const uploadLeaseMs = positive(env, "KONTOR_UPLOAD_LEASE_MS", 120_000);
  // Shorter leases exist for the tests of a crash; a real server could lose a slow upload's reservation to a late renewal.
  if (env.KONTOR_ENV === "production" && uploadLeaseMs < 10_000)
    throw new ConfigError(
      `KONTOR_UPLOAD_LEASE_MS must be at least 10000 in production, got '${env.KONTOR_UPLOAD_LEASE_MS}'.`,
    );
  const bucket = env.STORAGE_S3_BUCKET?.trim();
  if (!bucket) return { s3: undefined, quotaCapBytes, uploadLeaseMs };
  const pathStyle = env.STORAGE_S3_FORCE_PATH_STYLE?.trim() || "false";
  if (pathStyle !== "true" && pathStyle !== "false")
    throw new ConfigError(`STORAGE_S3_FORCE_PATH_STYLE must be true or false, got '${pathStyle}'.`);
  const endpoint = env.STORAGE_S3_ENDPOINT?.trim() || undefined;
  if (endpoint && !URL.canParse(endpoint))
    throw new ConfigError(`STORAGE_S3_ENDPOINT must be a URL, got '${endpoint}'.`);
  const accessKeyId = env.AWS_ACCESS_KEY_ID?.trim();
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY?.trim();
  const sessionToken = env.AWS_SESSION_TOKEN?.trim() || undefined;
  return {
    s3: {
      bucket,
      endpoint,
      forcePathStyle: pathStyle === "true",
      region: env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || undefined,
      credentials:
        accessKeyId && secretAccessKey
          ? { accessKeyId, secretAccessKey, ...(sessionToken && { sessionToken }) }
          : undefined,
    },
    quotaCapBytes,
    uploadLeaseMs,
  };
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * PUBLIC_URL without a trailing slash, and whether it names this machine. KONTOR_ENV may default
 * to development only then: a server reachable under another name must say which it is.
 */
function publicUrlOf(env: NodeJS.ProcessEnv, port: number): { publicUrl: string; loopback: boolean } {
  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(publicUrl);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an http:// or https:// URL, got '${env.PUBLIC_URL}'.`);
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.pathname !== "/" ||
    url.search ||
    url.hash ||
    url.username ||
    url.password
  ) {
    throw new ConfigError(
      `PUBLIC_URL must be the http:// or https:// origin the server is reached at (no path, query or credentials), got '${env.PUBLIC_URL}'.`,
    );
  }
  return { publicUrl, loopback: LOOPBACK_HOSTS.has(url.hostname) };
}

/** Everything comes from the environment; nothing has to be set on a developer's machine. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT === undefined || env.PORT === "" ? 4000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ConfigError(`PORT must be a port number, got '${env.PORT}'.`);
  const { publicUrl, loopback } = publicUrlOf(env, port);
  if (!env.KONTOR_ENV && !loopback) {
    throw new ConfigError(
      `PUBLIC_URL ${publicUrl} is not a loopback address, so KONTOR_ENV must be set: production for a real deployment ` +
        "(development turns on demo seeding and plain-http webhook targets, so it is never chosen for you).",
    );
  }
  const kontorEnv = env.KONTOR_ENV || "development";
  if (kontorEnv !== "development" && kontorEnv !== "production") {
    throw new ConfigError(`KONTOR_ENV must be development or production, got '${kontorEnv}'.`);
  }
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError(
      "DATABASE_URL must be a postgres:// URL (leave it unset for the embedded database).",
    );
  }
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError("REDIS_URL must be a redis:// URL.");
  const secretKey = env.KONTOR_SECRET_KEY || undefined;
  if (secretKey && secretKey.length < 32)
    throw new ConfigError("KONTOR_SECRET_KEY must be at least 32 characters.");
  const metricsToken = env.KONTOR_METRICS_TOKEN || undefined;
  if (metricsToken && (metricsToken.length < 32 || /\s/.test(metricsToken)))
    throw new ConfigError("KONTOR_METRICS_TOKEN must be at least 32 characters, without spaces.");
  const jitter = env.KONTOR_WEBHOOK_JITTER ? Number(env.KONTOR_WEBHOOK_JITTER) : 0.1;
  if (!(jitter >= 0 && jitter < 1))
    throw new ConfigError(
      `KONTOR_WEBHOOK_JITTER must be a fraction from 0 to below 1, got '${env.KONTOR_WEBHOOK_JITTER}'.`,
    );
  const workers = workerCount(env, databaseUrl, redisUrl);
  return {
    port,
    workers,
    publicUrl,
    databaseUrl,
    redisUrl,
    dataDir: resolve(env.DATA_DIR || "./.data"),
    env: kontorEnv,
    policies: env.KONTOR_POLICIES !== "off",
    accessLog: onOff(env, "KONTOR_ACCESS_LOG", true),
    anonymousAgentsPerHour: wholeNumber(env, "KONTOR_ANONYMOUS_AGENTS_PER_HOUR", 10),
    maxSandboxes: wholeNumber(env, "KONTOR_MAX_SANDBOXES", 1_000),
    dataQuotaCapBytes: optionalBytes(env, "KONTOR_DATA_QUOTA_CAP_BYTES"),
    responseBudgetBytes: responseBudget(env),
    serviceAuthAgents: onOff(env, "KONTOR_SERVICE_AUTH_AGENTS", true),
    transactionTimeoutMs: positive(env, "KONTOR_TRANSACTION_TIMEOUT_MS", 15_000),
    shutdownTimeoutMs: positive(env, "KONTOR_SHUTDOWN_TIMEOUT_MS", 10_000),
    secretKey,
    metricsToken,
    trustProxy: parseTrustProxy(env.KONTOR_TRUST_PROXY),
    mcpAllowedOrigins: parseOrigins("KONTOR_MCP_ALLOWED_ORIGINS", env.KONTOR_MCP_ALLOWED_ORIGINS),
    early: earlyLimits(env),
    webhooks: {
      timeoutMs: positive(env, "KONTOR_WEBHOOK_TIMEOUT_MS", 10_000),
      retryScheduleMs: parseDurations(
        "KONTOR_WEBHOOK_RETRY_SCHEDULE",
        env.KONTOR_WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE,
      ),
      jitter,
    },
    storage: storageConfig(env),
    ai: aiConfig(env),
  };
}

/** A comma-separated list of origins (`scheme://host[:port]`, nothing after it), each as URL serialises it. */
function parseOrigins(name: string, raw: string | undefined): string[] {
  const origins: string[] = [];
  for (const item of (raw ?? "").split(",").map((part) => part.trim())) {
    if (!item) continue;
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {}
    const bare = url && url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
    if (!url || !bare || !/^https?:$/.test(url.protocol))
      throw new ConfigError(
        `${name} takes origins such as https://app.example.com (no path), got '${item}'.`,
      );
    origins.push(url.origin);
  }
  return origins;
}

export const baseUrl = (config: Pick<Config, "publicUrl">) => `${config.publicUrl}/v1`;
