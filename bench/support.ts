import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { npmScript } from "../scripts/npm-script.ts";
import { processTree } from "./proc.ts";

/** Shared by the bench scripts: settings from the environment and a scratch PostgreSQL database. */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A positive number from the environment, or `fallback`. */
export function num(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number.`);
  return value;
}

/**
 * How the bench runs Kontor: production mode, one process, policies on unless `policies` is false.
 * All load comes from one loopback address: the per-address limit still runs (its cost is
 * measured) but never refuses it. Servers that share a database must share `secretKey`.
 */
export const kontorSettings = (secretKey: string, policies = true) => ({
  KONTOR_ENV: "production",
  KONTOR_SECRET_KEY: secretKey,
  KONTOR_POLICIES: policies ? "on" : "off",
  KONTOR_ADDRESS_REQUESTS_PER_MINUTE: "100000000",
  // One process (builds without the cluster mode ignore it); a cluster's run sets its own.
  KONTOR_WORKERS: "1",
});

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` on a connection to the server's maintenance database (to create and drop scratch ones). */
export async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface ServerChild {
  url: string;
  process: ChildProcess;
  stderr: string[];
  /** From the spawn to the first 2xx answer to `readyPath`, in ms (to within `pollMs`). */
  startedInMs: number;
}

export interface ChildOptions {
  /**
   * A script to run (default BENCH_SERVER_SCRIPT): TypeScript through tsx, JavaScript as is; without
   * one, Kontor's production build as `npm start` runs it (built first when stale).
   */
  script?: string;
  /** A GET that answers 2xx once the server serves (default `/v1/openapi.json`). */
  readyPath?: string;
  /** Write a CPU profile to BENCH_PROFILE_DIR when it is set (default true). */
  profile?: boolean;
  /** Write a CPU profile into this directory, whatever BENCH_PROFILE_DIR says. */
  profileDir?: string;
  /** How often `readyPath` is tried while the server starts (default 200 ms). */
  pollMs?: number;
}

/**
 * Kontor in a child process as `npm start` runs it (`dist/server/main.js`, see
 * docs/development.md#the-production-build), or a peer's script, so load generators here stay off
 * its event loop; resolves once it serves. BENCH_PROFILE_DIR: a V8 CPU profile of it goes there.
 */
export async function startServerChild(
  label: string,
  env: NodeJS.ProcessEnv,
  port: number,
  options: ChildOptions = {},
): Promise<ServerChild> {
  const profileDir =
    options.profileDir ?? (options.profile !== false ? process.env.BENCH_PROFILE_DIR : undefined);
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const script = options.script ?? process.env.BENCH_SERVER_SCRIPT;
  if (!script) buildServer();
  // Kontor as `npm start` runs it: its environment and Node's flags, the production build.
  const start = npmScript("start");
  const run = !script
    ? start.args
    : script.endsWith(".js")
      ? [...start.args.slice(0, -1), script]
      : ["--import", "tsx", script];
  const spawned = performance.now();
  const child = spawn(process.execPath, [...profile, ...run], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...(script?.endsWith(".ts") ? {} : start.env),
      KONTOR_LOG: "silent",
      ...env,
      PORT: String(port),
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  const stderr: string[] = [];
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server (${label}) exited: ${stderr.join("")}`);
    try {
      if ((await fetch(`${url}${options.readyPath ?? "/v1/openapi.json"}`)).ok)
        return { url, process: child, stderr, startedInMs: performance.now() - spawned };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server (${label}) did not start: ${stderr.join("")}`);
    }
    await sleep(options.pollMs ?? 200);
  }
}

let built = false;

/** The production build, compiled when a source changed (once per bench process). */
function buildServer() {
  if (built) return;
  execFileSync(process.execPath, ["scripts/build-server.mjs", "--quiet"], { cwd: ROOT, stdio: "inherit" });
  built = true;
}

/** A port nothing listens on now (the system's pick; a server started right after takes it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * SIGTERM (the server flushes and closes), SIGKILL if it has not exited after 15 s. Processes it
 * started (a cluster's workers) that outlive it by 5 s are sent SIGKILL too, by pid.
 */
export async function stopServerChild(child: ServerChild | undefined): Promise<void> {
  // Once it has exited (stopped before), its pid may belong to another process: leave it alone.
  if (
    !child ||
    child.process.pid === undefined ||
    child.process.exitCode !== null ||
    child.process.signalCode !== null
  )
    return;
  const below = processTree(child.process.pid).filter((pid) => pid !== child.process.pid);
  const exited = new Promise((resolve) => child.process.once("exit", resolve));
  child.process.kill("SIGTERM");
  await Promise.race([exited, sleep(15_000)]);
  if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill("SIGKILL");
  const deadline = Date.now() + 5_000;
  let left = below;
  while ((left = left.filter(alive)).length && Date.now() < deadline) await sleep(100);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
