/**
 * Helpers shared by the operations suites:
 *   - the CLI and start-up harness (cli.test.ts, cli-live-server.test.ts, start-up.test.ts): CLI
 *     commands run through `runCli` in this process or as processes of their own, and servers
 *     started as real child processes;
 *   - a parser of the Prometheus text format and scrapes of /metrics (metrics.test.ts,
 *     metrics-deployment.test.ts).
 */
import type { ChildProcess } from "node:child_process";
import { expect } from "vitest";
import { type CliIO, runCli } from "../../../server/control/run.ts";
import { type Database, openDatabase } from "../../../server/db/open.ts";
import { childEnv, freePort, spawnEntry } from "../../support/child-server.ts";
import { eventually } from "../../support/receiver.ts";
import type { provisionStack } from "../../support/server.ts";

// ---------------------------------------------------------------------------------------------
// The CLI and start-up harness.

export const STACK_TRACE = /^\s+at .+[(:]/m;
export const KEY = /ktr_live_[0-9A-Za-z]{43}/;

export type Scratch = Awaited<ReturnType<typeof provisionStack>>;

/** Every child runs in its own process group (so a stuck child and anything it started die together): kill the group. */
const children = new Set<ChildProcess>();
export function killGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL") {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
/** Servers a whole describe shares: killed by its afterAll, not after each test. */
export const kept = new Set<ChildProcess>();
export function killAll(includingKept = true) {
  for (const child of children) {
    if (!includingKept && kept.has(child)) continue;
    killGroup(child);
    children.delete(child);
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command the way `npm run kontor` does, in this process: `runCli` with the child's
 * environment, its lines collected as the process would print them. A hang fails the test.
 */
export async function cli(
  scratch: Pick<Scratch, "env">,
  args: string[],
  timeoutMs = 45_000,
): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  // the scratch database only, nothing inherited that could point elsewhere: a child's environment
  const io: CliIO = {
    env: childEnv(scratch.env),
    out: (line) => (stdout += `${line}\n`),
    err: (line) => (stderr += `${line}\n`),
  };
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `kontor ${args.join(" ")} did not finish in ${timeoutMs} ms (hang).\nstdout: ${stdout}\nstderr: ${stderr}`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    const code = await Promise.race([runCli(args, io), hang]);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** An entry point in a process of its own (spawnEntry), tracked so that a failed test's leftovers die. */
export function spawnChild(
  entry: "server/main.ts" | "server/cli.ts",
  scratch: Pick<Scratch, "env">,
  extra: NodeJS.ProcessEnv = {},
  args: string[] = [],
) {
  const spawned = spawnEntry(entry, { ...scratch.env, ...extra }, args);
  children.add(spawned.child);
  const exited = spawned.exited.then(({ code }) => {
    children.delete(spawned.child);
    return code;
  });
  return { ...spawned, exited };
}

/**
 * Runs `node --import tsx server/cli.ts …args` (package.json's `kontor` script) as its own process, for
 * what only a process shows: its exit status and its streams. Killed after `timeoutMs`.
 */
export async function cliProcess(
  scratch: Pick<Scratch, "env">,
  args: string[],
  timeoutMs = 45_000,
): Promise<CliResult> {
  const run = spawnChild("server/cli.ts", scratch, {}, args);
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      killGroup(run.child);
      reject(
        new Error(
          `kontor ${args.join(" ")} did not finish in ${timeoutMs} ms (hang).\nstdout: ${run.stdout()}\nstderr: ${run.stderr()}`,
        ),
      );
    }, timeoutMs);
  });
  try {
    const code = await Promise.race([run.exited, hang]);
    return { code, stdout: run.stdout(), stderr: run.stderr() };
  } finally {
    clearTimeout(timer);
  }
}

/** `--json` output: exactly one line holding one JSON object. */
export function oneJson(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toHaveLength(1);
  const parsed = JSON.parse(lines[0]!);
  expect(parsed).toBeTypeOf("object");
  expect(Array.isArray(parsed)).toBe(false);
  return parsed;
}

/**
 * A failed command: exit 1 with one line on stderr (a failure it explains), or exit 2 with the
 * message and the usage (bad arguments); no stack trace, nothing on stdout that looks like success.
 */
export function expectFailure(result: CliResult, message: RegExp, exit: 1 | 2) {
  const detail = `exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`;
  expect(result.code, detail).toBe(exit);
  expect(result.stderr, detail).toMatch(message);
  expect(result.stderr, detail).toMatch(/^kontor: /);
  expect(result.stderr, detail).not.toMatch(STACK_TRACE);
  if (exit === 1) expect(result.stderr.trimEnd().split("\n"), detail).toHaveLength(1);
  else expect(result.stderr, detail).toContain("Usage: npm run --silent kontor");
  const lines = result.stdout.split("\n").filter((l) => l.trim() !== "");
  expect(lines.length, detail).toBeLessThanOrEqual(1);
  if (lines.length === 1) {
    const parsed = JSON.parse(lines[0]!);
    expect(Object.keys(parsed), detail).toEqual(["error"]);
    expect(parsed.error).toBeTypeOf("string");
  }
}

export interface Server {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:PORT` */
  url: string;
  api: string;
  stdout(): string;
  stderr(): string;
  /** SIGTERM, then the exit status (the whole stdout is complete afterwards). */
  stop(): Promise<number | null>;
}

/** Starts `tsx server/main.ts` and waits until the public discovery document answers. */
export async function startServer(scratch: Scratch, extra: NodeJS.ProcessEnv = {}): Promise<Server> {
  const port = await freePort();
  const { child, exited, stdout, stderr } = spawnChild("server/main.ts", scratch, {
    PORT: String(port),
    ...extra,
  });
  let done = false;
  void exited.then(() => (done = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (done)
      throw new Error(
        `server exited with ${child.exitCode ?? child.signalCode} before it was ready.\nstdout: ${stdout()}\nstderr: ${stderr()}`,
      );
    if (Date.now() > deadline) {
      killGroup(child);
      throw new Error(`server not ready in 60 s.\nstdout: ${stdout()}\nstderr: ${stderr()}`);
    }
    try {
      const res = await fetch(`${url}/v1/.well-known/oauth-protected-resource`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await sleep(150);
  }
  // main.ts prints its banner once listening; give it the moment it needs.
  await waitFor(
    () => stdout().includes("GraphQL:"),
    15_000,
    () => `no banner on stdout: ${stdout()}\nstderr: ${stderr()}`,
  );
  return {
    child,
    port,
    url,
    api: `${url}/v1`,
    stdout,
    stderr,
    stop: async () => {
      // as a supervisor does (docker stop, kill PID): the signal goes to the process it started
      child.kill("SIGTERM");
      const timer = setTimeout(() => killGroup(child), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  describe: () => string,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out: ${describe()}`);
    await sleep(100);
  }
}

/** Reads the database directly (taking the embedded lock like any other process: no server may run). */
export async function inspect<T>(scratch: Scratch, read: (db: Database["prisma"]) => Promise<T>): Promise<T> {
  const db = await openDatabase({ databaseUrl: scratch.env.DATABASE_URL, dataDir: scratch.env.DATA_DIR! });
  try {
    return await read(db.prisma);
  } finally {
    await db.close();
  }
}

export const counts = (scratch: Scratch) =>
  inspect(scratch, async (db) => ({
    workspaces: await db.workspace.count(),
    users: await db.user.count(),
    memberships: await db.membership.count(),
    api_keys: await db.apiKey.count(),
  }));

// ---------------------------------------------------------------------------------------------
// /metrics: the token of the suites that set KONTOR_METRICS_TOKEN, and what a scrape reads.

export const TOKEN = "metrics-token-0123456789abcdef0123456789abcdef";

// ---------------------------------------------------------------------------------------------
// A small parser of the Prometheus text exposition format (version 0.0.4): it rejects what a
// Prometheus server would reject, so "it parses" means something.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
export interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** A float as Go's ParseFloat reads it (which is what Prometheus uses): NaN and Inf in any case (prom-client writes `Nan`). */
function parseValue(text: string, line: string): number {
  if (/^[-+]?inf(inity)?$/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
    throw new Error(`not a sample value: '${text}' in: ${line}`);
  return Number(text);
}

/** `{a="x",b="y\"z"}` starting at `at`: the labels and the index after the closing brace. */
function parseLabels(line: string, at: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = at + 1;
  for (;;) {
    if (line[i] === "}") return [labels, i + 1];
    const eq = line.indexOf("=", i);
    if (eq < 0) throw new Error(`a label without '=': ${line}`);
    const name = line.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name '${name}': ${line}`);
    if (name in labels) throw new Error(`label '${name}' twice: ${line}`);
    if (line[eq + 1] !== '"') throw new Error(`label value not quoted: ${line}`);
    let value = "";
    let j = eq + 2;
    for (; j < line.length && line[j] !== '"'; j++) {
      if (line[j] === "\\") {
        const escaped = line[++j];
        if (escaped === "n") value += "\n";
        else if (escaped === "\\" || escaped === '"') value += escaped;
        else throw new Error(`bad escape in a label value: ${line}`);
      } else value += line[j];
    }
    if (line[j] !== '"') throw new Error(`unterminated label value: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (line[i] === ",") i++;
    else if (line[i] !== "}") throw new Error(`expected ',' or '}' after a label: ${line}`);
  }
}

function familyOf(families: Map<string, Family>, sample: string): Family | undefined {
  const exact = families.get(sample);
  if (exact && exact.type !== "histogram") return exact;
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    const base = sample.endsWith(suffix) ? families.get(sample.slice(0, -suffix.length)) : undefined;
    if (base?.type === "histogram" || (base?.type === "summary" && suffix !== "_bucket")) return base;
  }
  return exact?.type === "summary" ? exact : undefined;
}

/** Every line checked; every family has HELP and TYPE before its samples; no series twice; histograms consistent. */
export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  const series = new Set<string>();
  expect(text.endsWith("\n"), "the exposition ends with a line feed").toBe(true);
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const [, keyword, name, ...rest] = line.split(" ");
      if (keyword === "HELP") {
        if (!METRIC_NAME.test(name ?? "")) throw new Error(`bad metric name in: ${line}`);
        helps.set(name!, rest.join(" "));
      } else if (keyword === "TYPE") {
        if (!METRIC_NAME.test(name ?? "") || !TYPES.has(rest[0] ?? "") || rest.length !== 1)
          throw new Error(`bad TYPE line: ${line}`);
        if (families.has(name!)) throw new Error(`TYPE twice for ${name}`);
        families.set(name!, { name: name!, type: rest[0]!, help: helps.get(name!) ?? "", samples: [] });
      }
      continue;
    }
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    const nameEnd = brace >= 0 && brace < space ? brace : space;
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`bad sample name: ${line}`);
    let labels: Record<string, string> = {};
    let rest = line.slice(nameEnd);
    if (line[nameEnd] === "{") {
      const [parsed, after] = parseLabels(line, nameEnd);
      labels = parsed;
      rest = line.slice(after);
    }
    const parts = rest.trim().split(" ");
    if (!rest.startsWith(" ") || parts.length < 1 || parts.length > 2)
      throw new Error(`bad sample line: ${line}`);
    const value = parseValue(parts[0]!, line);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp: ${line}`);
    const family = familyOf(families, name);
    if (!family) throw new Error(`sample of an undeclared family (no TYPE before it): ${line}`);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (series.has(key)) throw new Error(`series twice: ${line}`);
    series.add(key);
    family.samples.push({ name, labels, value });
  }
  for (const family of families.values()) {
    expect(family.help, `HELP of ${family.name}`).not.toBe("");
    if (family.type === "counter") {
      expect(family.name, "a counter's name ends in _total").toMatch(/_total$/);
      for (const sample of family.samples)
        expect(sample.value, `${family.name} is not negative`).toBeGreaterThanOrEqual(0);
    }
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

/** Per label set: cumulative buckets, ending in le="+Inf", equal to _count. */
function checkHistogram(family: Family): void {
  const groups = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const group = groups.get(key) ?? { buckets: [] };
    groups.set(key, group);
    if (sample.name.endsWith("_bucket")) group.buckets.push([parseValue(le!, sample.name), sample.value]);
    else if (sample.name.endsWith("_count")) group.count = sample.value;
    else group.sum = sample.value;
  }
  for (const [key, group] of groups) {
    const where = `${family.name}${key}`;
    expect(group.buckets.length, `${where}: buckets`).toBeGreaterThan(0);
    for (let i = 1; i < group.buckets.length; i++) {
      expect(group.buckets[i]![0], `${where}: le ascending`).toBeGreaterThan(group.buckets[i - 1]![0]);
      expect(group.buckets[i]![1], `${where}: cumulative`).toBeGreaterThanOrEqual(group.buckets[i - 1]![1]);
    }
    expect(group.buckets.at(-1)![0], `${where}: ends at +Inf`).toBe(Infinity);
    expect(group.buckets.at(-1)![1], `${where}: +Inf bucket = _count`).toBe(group.count);
    expect(group.sum, `${where}: _sum`).toBeTypeOf("number");
  }
}

/** The value of one series (labels matched exactly), or undefined. */
export function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const family = familyOf(families, name);
  const want = JSON.stringify(Object.entries(labels).sort());
  return family?.samples.find(
    (s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === want,
  )?.value;
}

export const sumOf = (families: Map<string, Family>, name: string) =>
  (families.get(name)?.samples ?? []).filter((s) => s.name === name).reduce((total, s) => total + s.value, 0);

// ---------------------------------------------------------------------------------------------

export async function scrape(
  url: string,
  headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` },
  method = "GET",
) {
  const res = await fetch(`${url}/metrics`, { method, headers });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

export async function metricsOf(url: string): Promise<Map<string, Family>> {
  const res = await scrape(url);
  expect(res.status).toBe(200);
  return parseExposition(res.text);
}

/** Scrapes until `done` holds (requests are counted once their response has been sent in full). */
export const scrapeUntil = (url: string, done: (families: Map<string, Family>) => boolean) =>
  eventually(() => metricsOf(url), done, 15_000);

export const http = (method: string, route: string, statusClass: string) => ({
  method,
  route,
  status_class: statusClass,
});
