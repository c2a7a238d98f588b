import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { npmScript } from "../../scripts/npm-script.ts";

/** The repository root: where child processes run. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** Variables of the test process that must not leak into a child pointed at a scratch database. */
const INHERITED = [
  "KONTOR_LOG",
  "KONTOR_ENV",
  "DATABASE_URL",
  "REDIS_URL",
  "DATA_DIR",
  "PORT",
  "PUBLIC_URL",
  "NODE_OPTIONS",
  "AI_UPSTREAM_URL",
  "AI_UPSTREAM_API_KEY",
  "KONTOR_SECRET_KEY",
];

/** This process's environment without anything that could point a child elsewhere, plus `env`. */
export function childEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of INHERITED) delete base[name];
  return { ...base, ...env };
}

export interface ChildServer {
  child: ChildProcess;
  url: string;
  api: string;
  stderr(): string;
  /** SIGKILL: no shutdown hook runs, as when a machine or container dies. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * How package.json's scripts run an entry point (`npm start`, `npm run kontor`): their Node flags and
 * the compiled build (dist/server/, built by the global setup as `npm start` builds it). These tests
 * start what production runs.
 *
 * @example
 * spawn(process.execPath, [...entryArgs("server/main.ts"), ...args], { env: { ...entryEnv("server/main.ts") } });
 */
export const entryArgs = (entry: Entry): string[] => npmScript(scriptOf(entry)).args;

/** The environment package.json's script sets for an entry point (see entryArgs). */
export const entryEnv = (entry: Entry): Record<string, string> => npmScript(scriptOf(entry)).env;

const scriptOf = (entry: Entry) => (entry === "server/main.ts" ? "start" : "kontor");

type Entry = "server/main.ts" | "server/cli.ts";

/**
 * An entry point as package.json's scripts run it (entryArgs), with `env` over childEnv, in its own
 * process group (so a failed test can kill a cluster's workers with it), its stdout and stderr kept.
 */
export function spawnEntry(entry: Entry, env: NodeJS.ProcessEnv, args: string[] = []) {
  const child = spawn(process.execPath, [...entryArgs(entry), ...args], {
    cwd: ROOT,
    env: childEnv({ ...entryEnv(entry), ...env }),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<Exit>((resolve) =>
    child.once("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** `server/main.ts` as `npm start` runs it (see spawnEntry). */
export const spawnMain = (env: NodeJS.ProcessEnv) => spawnEntry("server/main.ts", env);

/** `server/main.ts` in its own process, as `npm start` runs it; resolves once it answers. */
export async function startChildServer(env: NodeJS.ProcessEnv): Promise<ChildServer> {
  const port = await freePort();
  const child = spawn(process.execPath, entryArgs("server/main.ts"), {
    cwd: ROOT,
    env: childEnv({ ...entryEnv("server/main.ts"), KONTOR_LOG: "silent", ...env, PORT: String(port) }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server not ready in 60 s: ${stderr}`);
    }
    try {
      const res = await fetch(`${url}/v1/.well-known/oauth-protected-resource`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    url,
    api: `${url}/v1`,
    stderr: () => stderr,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
