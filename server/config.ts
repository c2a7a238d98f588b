import { resolve } from "node:path";

export type Environment = "development" | "production";

export interface Config {
  port: number;
  /** `{host_url}`: no trailing slash. `{base_url}` is `${publicUrl}/v1`. */
  publicUrl: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  dataDir: string;
  env: Environment;
  /** Rate limits, idempotency, request logs and GraphQL cost limits; off only to measure them. */
  policies: boolean;
}

export class ConfigError extends Error {}

/** decisions.md §1. Everything comes from the environment; nothing has to be set. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = env.PORT === undefined || env.PORT === "" ? 4000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be a port number, got '${env.PORT}'.`);
  const kontorEnv = env.KONTOR_ENV || "development";
  if (kontorEnv !== "development" && kontorEnv !== "production") {
    throw new ConfigError(`KONTOR_ENV must be development or production, got '${kontorEnv}'.`);
  }
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL (leave it unset for the embedded database).");
  }
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError("REDIS_URL must be a redis:// URL.");
  return {
    port,
    publicUrl: (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ""),
    databaseUrl,
    redisUrl,
    dataDir: resolve(env.DATA_DIR || "./.data"),
    env: kontorEnv,
    policies: env.KONTOR_POLICIES !== "off",
  };
}

export const baseUrl = (config: Pick<Config, "publicUrl">) => `${config.publicUrl}/v1`;
