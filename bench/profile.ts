import { existsSync, readdirSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, join, resolve, sep } from "node:path";
import { ROOT } from "./support.ts";

/**
 * Where a server's CPU goes: a V8 CPU profile (`node --cpu-prof`) cut to a time window and its
 * self time summed by part of the stack (a package, Node's HTTP layer, the GC, Kontor's own code).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber?: number;
  columnNumber?: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Parts of the stack, in the order the report lists them. */
export const PARTS = [
  "Kontor's code (server/, schema/)",
  "a peer's handler (bench/)",
  "Prisma client (query compiler, interpreter, mapping)",
  "GraphQL execution (graphql-js, @graphql-tools/executor)",
  "Pothos (scope-auth, resolvers)",
  "Yoga + envelop + armor",
  "Fetch API layer (@whatwg-node)",
  "Sofa",
  "ioredis + rate-limiter-flexible",
  "pg driver",
  "Fastify (router, hooks, reply)",
  "Node HTTP (parser, server, response)",
  "Node net, streams, buffers",
  "Node async context (AsyncLocalStorage)",
  "Node, other",
  "native: system calls, JSON, V8 builtins",
  "garbage collector",
  "V8 (compiler, runtime: no JS frame)",
  "other packages",
] as const;
export type Part = (typeof PARTS)[number];
/** The libraries of Kontor's stack that neither peer has (both have pg, the Fastify peer Prisma too). */
export const LIBRARIES: Part[] = [
  "Prisma client (query compiler, interpreter, mapping)",
  "GraphQL execution (graphql-js, @graphql-tools/executor)",
  "Pothos (scope-auth, resolvers)",
  "Yoga + envelop + armor",
  "Fetch API layer (@whatwg-node)",
  "Sofa",
  "ioredis + rate-limiter-flexible",
];
/** Node and native code. */
export const NODE: Part[] = [
  "Node HTTP (parser, server, response)",
  "Node net, streams, buffers",
  "Node async context (AsyncLocalStorage)",
  "Node, other",
  "native: system calls, JSON, V8 builtins",
];

const FAMILIES: [RegExp, Part][] = [
  [/^(@prisma\/|prisma$|\.prisma$)/, "Prisma client (query compiler, interpreter, mapping)"],
  [
    /^(pg|pg-protocol|pg-pool|pg-types|pg-int8|pg-connection-string|pgpass|postgres-.*|split2|packet-reader)$/,
    "pg driver",
  ],
  [
    /^(graphql|@graphql-tools\/executor|@graphql-tools\/utils)$/,
    "GraphQL execution (graphql-js, @graphql-tools/executor)",
  ],
  [/^@pothos\//, "Pothos (scope-auth, resolvers)"],
  [
    /^(graphql-yoga|@graphql-yoga\/.*|@envelop\/.*|@escape\.tech\/.*|@graphql-tools\/.*|dset|lru-cache)$/,
    "Yoga + envelop + armor",
  ],
  [/^(@whatwg-node\/.*|urlpattern-polyfill|@fastify\/busboy)$/, "Fetch API layer (@whatwg-node)"],
  [
    /^(fastify|@fastify\/.*|find-my-way|avvio|light-my-request|fast-json-stringify|fast-querystring|fast-decode-uri-component|secure-json-parse|toad-cache|process-warning|abstract-logging|rfdc|ret|safe-regex2|json-schema-ref-resolver)$/,
    "Fastify (router, hooks, reply)",
  ],
  [/^sofa-api$/, "Sofa"],
  [
    /^(ioredis|rate-limiter-flexible|@ioredis\/.*|redis-errors|redis-parser|cluster-key-slot|denque|standard-as-callback)$/,
    "ioredis + rate-limiter-flexible",
  ],
];

/** The package a file belongs to: the last `node_modules/<name>` (or `@scope/name`) of its path. */
function packageOf(url: string): string | undefined {
  const at = url.lastIndexOf("/node_modules/");
  if (at < 0) return undefined;
  const [first, second] = url.slice(at + "/node_modules/".length).split("/");
  return first?.startsWith("@") ? `${first}/${second}` : first;
}

const GENERATED = `${ROOT}schema${sep}generated${sep}`;
const BUILD = `${ROOT}dist${sep}server${sep}`;
const sourceMaps = new Map<string, SourceMap | undefined>();

/**
 * The source file a frame of the production build (dist/server/) was compiled from, by the build's
 * source map: the bundle mixes Kontor's code with the generated Prisma client.
 */
function sourceOf(path: string, frame: CallFrame): string {
  if (!path.startsWith(BUILD) || frame.lineNumber === undefined) return path;
  if (!sourceMaps.has(path)) {
    const file = `${path}.map`;
    sourceMaps.set(
      path,
      existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, "utf8"))) : undefined,
    );
  }
  const entry = sourceMaps.get(path)?.findEntry(frame.lineNumber, frame.columnNumber ?? 0);
  return entry && "originalSource" in entry ? resolve(dirname(path), entry.originalSource) : path;
}
const BENCH = `${ROOT}bench${sep}`;

export function partOf(frame: CallFrame): Part | "idle" {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === "(idle)" || functionName === "(root)") return "idle";
    if (functionName === "(garbage collector)") return "garbage collector";
    if (functionName === "(program)") return "V8 (compiler, runtime: no JS frame)";
    return "native: system calls, JSON, V8 builtins";
  }
  const path = sourceOf(
    url.startsWith("file://") ? decodeURIComponent(url.slice("file://".length)) : url,
    frame,
  );
  const pkg = packageOf(path);
  if (pkg) return FAMILIES.find(([pattern]) => pattern.test(pkg))?.[1] ?? "other packages";
  // The Prisma client is generated into the repository; it is Prisma's code, not Kontor's.
  if (path.startsWith(GENERATED)) return "Prisma client (query compiler, interpreter, mapping)";
  if (path.startsWith(BENCH)) return "a peer's handler (bench/)";
  if (path.startsWith(ROOT)) return "Kontor's code (server/, schema/)";
  if (/^node:(_http_|http$|internal\/http)/.test(path)) return "Node HTTP (parser, server, response)";
  if (
    /^node:(net$|stream|buffer|internal\/(streams|stream_base_commons|buffer|net|js_stream_socket|webstreams))/.test(
      path,
    )
  )
    return "Node net, streams, buffers";
  if (/^node:(async_hooks|internal\/(async_hooks|async_local_storage))/.test(path))
    return "Node async context (AsyncLocalStorage)";
  if (path.startsWith("node:")) return "Node, other";
  return "other packages";
}

export interface Window {
  /** Monotonic microseconds (process.hrtime of any process on this machine, as V8's profile clock). */
  fromUs: number;
  toUs: number;
}

export const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/** CPU microseconds by part within the window (idle excluded), and their total. */
export function cpuByPart(profile: CpuProfile, window: Window): { total: number; parts: Map<Part, number> } {
  const partOfNode = new Map<number, Part | "idle">();
  for (const node of profile.nodes) partOfNode.set(node.id, partOf(node.callFrame));
  const parts = new Map<Part, number>();
  let total = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i]!;
    // A sample stands for the time until the next one.
    const until = i + 1 < profile.samples.length ? at + profile.timeDeltas[i + 1]! : profile.endTime;
    if (at < window.fromUs || at >= window.toUs) continue;
    const part = partOfNode.get(profile.samples[i]!);
    if (!part || part === "idle") continue;
    const us = Math.max(0, until - at);
    parts.set(part, (parts.get(part) ?? 0) + us);
    total += us;
  }
  return { total, parts };
}

/** The profiles written into `dir` by a process that has exited (one `--cpu-prof-dir` per server). */
export function readProfiles(dir: string): CpuProfile[] {
  const profiles = readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as CpuProfile);
  if (!profiles.length) throw new Error(`no CPU profile was written to ${dir}`);
  return profiles;
}

/**
 * The main thread's CPU by part in the window: each thread writes a profile (tsx's loader thread
 * too, idle while serving), so the one busiest in the window is the server's.
 */
export function mainThreadByPart(
  profiles: CpuProfile[],
  window: Window,
): { total: number; parts: Map<Part, number> } {
  const covering = profiles.filter((p) => window.fromUs >= p.startTime && window.toUs <= p.endTime);
  if (!covering.length)
    throw new Error("no CPU profile covers the load's window (V8's clock and this process's differ?)");
  return covering.map((p) => cpuByPart(p, window)).reduce((a, b) => (b.total > a.total ? b : a));
}
