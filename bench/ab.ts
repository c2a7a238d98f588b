/**
 * Two production builds side by side, the way each change in docs/performance.md was judged: both
 * served from one scratch PostgreSQL database and Redis, loaded in ABBA rounds per case, with the
 * server CPU each request cost (from /proc) and each server's RSS after the load.
 *
 *   npm run build && cp -r dist/server dist/ab-before     # the build before the change
 *   (make the change) && npm run build
 *   node --import tsx bench/ab.ts dist/ab-before dist/server
 *
 * A build directory must sit two folders below the repository's root, as dist/server does (the
 * build finds the migrations and the dashboard by a relative path). Settings: BENCH_CASES (get,
 * graphql, list, post; default get,list,post), BENCH_ROUNDS (4: A B B A A B B A), BENCH_DURATION
 * (8 s), BENCH_WARMUP (3 s), BENCH_CONNECTIONS (10), BENCH_KEYS (300). Prints only; nothing is written.
 *
 * Compare a build with itself first (`bench/ab.ts dist/server dist/server`): on the 2-core machine
 * such an A/A run read 13 % faster on the second server and 3 % slower on creates, which is the
 * size of difference one run cannot tell from a change.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import autocannon from "autocannon";
import { createFixture, KIND_LABEL, type Kind, requestOf } from "./load.ts";
import { cpuDelta, cpuTimes, memory, processTree } from "./proc.ts";
import { createScratch } from "./scratch.ts";
import {
  freePort,
  kontorSettings,
  num,
  ROOT,
  type ServerChild,
  startServerChild,
  stopServerChild,
} from "./support.ts";

const dirs = process.argv.slice(2);
if (dirs.length !== 2) throw new Error("usage: bench/ab.ts <build dir A> <build dir B>");
const mains = dirs.map((dir) => join(resolve(ROOT, dir), "main.js"));
for (const main of mains) if (!existsSync(main)) throw new Error(`${main}: no build there.`);

const KINDS = (process.env.BENCH_CASES ?? "get,list,post").split(",").filter(Boolean) as Kind[];
for (const kind of KINDS) if (!(kind in KIND_LABEL)) throw new Error(`BENCH_CASES: unknown case '${kind}'.`);
const ROUNDS = num("BENCH_ROUNDS", 4);
const DURATION = num("BENCH_DURATION", 8);
const WARMUP = num("BENCH_WARMUP", 3);
const CONNECTIONS = num("BENCH_CONNECTIONS", 10);

const cannon = (url: string, request: autocannon.Request, seconds: number) =>
  autocannon({ url, connections: CONNECTIONS, duration: seconds, requests: [request] });

const scratch = await createScratch(num("BENCH_KEYS", 300));
const servers: ServerChild[] = [];
const settings = { ...scratch.env, ...kontorSettings(randomBytes(32).toString("base64url")) };
try {
  for (const [i, main] of mains.entries())
    servers.push(
      await startServerChild(`${"AB"[i]}`, settings, await freePort(), {
        script: main,
        profile: false,
      }),
    );
  const fx = await createFixture(servers[0]!.url, scratch.keys);
  for (const kind of KINDS) {
    const rps: number[][] = [[], []];
    const cpu: number[][] = [[], []];
    for (const server of servers) await cannon(server.url, requestOf(kind, fx), WARMUP);
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of round % 2 ? [1, 0] : [0, 1]) {
        const server = servers[which]!;
        const tree = processTree(server.process.pid!);
        const before = cpuTimes(tree);
        const result = await cannon(server.url, requestOf(kind, fx), DURATION);
        if (result.non2xx || result.errors)
          throw new Error(`${kind} on ${"AB"[which]}: ${result.non2xx} non-2xx, ${result.errors} errors`);
        rps[which]!.push(result.requests.average);
        cpu[which]!.push((cpuDelta(before, cpuTimes(tree)) * 1000) / result.requests.total);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const line = (which: number) =>
      `${"AB"[which]} ${mean(rps[which]!).toFixed(0).padStart(5)} req/s (${rps[which]!.map((r) => r.toFixed(0)).join(" ")}), ${mean(cpu[which]!).toFixed(0)} µs CPU a request`;
    console.log(
      `${KIND_LABEL[kind]}\n  ${line(0)}\n  ${line(1)}\n  B ÷ A ${((mean(rps[1]!) / mean(rps[0]!)) * 100).toFixed(1)} %`,
    );
  }
  for (const [i, server] of servers.entries())
    console.log(`RSS ${"AB"[i]} after the load: ${memory(server.process.pid!)?.rssMb.toFixed(0)} MB`);
} finally {
  for (const server of servers) await stopServerChild(server);
  await scratch.drop();
}
